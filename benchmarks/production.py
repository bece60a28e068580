"""Throughput of ``dataset build`` and of the ``score --follow`` worker, against plain
``score`` on the same stored traces.

    python benchmarks/production.py [--traces 10000] [--workers 2] [--json]

Fills a fresh SQLite store with ``--traces`` traces (the 100 tau-bench conversations, each
copy with its own trace id, as production repeats the same questions), then times, each once:

- ``score``: what ``tracegrade score --db`` does without a dataset (load every stored trace,
  normalise, run the reference-free scorers): the reference;
- ``dataset build``: ``tracegrade dataset build --db`` over the same traces (grouping,
  derivation, near-duplicate collapse, redaction, writing and re-loading the YAML);
- ``follow``: ``--workers`` followers (each its own connection, as separate processes would
  have) offering, claiming, scoring and completing every settled trace until all are scored
  exactly once.

Each is reported in traces/s and as a ratio to ``score`` (above 1: faster than ``score``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.tau_bench.convert import trace_request  # noqa: E402
from tracegrade.cli import cli  # noqa: E402
from tracegrade.config import load_config  # noqa: E402
from tracegrade.pipeline.follow import Follower  # noqa: E402
from tracegrade.pipeline.reading import from_store  # noqa: E402
from tracegrade.scoring import build_scorers, evaluate  # noqa: E402
from tracegrade.store import follow as shared  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def fill(db: str, traces: int) -> int:
    """Store ``traces`` copies of the tau-bench conversations; returns spans stored."""
    records = json.loads(TAU.read_text(encoding="utf-8"))
    spans = 0
    with Store(db) as store:
        batch = []
        for i in range(traces):
            record = {**records[i % len(records)], "copy": i}
            batch.append(trace_request(record))
            if len(batch) == 200 or i == traces - 1:
                spans += store.write(batch)[0]
                batch = []
    return spans


def time_score(db: str) -> float:
    """Seconds for reference-free scoring of the whole store (``score --db``)."""
    config = load_config(None)
    scorers = build_scorers(config)
    start = time.perf_counter()
    with Store(db) as store:
        traces = from_store(store).traces
    evaluate(traces, None, scorers, config)
    return time.perf_counter() - start


def time_build(db: str, out: Path) -> float:
    """Seconds for ``tracegrade dataset build --db DB --out OUT``."""
    start = time.perf_counter()
    result = CliRunner().invoke(cli, ["dataset", "build", "--db", db, "--out", str(out), "--force"])
    if result.exit_code != 0:
        raise SystemExit(f"dataset build failed: {result.output}")
    return time.perf_counter() - start


def time_follow(db: str, traces: int, workers: int) -> tuple[float, dict[str, int]]:
    """Seconds until ``workers`` followers scored every trace; the per-trace result counts."""
    config = load_config(None)
    done = threading.Event()

    def work(name: str) -> None:
        follower = Follower(
            db, None, build_scorers(config), config, quiet_s=0.0, since=0.0, worker=name
        )
        with Store(db) as store:
            while not done.is_set():
                if not follower.poll(store):
                    done.wait(0.01)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(workers)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    with Store(db) as store:
        while store.db.execute("SELECT COUNT(*) FROM follow_results").fetchone()[0] < traces:
            time.sleep(0.2)
        elapsed = time.perf_counter() - start
        done.set()
        counts = shared.result_counts(store.db)
    for thread in threads:
        thread.join()
    return elapsed, counts


def run(traces: int = 10_000, workers: int = 2) -> dict[str, Any]:
    """Every measurement (see the module docstring)."""
    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "bench.db")
        spans = fill(db, traces)
        score_s = time_score(db)
        build_s = time_build(db, Path(tmp) / "built.yaml")
        follow_s, counts = time_follow(db, traces, workers)
    rows = {"score": score_s, "dataset build": build_s, f"follow ({workers} workers)": follow_s}
    return {
        "traces": traces,
        "spans": spans,
        "scored_exactly_once": len(counts) == traces and set(counts.values()) == {1},
        "stages": [
            {
                "stage": stage,
                "seconds": round(seconds, 3),
                "traces_per_s": round(traces / seconds, 1),
                "ratio_to_score": round(score_s / seconds, 3),
            }
            for stage, seconds in rows.items()
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=10_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.traces, args.workers), args.json, _table)


def _table(result: dict[str, Any]) -> None:
    print(
        f"{result['traces']} traces ({result['spans']} spans); every trace scored exactly once "
        f"by the followers: {result['scored_exactly_once']}"
    )
    for row in result["stages"]:
        print(
            f"{row['stage']:<22} {row['seconds']:>8.2f} s  {row['traces_per_s']:>9.1f} traces/s"
            f"  x{row['ratio_to_score']:.2f} of score"
        )


if __name__ == "__main__":
    sys.exit(main())
