"""What a stored trace costs on disk, per table, and per day at a given rate.

    python benchmarks/storage.py [--traces 1000] [--rate 1000000] [--db postgresql://...] [--json]

The 100 tau-bench conversations (converted to OTLP/JSON lines: GenAI spans, each LLM call
carrying the replayed history, as the README's main job makes them) are repeated with fresh
trace ids up to ``--traces``, imported into a fresh store (SQLite, or with ``--db`` an admin
URL, a new PostgreSQL database), and scored once by a follower (its results stored, as
``score --follow`` does). Then each table's size on disk with its indexes (SQLite: ``dbstat``
pages; PostgreSQL, after a ``VACUUM`` as autovacuum runs: ``pg_total_relation_size`` over
every partition, TOAST included) is
divided by the number of traces, and multiplied by ``--rate`` traces a day. The OTLP/JSON
file's size per trace is given for scale.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.follow import _admin, _name, _with_database  # noqa: E402
from benchmarks.score_scale import make_file  # noqa: E402
from benchmarks.tau_bench.convert import convert  # noqa: E402
from tracegrade.config import load_config  # noqa: E402
from tracegrade.otlp.files import read_paths  # noqa: E402
from tracegrade.pipeline.follow import Follower  # noqa: E402
from tracegrade.scoring import build_scorers  # noqa: E402
from tracegrade.store import follow as shared  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
TABLES = (
    "span_chunks",
    "log_records",
    "traces",
    "resources",
    "scopes",
    "score_queue",
    "follow_results",
    "score_windows",
)


def table_bytes(store: Store) -> dict[str, int]:
    """Bytes on disk of each table of :data:`TABLES`, its indexes (and partitions) included."""
    if store.db.postgres:
        store.db.execute("VACUUM")  # what autovacuum does: dead rows of the queue are reused
        sql = (
            "SELECT COALESCE((SELECT SUM(pg_total_relation_size(relid))"
            " FROM pg_partition_tree(?::regclass)), pg_total_relation_size(?::regclass))"
        )
        return {t: int(store.db.execute(sql, (t, t)).fetchone()[0]) for t in TABLES}
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
    rows = store.db.execute(
        "SELECT m.tbl_name, SUM(d.pgsize) FROM dbstat d JOIN sqlite_master m ON m.name = d.name"
        " GROUP BY m.tbl_name"
    ).fetchall()
    sizes = dict(rows)
    return {t: int(sizes.get(t, 0)) for t in TABLES}


def fill(db: str, path: Path) -> None:
    """Import ``path`` and its log records, then score every trace once."""
    payloads = read_paths([path])
    with Store(db) as store:
        for start in range(0, len(payloads.traces), 200):
            store.write(payloads.traces[start : start + 200])
        for start in range(0, len(payloads.logs), 200):
            store.write([], payloads.logs[start : start + 200])
        config = load_config(None)
        follower = Follower(db, None, build_scorers(config), config, quiet_s=0.0, batch=200)
        while follower.poll(store) or shared.pending(store.db):
            pass


def run(traces: int = 1000, rate: int = 1_000_000, db: str | None = None) -> dict[str, Any]:
    """Every measurement (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-storage-") as tmp:
        work = Path(tmp)
        convert(TAU, work)
        lines = (work / "traces.jsonl").read_text().splitlines()
        path = make_file(lines, traces, work / "bench.jsonl")
        file_bytes = path.stat().st_size
        location = str(work / "store.db") if db is None else _database(db)
        try:
            fill(location, path)
            with Store(location) as store:
                sizes = table_bytes(store)
                counts = store.counts()
        finally:
            if db is not None:
                _admin(db, f'DROP DATABASE IF EXISTS "{_name(location)}" WITH (FORCE)')
    per_trace = {t: round(size / traces) for t, size in sizes.items()}
    total = sum(sizes.values()) / traces
    return {
        "store": "postgresql" if db else "sqlite",
        "traces": traces,
        "spans_per_trace": round(counts["spans"] / traces, 1),
        "log_records_per_trace": round(counts["log_records"] / traces, 1),
        "otlp_json_bytes_per_trace": round(file_bytes / traces),
        "bytes_per_trace": per_trace,
        "total_bytes_per_trace": round(total),
        "rate_per_day": rate,
        "gb_per_day": round(total * rate / 1e9, 2),
    }


def _database(admin_url: str) -> str:
    name = f"tg_storage_{uuid.uuid4().hex[:8]}"
    _admin(admin_url, f'CREATE DATABASE "{name}"')
    return _with_database(admin_url, name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=1_000_000, help="traces a day")
    parser.add_argument("--db", help="a PostgreSQL admin URL (may CREATE DATABASE); default SQLite")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.traces, args.rate, args.db), args.json, _table)


def _table(result: dict[str, Any]) -> None:
    print(
        f"{result['traces']} tau-bench traces in {result['store']} ({result['spans_per_trace']}"
        f" spans, {result['log_records_per_trace']} log records a trace; OTLP/JSON"
        f" {result['otlp_json_bytes_per_trace']:,} bytes a trace)"
    )
    for table, size in result["bytes_per_trace"].items():
        print(f"  {table:<16}{size:>10,} bytes a trace")
    print(
        f"  {'total':<16}{result['total_bytes_per_trace']:>10,} bytes a trace: "
        f"{result['gb_per_day']} GB a day at {result['rate_per_day']:,} traces a day"
    )


if __name__ == "__main__":
    sys.exit(main())
