"""The production benchmark script runs (a smoke test: figures are measured by hand, not
asserted here), and its followers score every trace exactly once."""

from __future__ import annotations

from benchmarks.production import run


def test_production_benchmark_runs_every_stage():
    result = run(traces=40, workers=2)
    assert result["scored_exactly_once"] and result["spans"] > 40
    assert [s["stage"] for s in result["stages"]] == [
        "score",
        "dataset build",
        "follow (2 workers)",
    ]
    assert all(s["traces_per_s"] > 0 and s["ratio_to_score"] > 0 for s in result["stages"])
