"""Smoke run of ``benchmarks/score_baseline.py`` (figures measured by hand, not asserted: CI
only checks that it runs and reports every figure)."""

from __future__ import annotations

from benchmarks import score_baseline


def test_score_baseline_reports_peak_memory_with_and_without_a_baseline():
    rows = score_baseline.run(score_baseline.Options(traces=(20,), changed=2, repeat=1))
    assert [r["traces"] for r in rows] == [20]
    assert rows[0]["plain_peak_mb"][0] > 0
    for workers in ("w1", "w2"):
        figures = rows[0][workers]
        assert figures["gated_peak_mb"][0] > 0 and figures["x_plain"][0] > 0
