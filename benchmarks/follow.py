"""Throughput of ``tracegrade score --follow`` and of ``tracegrade backfill`` against
``tracegrade score FILE`` on the same traces, in the same run.

    python benchmarks/follow.py [--traces 2000] [--workers 1 2 3] [--repeat 3] [--db URL]
                                [--no-backfill] [--json]

The 100 tau-bench conversations (converted to OTLP/JSON lines) are repeated with fresh trace
ids up to ``--traces`` and written to a file, then:

- the file is imported into a store once (``tracegrade import``, not timed): a SQLite file, or
  with ``--db`` (an admin URL) a PostgreSQL database; every trace is then queued for scoring;
- for each ``--workers`` N, ``--repeat`` times, a pair of runs back to back (so both see the
  same load on a shared machine): ``score FILE``, ``tracegrade score FILE --no-save`` in a
  child process, wall seconds from its start to its exit (the baseline: one process, the
  reference-free scorers); then ``follow N``, a copy of the store (a file copy; ``CREATE
  DATABASE ... TEMPLATE`` on PostgreSQL) and ``tracegrade score --follow --db COPY --quiet-s
  0 --workers N`` in a child process, wall seconds from its start until every trace has a
  stored result (counted in the store), then stopped with SIGTERM;
- then (unless ``--no-backfill``), ``repeat`` times, a pair ``score FILE`` and ``backfill``: a
  fresh copy of the store whose queue is emptied (every trace already followed by an earlier
  evaluator) and ``tracegrade backfill --db COPY --since 30d --max-rate 0`` in a child
  process (one worker, no rate bound), wall seconds from its start to its exit (it exits when
  the backlog is done), every trace then checked to have exactly one result.

Each row (``follow``, and ``backfill``) gives the median traces/s, the median of its own
``score FILE`` runs (``score_file_traces_per_s``), ``ratio_to_score``: the median over its
pairs of the run's traces/s over its ``score FILE`` run's (1.0: as fast), their range, and
whether every trace was scored exactly once. ``score_file`` is the median over every pair.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.score_scale import make_file  # noqa: E402
from benchmarks.tau_bench.convert import convert  # noqa: E402
from tracegrade.store import follow as shared  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
TIMEOUT_S = 1800.0


def _tracegrade() -> list[str]:
    script = Path(sys.executable).with_name("tracegrade")
    return [str(script)] if script.exists() else [sys.executable, "-m", "tracegrade"]


def time_score(path: Path) -> float:
    """Wall seconds of ``tracegrade score FILE --no-save`` (exit 0 or 1: a verdict)."""
    started = time.perf_counter()
    ran = subprocess.run(
        [*_tracegrade(), "score", str(path), "--no-save"], capture_output=True, text=True
    )
    if ran.returncode not in (0, 1):
        raise SystemExit(f"score failed: {ran.stderr[-2000:]}")
    return time.perf_counter() - started


def time_follow(db: str, traces: int, workers: int) -> tuple[float, bool]:
    """Wall seconds until ``score --follow --workers N`` stored a result for all ``traces``;
    whether each was scored exactly once."""
    command = [*_tracegrade(), "score", "--follow", "--db", db, "--quiet-s", "0"]
    started = time.perf_counter()
    process = subprocess.Popen(
        [*command, "--workers", str(workers)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    try:
        with Store(db) as store:
            while _results(store) < traces:
                if process.poll() is not None or time.perf_counter() - started > TIMEOUT_S:
                    raise SystemExit(f"follow stopped: {process.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
                time.sleep(0.02)
            elapsed = time.perf_counter() - started
            once = set(shared.result_counts(store.db).values()) == {1}
            once = once and shared.pending(store.db) == 0
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=120)
    return elapsed, once


def time_backfill(db: str, traces: int) -> tuple[float, bool]:
    """Wall seconds of ``tracegrade backfill --max-rate 0`` over a store whose queue was
    emptied (its traces followed by an earlier evaluator); whether each trace got exactly one
    result."""
    with Store(db) as store, store.db:
        store.db.execute("DELETE FROM score_queue")
    started = time.perf_counter()
    ran = subprocess.run(
        [*_tracegrade(), "backfill", "--db", db, "--since", "30d", "--max-rate", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if ran.returncode not in (0, 1):
        raise SystemExit(f"backfill failed: {ran.stderr[-2000:]}")
    with Store(db) as store:
        counts = shared.result_counts(store.db)
    return elapsed, len(counts) == traces and set(counts.values()) == {1}


def _results(store: Store) -> int:
    return int(store.db.execute("SELECT COUNT(*) FROM follow_results").fetchone()[0])


@contextmanager
def copies(template: str, admin_url: str | None, work: Path) -> Iterator[Any]:
    """A function making a fresh copy of the imported store (a file, or a database created
    from it as a template) for each measurement; the PostgreSQL databases are dropped after."""
    made: list[str] = []

    def copy(name: str) -> str:
        if admin_url is None:
            target = work / f"{name}.db"
            shutil.copyfile(template, target)
            return str(target)
        database = f"tg_bench_{name}_{uuid.uuid4().hex[:8]}"
        _admin(admin_url, f'CREATE DATABASE "{database}" TEMPLATE "{_name(template)}"')
        made.append(database)
        return _with_database(admin_url, database)

    try:
        yield copy
    finally:
        for database in made:
            _admin(admin_url or "", f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')


def _admin(url: str, statement: str) -> None:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(statement)


def _name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def _with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def _import(path: Path, admin_url: str | None, work: Path) -> str:
    """Import the file into a new store; returns its location."""
    if admin_url is None:
        db = str(work / "template.db")
    else:
        database = f"tg_bench_template_{uuid.uuid4().hex[:8]}"
        _admin(admin_url, f'CREATE DATABASE "{database}"')
        db = _with_database(admin_url, database)
    ran = subprocess.run(
        [*_tracegrade(), "import", str(path), "--db", db], capture_output=True, text=True
    )
    if ran.returncode != 0:
        raise SystemExit(f"import failed: {ran.stderr[-2000:]}")
    return db


def run(
    traces: int = 2000,
    workers: list[int] | None = None,
    db: str | None = None,
    repeat: int = 1,
    backfill: bool = True,
) -> dict[str, Any]:
    """Every measurement (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-follow-") as tmp:
        work = Path(tmp)
        convert(TAU, work)
        lines = (work / "traces.jsonl").read_text().splitlines()
        path = make_file(lines, traces, work / "bench.jsonl")
        template = _import(path, db, work)
        try:
            pairs = _pairs(path, template, db, work, traces, workers or [1, 2, 3], repeat)
            backfills = (
                _backfill_pairs(path, template, db, work, traces, repeat) if backfill else []
            )
        finally:
            if db is not None:
                _admin(db, f'DROP DATABASE IF EXISTS "{_name(template)}" WITH (FORCE)')
    every = [pair for runs in [*pairs.values(), backfills] for pair in runs]
    score_s = statistics.median(s for s, _, _ in every)
    return {
        "traces": traces,
        "store": "postgresql" if db else "sqlite",
        "cpus": os.cpu_count(),
        "repeat": repeat,
        "score_file": {"seconds": round(score_s, 3), "traces_per_s": round(traces / score_s, 1)},
        "follow": [_row(count, runs, traces) for count, runs in pairs.items()],
        "backfill": _row(1, backfills, traces) if backfills else None,
    }


def _pairs(
    path: Path,
    template: str,
    db: str | None,
    work: Path,
    traces: int,
    workers: list[int],
    repeat: int,
) -> dict[int, list[tuple[float, float, bool]]]:
    """Per worker count, ``repeat`` (score FILE s, follow s, exactly once): each follow run
    right after a ``score FILE`` run of its own, so a pair shares the machine's load."""
    pairs: dict[int, list[tuple[float, float, bool]]] = {count: [] for count in workers}
    with copies(template, db, work) as copy:
        for rep in range(repeat):
            for count in workers:
                score_s = time_score(path)
                seconds, once = time_follow(copy(f"w{count}r{rep}"), traces, count)
                pairs[count].append((score_s, seconds, once))
    return pairs


def _backfill_pairs(
    path: Path, template: str, db: str | None, work: Path, traces: int, repeat: int
) -> list[tuple[float, float, bool]]:
    """``repeat`` (score FILE s, backfill s, exactly once), each pair back to back."""
    pairs = []
    with copies(template, db, work) as copy:
        for rep in range(repeat):
            score_s = time_score(path)
            seconds, once = time_backfill(copy(f"backfill{rep}"), traces)
            pairs.append((score_s, seconds, once))
    return pairs


def _row(count: int, runs: list[tuple[float, float, bool]], traces: int) -> dict[str, Any]:
    ratios = [score_s / seconds for score_s, seconds, _ in runs]
    seconds = statistics.median(s for _, s, _ in runs)
    score_s = statistics.median(s for s, _, _ in runs)
    return {
        "workers": count,
        "seconds": round(seconds, 3),
        "traces_per_s": round(traces / seconds, 1),
        "score_file_traces_per_s": round(traces / score_s, 1),
        "ratio_to_score": round(statistics.median(ratios), 3),
        "ratio_range": [round(min(ratios), 3), round(max(ratios), 3)],
        "scored_exactly_once": all(once for _, _, once in runs),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=2000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--db", help="a PostgreSQL admin URL (may CREATE DATABASE); default SQLite")
    parser.add_argument("--repeat", type=int, default=1, help="pairs per worker count (median)")
    parser.add_argument("--no-backfill", action="store_true", help="time score --follow only")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    result = run(args.traces, args.workers, args.db, args.repeat, not args.no_backfill)
    return report(result, args.json, _table)


def _table(result: dict[str, Any]) -> None:
    score = result["score_file"]
    print(
        f"{result['traces']} tau-bench traces, {result['store']} store, {result['cpus']} CPUs; "
        f"score FILE: {score['seconds']:.2f} s, {score['traces_per_s']:.1f} traces/s"
    )
    for row in result["follow"]:
        low, high = row["ratio_range"]
        print(
            f"follow --workers {row['workers']}: {row['seconds']:>7.2f} s"
            f" {row['traces_per_s']:>8.1f} traces/s  x{row['ratio_to_score']:.2f} of score FILE"
            f" ({low:.2f}-{high:.2f}; its runs {row['score_file_traces_per_s']:.1f} traces/s)"
            f"  exactly once: {row['scored_exactly_once']}"
        )
    if row := result.get("backfill"):
        low, high = row["ratio_range"]
        print(
            f"backfill (1 worker): {row['seconds']:>7.2f} s {row['traces_per_s']:>8.1f} traces/s"
            f"  x{row['ratio_to_score']:.2f} of score FILE ({low:.2f}-{high:.2f}; its runs"
            f" {row['score_file_traces_per_s']:.1f} traces/s)"
            f"  exactly once: {row['scored_exactly_once']}"
        )


if __name__ == "__main__":
    sys.exit(main())
