"""Smoke runs of the issue 16 benchmarks (figures measured by hand, not asserted: CI only
checks that each benchmark runs and reports every figure)."""

from __future__ import annotations

from benchmarks import command_overhead, score_scale


def test_score_scale_reports_throughput_and_peak_memory_per_size():
    rows = score_scale.run([20, 40])
    assert [r["traces"] for r in rows] == [20, 40]
    assert all(r["traces_per_s"] > 0 and r["peak_rss_mb"] > 0 and r["x_baseline"] for r in rows)


def test_command_overhead_reports_both_settling_modes():
    figures = command_overhead.run(cases=2)
    assert set(figures) == {"exit signal", "quiet period"}
    for mode in figures.values():
        assert mode["agent_ms"]["p50"] > 0 and mode["overhead_ms"] >= 0
