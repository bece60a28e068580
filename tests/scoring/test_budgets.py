"""Usage (latency, tokens, cost) and budgets on the trace, an agent's subtree and a tool."""

from __future__ import annotations

from dataclasses import replace

import pytest

from tests.support.traces import TEST_PRICES, agent, gap, llm, make_case, make_trace, tool
from tracegrade.config import Budgets, ModelPrice, Pricing
from tracegrade.scoring.budgets import BudgetCheck
from tracegrade.scoring.registry import builtins
from tracegrade.scoring.usage import agent_subtree_ids, measure, measure_agent, measure_tool

SYNTHETIC = gap("timing", "imported from a transcript without timestamps: durations are synthetic")


# --- pricing --------------------------------------------------------------------------------------


def test_cost_charges_cached_input_tokens_at_the_cached_rate(pricing):
    # gpt-4o: input 2.0, cached 1.0, output 10.0 USD/M. 1000 input of which 400 cached, 100 output:
    # 600*2 + 400*1 + 100*10 = 2600 -> 0.0026 USD.
    assert pricing.cost_usd("gpt-4o", 1000, 100, 400) == pytest.approx(0.0026)


def test_cost_without_cached_tokens_charges_all_input_at_the_input_rate(pricing):
    assert pricing.cost_usd("gpt-4o", 1000, 100) == pytest.approx((1000 * 2 + 100 * 10) / 1e6)


def test_cached_tokens_default_to_the_input_rate_when_the_model_has_no_cached_price(pricing):
    # gpt-4o-mini: input 0.5, output 2.0, no cached price -> 1000*0.5 + 100*2 = 700.
    assert pricing.cost_usd("gpt-4o-mini", 1000, 100, 400) == pytest.approx(0.0007)


def test_cost_with_only_output_tokens(pricing):
    assert pricing.cost_usd("gpt-4o", None, 1000) == pytest.approx(0.01)


def test_cost_without_token_counts_is_unknown(pricing):
    assert pricing.cost_usd("gpt-4o", None, None) is None


def test_cost_of_an_unpriced_model_is_unknown(pricing):
    assert pricing.cost_usd("llama-3-70b", 1000, 100) is None


def test_provider_prefix_is_dropped(pricing):
    assert pricing.price("openai/gpt-4o") is TEST_PRICES["gpt-4o"]


def test_model_names_match_case_insensitively(pricing):
    assert pricing.price("GPT-4o") is TEST_PRICES["gpt-4o"]


def test_dated_snapshot_uses_the_price_of_its_base_model(pricing):
    assert pricing.price("gpt-4o-2024-08-06") is TEST_PRICES["gpt-4o"]


def test_dated_snapshot_uses_the_longest_matching_key(pricing):
    assert pricing.price("gpt-4o-mini-2024-07-18") is TEST_PRICES["gpt-4o-mini"]


def test_provider_prefix_and_dated_snapshot_together(pricing):
    assert pricing.price("openai/gpt-4o-mini-2024-07-18") is TEST_PRICES["gpt-4o-mini"]


def test_dated_snapshot_with_a_full_date_suffix_uses_the_base_price():
    o3 = ModelPrice(input=2.0, output=8.0)
    assert Pricing({"o3": o3}).price("o3-2025-04-16") is o3


def test_different_model_sharing_a_key_prefix_is_unpriced():
    assert Pricing({"o3": ModelPrice(input=2.0, output=8.0)}).price("o3-mini") is None


def test_snapshot_with_its_own_key_uses_its_own_price(config):
    shipped = config.pricing
    assert shipped.price("gpt-4o-2024-05-13") is shipped.models["gpt-4o-2024-05-13"]
    assert shipped.price("gpt-4o-2024-08-06") is shipped.models["gpt-4o"]


def test_unknown_model_has_no_price(pricing):
    assert pricing.price("claude-3-opus") is None and pricing.price(None) is None


# --- measuring a trace ----------------------------------------------------------------------------


def test_measure_sums_the_cost_of_every_llm_call(pricing):
    trace = make_trace(
        llm_calls=[
            llm("gpt-4o", input_tokens=1000, output_tokens=100, span_id="a"),
            llm("gpt-4o-mini", input_tokens=2000, output_tokens=500, span_id="b"),
        ]
    )
    # 1000*2 + 100*10 = 3000; 2000*0.5 + 500*2 = 2000 -> 5000 / 1e6
    assert measure(trace, pricing).cost_usd == pytest.approx(0.005)


def test_measure_reports_the_trace_token_totals_and_counts(pricing):
    trace = make_trace(
        llm_calls=[
            llm(input_tokens=1000, output_tokens=100, span_id="a"),
            llm(input_tokens=1500, output_tokens=50, span_id="b"),
        ],
        tool_calls=[tool("a"), tool("b", error="boom")],
        duration_ms=2500.0,
    )
    usage = measure(trace, pricing)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (2500, 150, 2650)
    assert (usage.llm_calls, usage.tool_calls, usage.duration_ms) == (2, 2, 2500.0)


def test_one_unpriced_model_makes_the_trace_cost_unknown_and_names_it(pricing):
    trace = make_trace(
        llm_calls=[
            llm("gpt-4o", input_tokens=1000, output_tokens=100, span_id="a"),
            llm("my-finetune", input_tokens=10, output_tokens=10, span_id="b"),
        ]
    )
    usage = measure(trace, pricing)
    assert usage.cost_usd is None and usage.unpriced_models == ("my-finetune",)


def test_unpriced_call_without_tokens_does_not_make_the_cost_unknown(pricing):
    trace = make_trace(
        llm_calls=[
            llm("gpt-4o", input_tokens=1000, output_tokens=0, span_id="a"),
            llm("my-finetune", span_id="b"),
        ]
    )
    assert measure(trace, pricing).cost_usd == pytest.approx(0.002)


def test_synthetic_timing_makes_latency_unknown(pricing):
    trace = make_trace(duration_ms=1234.0, gaps=[SYNTHETIC], llm_calls=[llm(duration_ms=10.0)])
    usage = measure(trace, pricing)
    assert usage.duration_ms is None and usage.llm_durations_ms == ()


def test_trace_without_tokens_has_no_total(pricing):
    assert measure(make_trace(llm_calls=[llm()]), pricing).total_tokens is None


# --- agent subtrees and tools ---------------------------------------------------------------------


def team():
    """triage (a1) -> orders (a2) -> refunds (a3); triage (a1) -> catalog (a4)."""
    agents = [
        agent("triage", "a1", duration_ms=5000.0),
        agent("orders", "a2", parent="a1", duration_ms=3000.0),
        agent("refunds", "a3", parent="a2", duration_ms=1000.0),
        agent("catalog", "a4", parent="a1", duration_ms=800.0),
    ]
    llm_calls = [
        llm(input_tokens=100, output_tokens=10, span_id="l1", agent_span_id="a1"),
        llm(input_tokens=200, output_tokens=20, span_id="l2", agent_span_id="a2"),
        llm(input_tokens=300, output_tokens=30, span_id="l3", agent_span_id="a3"),
        llm(input_tokens=400, output_tokens=40, span_id="l4", agent_span_id="a4"),
    ]
    tool_calls = [
        tool("get_order_details", agent_span_id="a2", duration_ms=120.0),
        tool("refund", agent_span_id="a3", duration_ms=300.0),
        tool("search_products", agent_span_id="a4", duration_ms=90.0),
        tool("search_products", agent_span_id="a4", duration_ms=150.0),
    ]
    return make_trace(agents=agents, llm_calls=llm_calls, tool_calls=tool_calls, duration_ms=5000.0)


def test_agent_subtree_includes_nested_agents():
    assert agent_subtree_ids(team(), "orders") == {"a2", "a3"}


def test_agent_subtree_of_the_root_is_every_agent():
    assert agent_subtree_ids(team(), "triage") == {"a1", "a2", "a3", "a4"}


def test_agent_usage_counts_llm_and_tool_calls_in_its_subtree_only(pricing):
    usage = measure_agent(team(), "orders", pricing)
    assert (usage.input_tokens, usage.output_tokens) == (500, 50)
    assert (usage.llm_calls, usage.tool_calls) == (2, 2)


def test_agent_usage_cost_is_the_subtree_cost(pricing):
    # l2 + l3: 500 input * 2 + 50 output * 10 = 1500
    assert measure_agent(team(), "orders", pricing).cost_usd == pytest.approx(0.0015)


def test_agent_latency_is_its_own_invocation(pricing):
    assert measure_agent(team(), "orders", pricing).duration_ms == 3000.0


def test_agent_latency_is_unknown_with_synthetic_timing(pricing):
    trace = replace(team(), gaps=(SYNTHETIC,))
    assert measure_agent(trace, "orders", pricing).duration_ms is None


def test_tool_usage_is_its_call_count_and_slowest_call():
    usage = measure_tool(team(), "search_products")
    assert (usage.tool_calls, usage.duration_ms) == (2, 150.0)


# --- budget checks -------------------------------------------------------------------------------


def budget(trace, case=None, pricing=None, **defaults):
    return BudgetCheck(Budgets(**defaults), pricing or Pricing(dict(TEST_PRICES)))(trace, case)


def test_no_applicable_budget_is_skipped():
    assert budget(make_trace(), make_case()).value is None


def test_trace_latency_within_the_config_budget_scores_one():
    score = budget(make_trace(duration_ms=900.0), max_latency_ms=1000)
    assert score.value == 1.0 and score.hard_failures == ()


def test_trace_latency_at_the_limit_is_within_budget():
    assert budget(make_trace(duration_ms=1000.0), max_latency_ms=1000).value == 1.0


def test_trace_latency_over_the_config_budget_is_a_hard_failure():
    score = budget(make_trace(duration_ms=1500.0), max_latency_ms=1000)
    assert score.value == 0.0
    assert score.hard_failures == ("over budget: trace latency_ms 1500 > 1000",)


def test_budgets_apply_without_a_case():
    assert budget(make_trace(duration_ms=1500.0), None, max_latency_ms=1000).value == 0.0


def test_case_budget_overrides_the_config_budget():
    case = make_case(max_latency_ms=2000)
    assert budget(make_trace(duration_ms=1500.0), case, max_latency_ms=1000).value == 1.0


def test_case_budget_applies_on_top_of_other_config_budgets():
    case = make_case(max_tool_calls=1)
    score = budget(
        make_trace(duration_ms=1500.0, tool_calls=[tool("a"), tool("b")]), case, max_latency_ms=1000
    )
    assert len(score.hard_failures) == 2


def test_cost_over_budget_is_a_hard_failure():
    trace = make_trace(
        llm_calls=[llm("gpt-4o", input_tokens=10_000, output_tokens=1_000)]
    )  # 0.03 USD
    score = budget(trace, make_case(max_cost_usd=0.01))
    assert score.value == 0.0 and "cost_usd" in score.hard_failures[0]


def test_cost_within_budget_scores_one():
    trace = make_trace(
        llm_calls=[llm("gpt-4o", input_tokens=1_000, output_tokens=100)]
    )  # 0.003 USD
    assert budget(trace, make_case(max_cost_usd=0.01)).value == 1.0


def test_tool_call_count_over_budget_is_a_hard_failure():
    score = budget(
        make_trace(tool_calls=[tool("a"), tool("a"), tool("b")]), make_case(max_tool_calls=2)
    )
    assert score.hard_failures == ("over budget: trace tool calls 3 > 2",)


def test_token_count_over_budget_is_a_hard_failure():
    trace = make_trace(llm_calls=[llm(input_tokens=900, output_tokens=200)])
    assert budget(trace, make_case(max_tokens=1000)).hard_failures == (
        "over budget: trace tokens 1100 > 1000",
    )


def test_agent_subtree_budget_over_is_a_hard_failure():
    case = make_case(budgets=[{"agent": "orders", "max_tokens": 500}])  # subtree uses 550
    score = budget(team(), case)
    assert score.hard_failures == ("over budget: agent orders tokens 550 > 500",)


def test_agent_subtree_budget_ignores_sibling_agents():
    case = make_case(
        budgets=[{"agent": "catalog", "max_tokens": 440, "max_calls": 2}]
    )  # catalog: 440 tokens, 2 calls
    assert budget(team(), case).value == 1.0


def test_agent_latency_budget_uses_its_invocation_duration():
    case = make_case(budgets=[{"agent": "orders", "max_latency_ms": 2500}])
    assert budget(team(), case).hard_failures == (
        "over budget: agent orders latency_ms 3000 > 2500",
    )


def test_agent_cost_budget():
    case = make_case(budgets=[{"agent": "orders", "max_cost_usd": 0.001}])  # subtree costs 0.0015
    assert budget(team(), case).value == 0.0


def test_tool_call_count_budget():
    case = make_case(budgets=[{"tool": "search_products", "max_calls": 1}])
    assert budget(team(), case).hard_failures == (
        "over budget: tool search_products tool calls 2 > 1",
    )


def test_tool_latency_budget_uses_the_slowest_call():
    case = make_case(budgets=[{"tool": "search_products", "max_latency_ms": 100}])
    assert budget(team(), case).hard_failures == (
        "over budget: tool search_products latency_ms 150 > 100",
    )


def test_tool_budget_within_limits_scores_one():
    case = make_case(budgets=[{"tool": "refund", "max_calls": 1, "max_latency_ms": 500}])
    assert budget(team(), case).value == 1.0


def test_synthetic_timing_latency_budget_is_reported_not_counted():
    trace = make_trace(duration_ms=99_999.0, gaps=[SYNTHETIC])
    score = budget(trace, make_case(max_latency_ms=1000))
    assert score.value is None and score.hard_failures == ()
    assert "cannot check trace latency_ms" in score.reason


def test_unmeasurable_budget_does_not_hide_the_measurable_ones():
    trace = make_trace(duration_ms=99_999.0, gaps=[SYNTHETIC], tool_calls=[tool("a")])
    score = budget(trace, make_case(max_latency_ms=1000, max_tool_calls=5))
    assert score.value == 1.0 and "cannot check trace latency_ms" in score.reason


def test_unpriced_model_cost_budget_is_reported_not_counted():
    trace = make_trace(llm_calls=[llm("my-finetune", input_tokens=10**9, output_tokens=10**9)])
    score = budget(trace, make_case(max_cost_usd=0.01))
    assert score.value is None and score.hard_failures == ()
    assert "cannot check trace cost_usd" in score.reason


def test_synthetic_timing_agent_latency_budget_is_reported_not_counted():
    trace = replace(team(), gaps=(SYNTHETIC,))
    score = budget(trace, make_case(budgets=[{"agent": "orders", "max_latency_ms": 1}]))
    assert score.value is None and "cannot check agent orders latency_ms" in score.reason


def test_tool_budget_token_limit_that_cannot_be_measured_is_reported():
    score = budget(team(), make_case(budgets=[{"tool": "search_products", "max_tokens": 10}]))
    assert score.value is None and "cannot check" in score.reason


def test_registered_budgets_use_config_budgets_and_pricing(config):
    configured = replace(
        config,
        budgets=Budgets(max_cost_usd=0.001),
        pricing=Pricing({"gpt-4o": ModelPrice(input=2.0, output=10.0)}),
    )
    [scorer] = builtins(configured, ["budgets"])
    trace = make_trace(llm_calls=[llm("gpt-4o", input_tokens=1000, output_tokens=100)])  # 0.003 USD
    assert scorer(trace, None).value == 0.0
