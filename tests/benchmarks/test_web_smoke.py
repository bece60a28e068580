"""The web benchmark script runs (a smoke test: page times are measured by hand with
``python benchmarks/web.py``, not asserted here)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.web import build, index, measure


def test_web_benchmark_builds_a_store_and_requests_every_page(tmp_path: Path) -> None:
    db = tmp_path / "web.db"
    built = build(db, runs=30, spans=500)
    assert set(built) == {"spans_s", "runs_s"}
    assert index(db)["traces_per_s"] > 0
    rows = measure(db, repeat=1)
    assert len(rows) == 21 and all(row["median_ms"] > 0 for row in rows)
    assert {"runs", "trace + chat + scores", "traces: text, none"} <= {r["page"] for r in rows}
