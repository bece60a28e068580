"""The summary from running aggregates (report.running) is the summary of the whole list:
value for value, key for key, for any results; only latency percentiles past the sample size
are estimates, and the summary says so."""

from __future__ import annotations

import dataclasses
import statistics

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.report.breakdown import summary_additions
from tracegrade.report.document import case_dict
from tracegrade.report.running import Reservoir, RunningMean, RunningSum, RunningSummary
from tracegrade.scoring.evaluate import CaseResult, summarize
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
def test_the_running_summary_is_the_summary_of_the_list(chosen, threshold, leftover):
    running = RunningSummary(threshold)
    for result in chosen:
        running.add(result)
    expected = {
        **dataclasses.asdict(summarize(chosen, threshold, leftover)),
        **summary_additions([case_dict(r) for r in chosen]),
    }
    got = running.summary(leftover)
    assert got == expected
    assert list(got) == list(expected)  # the document's key order too
    assert repr(got) == repr(expected)  # 0 and 0.0, -0.0 and 0.0 alike


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
    summary = running.summary(0)
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
