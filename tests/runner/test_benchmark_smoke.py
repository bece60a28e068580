"""The overhead benchmark runs (figures are measured by hand with the defaults, not asserted)."""

from __future__ import annotations

from benchmarks.run_overhead import run


def test_run_overhead_benchmark_measures_every_figure() -> None:
    figures = run(cases=6, concurrency=3, agent_s=0.01)
    assert figures["passed"] == 6
    assert figures["run_wall_s"] > 0 and figures["receiver_start_s"] > 0
    assert set(figures["settle_ms"]) == {"p50", "p95"} and figures["score_ms"]["p50"] > 0
