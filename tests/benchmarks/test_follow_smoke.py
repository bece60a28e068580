"""The follow and storage benchmark scripts run (smoke tests: the figures are measured by
hand, not asserted here); the followers score every trace exactly once."""

from __future__ import annotations

from benchmarks import follow, storage


def test_follow_benchmark_times_each_worker_count_and_backfill_against_score_file():
    result = follow.run(traces=30, workers=[1, 2])
    assert result["score_file"]["traces_per_s"] > 0
    assert [row["workers"] for row in result["follow"]] == [1, 2]
    assert all(row["scored_exactly_once"] for row in result["follow"])
    assert all(row["traces_per_s"] > 0 and row["ratio_to_score"] > 0 for row in result["follow"])
    assert all(row["score_file_traces_per_s"] > 0 for row in result["follow"])
    backfill = result["backfill"]  # one backfill worker over the same traces, each once
    assert backfill["scored_exactly_once"] and backfill["traces_per_s"] > 0
    assert backfill["ratio_to_score"] > 0 and backfill["score_file_traces_per_s"] > 0


def test_storage_benchmark_prices_each_table_per_trace_and_per_day():
    result = storage.run(traces=20, rate=1000)
    sizes = result["bytes_per_trace"]
    assert sizes["span_chunks"] > 10_000  # tau-bench traces: ~100 KB of spans each
    assert abs(result["total_bytes_per_trace"] - sum(sizes.values())) <= len(sizes)  # rounding
    assert abs(result["gb_per_day"] - result["total_bytes_per_trace"] * 1000 / 1e9) <= 0.01
