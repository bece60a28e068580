"""The benchmark script runs (a smoke test: figures are measured by hand, not asserted here)."""

from __future__ import annotations

from benchmarks.throughput import run


def test_throughput_script_runs_every_stage():
    rows = run(repeat=1, limit=3)
    stages = [r["stage"] for r in rows]
    assert stages[0] == "baseline (json.loads)" and "score (all built-in scorers)" in stages
    assert sum(s.startswith("normalize ") for s in stages) == 4
    assert all(r["spans_per_s"] and r["spans_per_s"] > 0 for r in rows)
