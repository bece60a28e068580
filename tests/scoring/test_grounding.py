"""Groundedness (binary tool use) and value grounding (values backed by evidence)."""

from __future__ import annotations

import pytest

from tests.support.traces import gap, make_case, make_trace, tool
from tracegrade.scoring.grounding import Groundedness, ValueGrounding, counted_calls, evidence_texts
from tracegrade.scoring.registry import builtins

FACTUAL = make_case(
    expected_tools=["get_user_orders"], criteria={"grounded": True, "tool_called": True}
)


# --- groundedness --------------------------------------------------------------------------------


def test_case_expecting_a_tool_scores_zero_when_no_tool_was_called():
    score = Groundedness()(make_trace(tool_calls=[]), FACTUAL)
    assert score.value == 0.0


def test_case_expecting_a_tool_scores_one_when_a_tool_was_performed():
    score = Groundedness()(make_trace(tool_calls=[tool("get_user_orders", result="[]")]), FACTUAL)
    assert score.value == 1.0


def test_any_performed_tool_counts_for_groundedness():
    score = Groundedness()(make_trace(tool_calls=[tool("search_products", result="[]")]), FACTUAL)
    assert score.value == 1.0


def test_call_whose_result_reports_an_error_is_attempted_not_performed():
    failed = tool("get_user_orders", result="Error: database unavailable")
    assert not failed.performed
    score = Groundedness()(make_trace(tool_calls=[failed]), FACTUAL)
    assert score.value == 0.0


def test_call_whose_span_failed_is_attempted_not_performed():
    failed = tool("get_user_orders", result=None, error="span status ERROR")
    score = Groundedness()(make_trace(tool_calls=[failed]), FACTUAL)
    assert score.value == 0.0


def test_zero_reason_says_how_many_calls_were_attempted_and_failed():
    failed = tool("get_user_orders", error="timeout")
    score = Groundedness()(make_trace(tool_calls=[failed, failed]), FACTUAL)
    assert "2 attempted" in score.reason


def test_attempted_counting_accepts_a_failed_call():
    failed = tool("get_user_orders", result="Error: database unavailable")
    assert Groundedness(counting="attempted")(make_trace(tool_calls=[failed]), FACTUAL).value == 1.0


def test_criteria_grounded_alone_makes_a_case_factual():
    case = make_case(criteria={"grounded": True})
    assert Groundedness()(make_trace(tool_calls=[]), case).value == 0.0


def test_criteria_tool_called_alone_makes_a_case_factual():
    case = make_case(criteria={"tool_called": True})
    assert Groundedness()(make_trace(tool_calls=[]), case).value == 0.0


def test_expected_tool_calls_alone_make_a_case_factual():
    case = make_case(expected_tool_calls=[{"name": "get_order_details"}])
    assert Groundedness()(make_trace(tool_calls=[]), case).value == 0.0


def test_groundedness_is_skipped_for_a_case_expecting_no_tool_use():
    score = Groundedness()(make_trace(), make_case(expected_fields=["status"]))
    assert score.value is None and "expects no tool" in score.reason


def test_groundedness_is_skipped_without_a_case():
    assert Groundedness()(make_trace(), None).value is None


def test_groundedness_is_skipped_when_tool_calls_are_not_recorded():
    trace = make_trace(tool_calls=[], gaps=[gap("tool_calls", "no tool spans")])
    score = Groundedness()(trace, FACTUAL)
    assert score.value is None and "no tool spans" in score.reason


def test_registered_groundedness_uses_the_configured_counting(config):
    from dataclasses import replace

    [scorer] = builtins(replace(config, count_tool_calls="attempted"), ["groundedness"])
    failed = tool("get_user_orders", result="Error: boom")
    assert scorer(make_trace(tool_calls=[failed]), FACTUAL).value == 1.0


def test_counted_calls_keeps_execution_order_and_drops_failed_calls():
    calls = [tool("a", result="ok"), tool("b", error="x"), tool("c", result="ok")]
    assert [c.name for c in counted_calls(make_trace(tool_calls=calls), "performed")] == ["a", "c"]


# --- value grounding ------------------------------------------------------------------------------


def vg(final_output, tool_results=(), user_inputs=("hi",), system_instructions=None):
    trace = make_trace(
        final_output=final_output,
        user_inputs=user_inputs,
        system_instructions=system_instructions,
        tool_calls=[tool("lookup", result=r) for r in tool_results],
    )
    return ValueGrounding()(trace, None)


def test_price_is_grounded_by_a_tool_result_number():
    score = vg("Your total is $1,250.00.", ['{"total": 1250, "currency": "USD"}'])
    assert score.value == 1.0 and score.details["ungrounded"] == []


def test_written_date_is_grounded_by_an_iso_date_in_a_tool_result():
    assert vg("It will arrive on May 20, 2024.", ['{"eta": "2024-05-20"}']).value == 1.0


def test_twelve_hour_time_is_grounded_by_a_24h_time_in_a_tool_result():
    assert vg("Your flight leaves at 07:00 PM.", ['{"departure": "19:00:00"}']).value == 1.0


def test_invented_price_is_reported_as_ungrounded():
    score = vg(
        "The headphones cost $279.99 and ship in 48 hours.", ['{"price": 249.99, "ship_hours": 48}']
    )
    assert score.value == 0.5
    assert score.details["ungrounded"] == [{"kind": "price", "text": "$279.99"}]


def test_ungrounded_values_are_named_in_the_reason():
    assert "$279.99" in vg("It costs $279.99.", ['{"price": 249.99}']).reason


def test_value_from_the_user_input_is_grounded():
    uid = "550e8400-e29b-41d4-a716-446655440001"
    assert (
        vg(f"Order {uid} is delivered.", [], user_inputs=[f"Status of order {uid}?"]).value == 1.0
    )


def test_value_from_system_instructions_is_grounded():
    assert (
        vg(
            "Returns are accepted within 30 days.", [], system_instructions="Return window: 30 days"
        ).value
        == 1.0
    )


def test_value_from_an_errored_tool_result_still_counts_as_evidence():
    # evidence_texts takes every recorded result: the agent saw it.
    trace = make_trace(tool_calls=[tool("lookup", result="Error: order 98765 not found")])
    assert "Error: order 98765 not found" in evidence_texts(trace)


def test_value_derived_by_the_agent_is_ungrounded():
    score = vg("Together they cost $300.", ['[{"price": 100}, {"price": 200}]'])
    assert score.value == 0.0


def test_list_markers_and_single_digits_are_not_checked():
    score = vg("1. Headphones\n2. Speakers\nYou have 3 options.", [])
    assert score.value == 1.0 and score.details["values"] == 0


def test_answer_without_values_scores_one():
    assert vg("Your order has shipped.", []).value == 1.0


def test_value_grounding_is_skipped_without_a_final_answer():
    score = ValueGrounding()(make_trace(final_output=None), None)
    assert score.value is None


def test_value_grounding_skip_reason_comes_from_the_final_output_gap():
    trace = make_trace(final_output=None, gaps=[gap("final_output", "content capture is off")])
    assert ValueGrounding()(trace, None).reason == "content capture is off"


def test_number_with_a_hyphenated_unit_is_grounded_by_the_number():
    assert (
        vg("You are within the 30-day return window.", ['{"return_window_days": 30}']).value == 1.0
    )


@pytest.mark.parametrize("answer", ["Order total: $1,250.00", "Total 1250 USD", "total of 1,250"])
def test_equivalent_spellings_of_a_grounded_amount_all_ground(answer):
    assert vg(answer, ['{"total": 1250.0}']).value == 1.0
