"""The comparison benchmark runs (a smoke test: figures are measured by hand, not asserted)."""

from __future__ import annotations

from benchmarks.compare import documents, run


def test_compare_benchmark_stores_loads_and_compares_two_runs() -> None:
    figures = run(cases=300, repeat=3, rounds=1)
    assert figures["cases"] == 300 and figures["total_s"] > 0 and figures["cpu_s"] > 0
    base, current = documents(300, 3)
    pairs = zip(base["cases"], current["cases"], strict=True)
    changed = sum(b["score"] != c["score"] for b, c in pairs)
    assert 0 < figures["regressed"] <= changed and figures["flaky"] > 0
