"""Evaluation: matching cases to traces, running scorers, combining and summarising a run."""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from tests.support.traces import TEST_PRICES, gap, llm, make_case, make_dataset, make_trace, tool
from tracegrade.config import Pricing
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.scoring.evaluation import CASE_ID_ATTR, case_id_of, match_cases
from tracegrade.scoring.results import percentile
from tracegrade.scoring.score import Score

ORDERS = "Show me my recent orders"
STATUS = "What is the status of order 550e8400-e29b-41d4-a716-446655440001?"


def good_trace(trace_id="t-good", user_input=ORDERS, **kw):
    """Calls get_user_orders and answers with the status: every default axis scores 1."""
    kw.setdefault("tool_calls", [tool("get_user_orders", {}, result='[{"status": "shipped"}]')])
    kw.setdefault("final_output", "Your order has shipped.")
    return make_trace(trace_id=trace_id, user_inputs=[user_input], **kw)


def lazy_trace(trace_id="t-lazy", user_input=ORDERS, **kw):
    """Answers without a tool call: groundedness 0, correctness 0, completeness 1 -> 0.2."""
    return make_trace(
        trace_id=trace_id,
        user_inputs=[user_input],
        tool_calls=[],
        final_output="It has shipped.",
        **kw,
    )


def orders_case(id="orders", input=ORDERS, **kw):
    return make_case(
        id=id,
        input=input,
        expected_tools=["get_user_orders"],
        expected_fields=["status"],
        criteria={"grounded": True},
        **kw,
    )


@pytest.fixture
def scorers(config):
    return build_scorers(config, with_plugins=False)


def run(traces, dataset, scorers, config, **kw):
    return evaluate(traces, dataset, scorers, config, **kw)


def by_case(result):
    return {r.case_id: r for r in result.results}


# --- matching -------------------------------------------------------------------------------------


def test_case_matches_a_trace_by_case_id_on_the_root_span():
    trace = good_trace("t1", user_input="something else", root_attributes={CASE_ID_ATTR: "orders"})
    [(case, traces)], _ = match_cases([orders_case()], [trace])
    assert [t.trace_id for t in traces] == ["t1"]


def test_case_matches_a_trace_by_case_id_on_the_resource():
    trace = good_trace(
        "t1", user_input="something else", resource_attributes={CASE_ID_ATTR: "orders"}
    )
    [(case, traces)], _ = match_cases([orders_case()], [trace])
    assert [t.trace_id for t in traces] == ["t1"]


def test_root_span_case_id_wins_over_the_resource():
    trace = good_trace(
        "t1", root_attributes={CASE_ID_ATTR: "a"}, resource_attributes={CASE_ID_ATTR: "b"}
    )
    assert case_id_of(trace) == "a"


def test_numeric_case_id_attribute_matches_a_string_case_id():
    trace = good_trace("t1", user_input="x", root_attributes={CASE_ID_ATTR: 7})
    [(case, traces)], _ = match_cases([orders_case(id="7")], [trace])
    assert len(traces) == 1


def test_case_id_attribute_takes_precedence_over_input():
    tagged = good_trace("t1", user_input="something else", root_attributes={CASE_ID_ATTR: "orders"})
    same_input = good_trace("t2")
    [(case, traces)], leftover = match_cases([orders_case()], [tagged, same_input])
    assert [t.trace_id for t in traces] == ["t1"] and leftover == 1


def test_trace_tagged_for_another_case_is_not_matched_by_input():
    tagged = good_trace("t1", root_attributes={CASE_ID_ATTR: "other"})
    other = orders_case(id="other", input="something else")
    [(case, traces), _], leftover = match_cases([orders_case(), other], [tagged])
    assert traces == [] and leftover == 0


def test_10_7_a_case_id_naming_no_case_of_the_dataset_falls_back_to_the_input(config, scorers):
    """Issue 10 item 7: traces from another dataset's run (their tracegrade.case_id names no
    case here) are matched by first user input instead of leaving every case unmatched."""
    foreign = good_trace("t1", root_attributes={CASE_ID_ATTR: "other-dataset:3"})
    [(case, traces)], leftover = match_cases([orders_case()], [foreign])
    assert [t.trace_id for t in traces] == ["t1"] and leftover == 0
    [result] = run([foreign], make_dataset(orders_case()), scorers, config).results
    assert result.trace_id == "t1" and result.passed


def test_case_matches_by_its_explicit_trace_id_case_insensitively():
    explicit = good_trace("0af7651916cd43dd8448eb211c80319c", user_input="something else")
    case = orders_case(trace_id="0AF7651916CD43DD8448EB211C80319C")
    [(case, traces)], _ = match_cases([case], [explicit])
    assert [t.trace_id for t in traces] == ["0af7651916cd43dd8448eb211c80319c"]


def test_explicit_trace_id_takes_precedence_over_input():
    explicit = good_trace("t1", user_input="something else")
    [(case, traces)], _ = match_cases([orders_case(trace_id="t1")], [explicit, good_trace("t2")])
    assert [t.trace_id for t in traces] == ["t1"]


def test_case_matches_through_a_mapping_file():
    trace = good_trace("t9", user_input="something else")
    [(case, traces)], _ = match_cases([orders_case()], [trace], mapping={"orders": ["T9"]})
    assert [t.trace_id for t in traces] == ["t9"]


def test_case_id_attribute_takes_precedence_over_explicit_mapping():
    tagged = good_trace("t1", user_input="x", root_attributes={CASE_ID_ATTR: "orders"})
    mapped = good_trace("t2", user_input="y")
    [(case, traces)], _ = match_cases([orders_case(trace_id="t2")], [tagged, mapped])
    assert [t.trace_id for t in traces] == ["t1"]


def test_case_matches_by_first_user_input_with_whitespace_normalised():
    trace = good_trace("t1", user_input="  Show me my\n recent   orders ")
    [(case, traces)], _ = match_cases([orders_case()], [trace])
    assert len(traces) == 1


def test_only_the_first_user_input_is_matched():
    trace = make_trace(trace_id="t1", user_inputs=["Hi there", ORDERS])
    [(case, traces)], _ = match_cases([orders_case()], [trace])
    assert traces == []


def test_input_matching_is_case_sensitive_text():
    [(case, traces)], _ = match_cases(
        [orders_case()], [good_trace("t1", user_input=ORDERS.lower())]
    )
    assert traces == []


def test_multi_turn_case_matches_on_its_first_turn():
    case = make_case(
        id="multi", turns=[ORDERS, "And the second one?"], expected_tools=["get_user_orders"]
    )
    trace = make_trace(trace_id="t1", user_inputs=[ORDERS, "And the second one?"])
    [(case, traces)], _ = match_cases([case], [trace])
    assert len(traces) == 1


def test_case_matching_several_traces_gives_one_result_per_trace(config, scorers):
    result = run([good_trace("t1"), good_trace("t2")], make_dataset(orders_case()), scorers, config)
    assert sorted(r.trace_id for r in result.results) == ["t1", "t2"]
    assert result.summary.results == 2


def test_unmatched_case_is_a_failed_result_with_the_reason(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="status", input=STATUS))
    result = by_case(run([good_trace("t1")], dataset, scorers, config))
    unmatched = result["status"]
    assert unmatched.trace_id is None and not unmatched.passed and unmatched.score is None
    assert unmatched.reasons == ("no trace matched this case",)


def test_unmatched_cases_and_traces_are_counted_in_the_summary(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="status", input=STATUS))
    summary = run(
        [good_trace("t1"), good_trace("t2", user_input="unrelated")], dataset, scorers, config
    ).summary
    assert (summary.unmatched_cases, summary.unmatched_traces) == (1, 1)


def test_unmatched_case_counts_as_failed_in_the_pass_rate(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="status", input=STATUS))
    summary = run([good_trace("t1")], dataset, scorers, config).summary
    assert (summary.passed, summary.failed, summary.pass_rate) == (1, 1, 0.5)


# --- scoring a case -------------------------------------------------------------------------------


def test_good_trace_passes_with_every_axis_at_one(config, scorers):
    [result] = run([good_trace()], make_dataset(orders_case()), scorers, config).results
    assert result.passed and result.score == 1.0
    assert dict(result.axes) == {"groundedness": 1.0, "correctness": 1.0, "completeness": 1.0}


def test_trace_answering_without_tools_fails(config, scorers):
    [result] = run([lazy_trace()], make_dataset(orders_case()), scorers, config).results
    assert not result.passed and result.score == pytest.approx(0.2)
    assert any(r.startswith("groundedness:") for r in result.reasons)


def test_excluded_axis_is_listed_on_the_result(config, scorers):
    case = make_case(id="c", input=ORDERS, expected_tools=["get_user_orders"])  # no expected fields
    [result] = run([good_trace()], make_dataset(case), scorers, config).results
    assert "completeness" in result.excluded
    assert any(n.startswith("completeness not scored") for n in result.notes)
    assert not any("not scored" in r for r in result.reasons)  # issue 10 item 6: a note


def test_case_where_no_axis_can_run_does_not_pass(config, scorers):
    case = make_case(id="c", input=ORDERS)
    [result] = run([good_trace()], make_dataset(case), scorers, config).results
    assert result.score is None and not result.passed
    assert "no weighted axis could be scored" in result.reasons


def test_hard_failure_from_an_unweighted_scorer_fails_the_case(config, scorers):
    case = orders_case(must_not_contain=["shipped"])
    [result] = run([good_trace()], make_dataset(case), scorers, config).results
    assert result.score == 1.0 and not result.passed
    assert result.hard_failures == ("answer contains forbidden phrase 'shipped'",)


@dataclass(frozen=True)
class Exploding:
    """Raises for one case id."""

    case_id: str
    name: str = "exploding"

    def __call__(self, trace, case):
        if case is not None and case.id == self.case_id:
            raise RuntimeError("kaboom")
        return Score(self.name, 1.0, "fine")


def test_scorer_that_raises_fails_that_case_not_the_run(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="status", input=STATUS))
    traces = [good_trace("t1"), good_trace("t2", user_input=STATUS)]
    result = by_case(run(traces, dataset, [*scorers, Exploding("status")], config))
    assert result["orders"].passed
    assert not result["status"].passed
    assert "scorer exploding crashed: RuntimeError: kaboom" in result["status"].hard_failures


def test_crashed_scorer_reason_says_where_it_crashed(config, scorers):
    [result] = run(
        [good_trace()], make_dataset(orders_case()), [*scorers, Exploding("orders")], config
    ).results
    reason = result.details["exploding"]["reason"]
    assert (
        reason.startswith("scorer crashed: RuntimeError: kaboom at ")
        and "test_evaluate.py" in reason
    )


def test_result_carries_case_weight_tags_tier_and_metadata(config, scorers):
    case = orders_case(weight=2.0, tags=["orders"], tier="smoke", metadata={"owner": "shop"})
    [result] = run([good_trace()], make_dataset(case), scorers, config).results
    assert (result.weight, result.tags, result.tier, dict(result.metadata)) == (
        2.0,
        ("orders",),
        "smoke",
        {"owner": "shop"},
    )


def test_progress_is_called_once_per_scored_result(config, scorers):
    seen = []
    run(
        [good_trace("t1"), good_trace("t2")],
        make_dataset(orders_case()),
        scorers,
        config,
        progress=seen.append,
    )
    assert [r.trace_id for r in seen] == ["t1", "t2"]


# --- weights and threshold precedence -------------------------------------------------------------


def sixty_percent_trace():
    """groundedness 1, correctness 0.5 (one of two tools), completeness 0 -> 0.6 with default
    weights."""
    return make_trace(
        trace_id="t1",
        user_inputs=[ORDERS],
        final_output="Here you go.",
        tool_calls=[tool("get_user_orders", result="[]")],
    )


def sixty_percent_case(**kw):
    return make_case(
        id="c",
        input=ORDERS,
        expected_tools=["get_user_orders", "get_order_details"],
        expected_fields=["status"],
        **kw,
    )


def test_config_threshold_applies_by_default(config, scorers):
    [result] = run(
        [sixty_percent_trace()], make_dataset(sixty_percent_case()), scorers, config
    ).results
    assert result.score == pytest.approx(0.6) and not result.passed


def test_dataset_threshold_overrides_the_config(config, scorers):
    result = run(
        [sixty_percent_trace()], make_dataset(sixty_percent_case(), threshold=0.5), scorers, config
    )
    assert result.results[0].passed and result.summary.threshold == 0.5


def test_threshold_argument_overrides_the_dataset(config, scorers):
    result = run(
        [sixty_percent_trace()],
        make_dataset(sixty_percent_case(), threshold=0.5),
        scorers,
        config,
        threshold=0.9,
    )
    assert not result.results[0].passed and result.summary.threshold == 0.9


def test_config_threshold_from_a_config_file_applies(config, scorers):
    result = run(
        [sixty_percent_trace()],
        make_dataset(sixty_percent_case()),
        scorers,
        replace(config, threshold=0.55),
    )
    assert result.results[0].passed


def test_dataset_weights_override_the_config_weights(config, scorers):
    dataset = make_dataset(sixty_percent_case(), weights={"groundedness": 1.0})
    [result] = run([sixty_percent_trace()], dataset, scorers, config).results
    assert result.score == 1.0 and dict(result.axes) == {"groundedness": 1.0}


def test_without_a_dataset_the_reference_free_weights_apply(config, scorers):
    trace = make_trace(
        final_output="It costs $99.", tool_calls=[tool("lookup", result='{"price": 99}')]
    )
    [result] = run([trace], None, scorers, config).results
    assert result.case_id is None
    assert set(result.axes) == {"value_grounding", "errors"} and result.passed


def test_without_a_dataset_every_trace_is_scored(config, scorers):
    result = run([make_trace(trace_id="a"), make_trace(trace_id="b")], None, scorers, config)
    assert [r.trace_id for r in result.results] == [
        "a",
        "b",
    ] and result.summary.unmatched_traces == 0


# --- tiers ----------------------------------------------------------------------------------------


def tiered():
    return make_dataset(
        orders_case(id="smoke-case", tier="smoke"), orders_case(id="full-case", input=STATUS)
    )


def test_smoke_tier_runs_only_smoke_cases(config, scorers):
    result = run(
        [good_trace("t1"), good_trace("t2", user_input=STATUS)],
        tiered(),
        scorers,
        config,
        tier="smoke",
    )
    assert [r.case_id for r in result.results] == ["smoke-case"]


def test_smoke_tier_does_not_report_full_cases_as_unmatched(config, scorers):
    result = run([good_trace("t1")], tiered(), scorers, config, tier="smoke")
    assert result.summary.unmatched_cases == 0


def test_full_tier_runs_every_case(config, scorers):
    result = run(
        [good_trace("t1"), good_trace("t2", user_input=STATUS)],
        tiered(),
        scorers,
        config,
        tier="full",
    )
    assert sorted(r.case_id for r in result.results) == ["full-case", "smoke-case"]


def test_no_tier_runs_every_case(config, scorers):
    result = run([good_trace("t1"), good_trace("t2", user_input=STATUS)], tiered(), scorers, config)
    assert len(result.results) == 2


# --- summary --------------------------------------------------------------------------------------


def test_summary_latency_percentiles_interpolate_over_trace_durations(config, scorers):
    traces = [
        make_trace(trace_id=f"t{i}", duration_ms=ms)
        for i, ms in enumerate([400.0, 100.0, 300.0, 200.0])
    ]
    summary = run(traces, None, scorers, config).summary
    assert summary.latency_p50_ms == pytest.approx(250.0)
    assert summary.latency_p95_ms == pytest.approx(385.0)


def test_summary_latency_of_a_single_trace_is_its_duration(config, scorers):
    summary = run([make_trace(duration_ms=123.0)], None, scorers, config).summary
    assert summary.latency_p50_ms == summary.latency_p95_ms == 123.0


def test_summary_latency_leaves_out_synthetic_timings(config, scorers):
    traces = [
        make_trace(trace_id="a", duration_ms=100.0),
        make_trace(trace_id="b", duration_ms=9999.0, gaps=[gap("timing")]),
    ]
    assert run(traces, None, scorers, config).summary.latency_p95_ms == 100.0


def test_summary_latency_is_none_without_timed_traces(config, scorers):
    summary = run([make_trace(gaps=[gap("timing")])], None, scorers, config).summary
    assert summary.latency_p50_ms is None and summary.latency_p95_ms is None


def test_percentile_of_no_values_is_none():
    assert percentile([], 50) is None


def test_summary_sums_tokens(config, scorers):
    traces = [
        make_trace(trace_id="a", llm_calls=[llm(input_tokens=100, output_tokens=10)]),
        make_trace(trace_id="b", llm_calls=[llm(input_tokens=250, output_tokens=40)]),
        make_trace(trace_id="c"),
    ]
    summary = run(traces, None, scorers, config).summary
    assert (summary.input_tokens, summary.output_tokens) == (350, 50)


def test_summary_tokens_are_none_when_no_trace_records_them(config, scorers):
    summary = run([make_trace(trace_id="a", llm_calls=[llm()])], None, scorers, config).summary
    assert (summary.input_tokens, summary.output_tokens) == (None, None)


def test_summary_cost_sums_the_traces_with_a_known_cost(config, scorers):
    priced = replace(config, pricing=Pricing(dict(TEST_PRICES)))
    traces = [
        make_trace(
            trace_id="a", llm_calls=[llm("gpt-4o", input_tokens=1000, output_tokens=100)]
        ),  # 0.003
        make_trace(
            trace_id="b", llm_calls=[llm("gpt-4o-mini", input_tokens=2000, output_tokens=0)]
        ),  # 0.001
        make_trace(trace_id="c", llm_calls=[llm("unpriced", input_tokens=5, output_tokens=5)]),
    ]
    assert run(traces, None, scorers, priced).summary.cost_usd == pytest.approx(0.004)


def test_summary_cost_is_none_when_no_trace_has_a_known_cost(config, scorers):
    traces = [make_trace(llm_calls=[llm("unpriced", input_tokens=5, output_tokens=5)])]
    assert run(traces, None, scorers, config).summary.cost_usd is None


def test_summary_hallucination_rate_counts_traces_with_ungrounded_values(config, scorers):
    traces = [
        make_trace(
            trace_id="a",
            final_output="It costs $279.99.",
            tool_calls=[tool("lookup", result='{"price": 249.99}')],
        ),
        make_trace(
            trace_id="b",
            final_output="It costs $249.99.",
            tool_calls=[tool("lookup", result='{"price": 249.99}')],
        ),
    ]
    assert run(traces, None, scorers, config).summary.hallucination_rate == 0.5


def test_summary_hallucination_rate_counts_must_not_contain_hits(config, scorers):
    dataset = make_dataset(
        orders_case(must_not_contain=["refund"]), orders_case(id="status", input=STATUS)
    )
    traces = [
        good_trace("t1", final_output="Shipped; a refund is on its way."),
        good_trace("t2", user_input=STATUS),
    ]
    assert run(traces, dataset, scorers, config).summary.hallucination_rate == 0.5


def test_summary_hallucination_rate_leaves_out_unmatched_cases(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="status", input=STATUS))
    assert run([good_trace("t1")], dataset, scorers, config).summary.hallucination_rate == 0.0


def test_summary_score_is_weighted_by_case_weight(config, scorers):
    dataset = make_dataset(orders_case(weight=3.0), orders_case(id="lazy", input=STATUS))
    traces = [good_trace("t1"), lazy_trace("t2", user_input=STATUS)]
    # (3 * 1.0 + 1 * 0.2) / 4
    assert run(traces, dataset, scorers, config).summary.score == pytest.approx(0.8)


def test_summary_axes_are_means_over_results(config, scorers):
    dataset = make_dataset(orders_case(), orders_case(id="lazy", input=STATUS))
    summary = run(
        [good_trace("t1"), lazy_trace("t2", user_input=STATUS)], dataset, scorers, config
    ).summary
    assert dict(summary.axes) == {"completeness": 1.0, "correctness": 0.5, "groundedness": 0.5}


def test_summary_counts_excluded_axes(config, scorers):
    case = make_case(id="c", input=ORDERS, expected_tools=["get_user_orders"])
    summary = run([good_trace("t1"), good_trace("t2")], make_dataset(case), scorers, config).summary
    assert dict(summary.excluded) == {"completeness": 2}
