"""The summary from running aggregates (report.running) is the summary of the whole list:
value for value, key for key, for any results; only latency percentiles past the sample size
are estimates, and the summary says so."""

from __future__ import annotations

import dataclasses
import math
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.scoring.evaluation import summarize
from tracegrade.scoring.results import CaseResult
from tracegrade.scoring.summary import Reservoir, RunningMean, RunningSum, RunningSummary
from tracegrade.scoring.usage import Usage

numbers = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False), st.integers(-(10**20), 10**20), st.booleans()
)
unit = st.floats(0, 1)
durations = st.floats(0, 1e5, allow_nan=False)
usages = st.builds(
    Usage,
    duration_ms=st.none() | durations,
    input_tokens=st.none() | st.integers(0, 10**6),
    output_tokens=st.none() | st.integers(0, 10**6),
    cost_usd=st.none() | st.floats(0, 10),
    llm_calls=st.integers(0, 3),
    tool_calls=st.integers(0, 3),
    llm_durations_ms=st.tuples(durations, durations) | st.just(()),
    tool_durations_ms=st.lists(durations, max_size=3).map(tuple),
)
judge_details = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["gpt-4o", "claude"]),
        "error": st.none() | st.just("timeout"),
        "usage": st.none()
        | st.fixed_dictionaries(
            {"calls": st.integers(0, 3), "cached": st.integers(0, 1)},
            optional={"input_tokens": st.integers(0, 99), "cost_usd": st.none() | unit},
        ),
    }
)
names = st.sampled_from(["correctness", "hallucination", "value_grounding", "tools"])
results = st.builds(
    CaseResult,
    case_id=st.none() | st.sampled_from(["a", "b"]),
    trace_id=st.none() | st.text("0123456789abcdef", min_size=4, max_size=4),
    passed=st.booleans(),
    score=st.none() | unit,
    scores=st.dictionaries(names, st.none() | unit),
    reasons=st.just(()),
    excluded=st.dictionaries(names, st.just("not recorded")),
    axes=st.dictionaries(names, unit),
    details=st.dictionaries(
        st.just("judge"), st.fixed_dictionaries({"value": unit, "details": judge_details})
    ),
    usage=st.none() | usages,
    weight=st.sampled_from([1.0, 2, 0.5, 0]),
    tags=st.lists(st.sampled_from(["x", "y", "z"]), max_size=3).map(tuple),
    category=st.none() | st.sampled_from(["refund", "search"]),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(numbers, max_size=30))
def test_running_sum_is_the_builtin_sum(values):
    total = RunningSum()
    for value in values:
        total.add(value)
    assert repr(total.value) == repr(sum(values))


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-999, 999), min_size=1))
def test_running_mean_is_the_mean_and_fmean(values):
    mean = RunningMean()
    for value in values:
        mean.add(value)
    assert mean.value == sum(values) / len(values)
    assert mean.fmean == statistics.fmean(values)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1e200, 1e200, allow_nan=False) | st.floats(-1e-300, 1e-300), min_size=1))
def test_fmean_is_exact_across_magnitudes(values):
    """The running exact sum (Shewchuk's partials) rounds as ``math.fsum`` does, whatever the
    magnitudes and cancellations."""
    mean = RunningMean()
    for value in [*values, 1e16, 1.0, -1e16]:
        mean.add(value)
    assert mean.fmean == statistics.fmean([*values, 1e16, 1.0, -1e16])


@settings(max_examples=80, deadline=None)
@given(st.lists(results, max_size=25), st.floats(0, 1), st.integers(0, 3))
def test_the_summary_counts_and_means_are_those_of_the_list(chosen, threshold, leftover):
    """An oracle written apart from the running aggregates: counts, pass rate, the weighted
    mean score (a failed result without a score counts 0), latency mean and total, tags."""
    got = RunningSummary(threshold)
    for result in chosen:
        got.add(result)
    summary = got.summary(leftover).model_dump()
    passed = sum(r.passed for r in chosen)
    assert summary["results"] == len(chosen) and summary["passed"] == passed
    assert summary["pass_rate"] == (passed / len(chosen) if chosen else 0.0)
    weighted = [
        (r.score if r.score is not None else 0.0, r.weight)
        for r in chosen
        if r.score is not None or not r.passed
    ]
    total = sum(w for _, w in weighted)
    expected = sum(s * w for s, w in weighted) / total if total else None
    if expected is None:
        assert summary["score"] is None
    else:
        assert summary["score"] == pytest.approx(expected)
    durations = [r.usage.duration_ms for r in chosen if r.usage and r.usage.duration_ms is not None]
    if durations:
        assert summary["latency_total_ms"] == pytest.approx(math.fsum(durations))
    else:
        assert summary["latency_total_ms"] is None
    tags = {t for r in chosen for t in r.tags}
    assert set(summary["by_tag"]) == tags
    for tag in tags:
        members = [r for r in chosen if tag in r.tags]
        assert summary["by_tag"][tag]["cases"] == len(members)
    assert summarize(chosen, threshold, leftover) == got.run_summary(leftover)


def test_a_crashed_case_counts_as_zero_in_the_mean_score():
    """Issue 24: a run whose agent crashed on 2 of 23 cases does not report 1.000."""
    usage = Usage(None, None, None, None, 0, 0)
    ok = [CaseResult(f"c{n}", f"t{n}", True, 1.0, {}, (), usage=usage) for n in range(21)]
    crashed = [
        CaseResult(f"x{n}", None, False, None, {}, ("agent crashed: boom",), usage=usage)
        for n in range(2)
    ]
    summary = summarize([*ok, *crashed], 0.7, 0)
    assert summary.score == pytest.approx(21 / 23)


def test_percentiles_past_the_sample_size_are_estimated_and_said_so():
    usage = Usage(None, None, None, None, 0, 0)
    running = RunningSummary(0.5, sample_size=100)
    for n in range(1000):
        running.add(
            CaseResult(
                None,
                f"{n}",
                True,
                1.0,
                {},
                (),
                usage=dataclasses.replace(usage, duration_ms=float(n), llm_durations_ms=(1.0,)),
            )
        )
    summary = running.summary(0).model_dump()
    assert summary["latency_sample"] == {
        "method": "uniform reservoir sample",
        "size": 100,
        "values": {"latency": 1000, "llm_latency": 1000},
    }
    assert 850 <= summary["latency_p95_ms"] <= 1000 and 350 <= summary["latency_p50_ms"] <= 650
    assert summary["latency_mean_ms"] == 499.5  # means and totals stay exact
    assert summary["latency_total_ms"] == sum(range(1000))


def test_a_reservoir_holds_at_most_its_size():
    reservoir = Reservoir(size=10)
    for n in range(10_000):
        reservoir.add(float(n))
    assert len(reservoir.values) == 10 and reservoir.seen == 10_000 and reservoir.sampled
    again = Reservoir(size=10)
    for n in range(10_000):
        again.add(float(n))
    assert again.values == reservoir.values  # seeded: the same stream, the same sample
