"""Errors: the fraction of tool and LLM calls that did not fail (reference-free)."""

from __future__ import annotations

from tests.support.traces import llm, make_trace, tool
from tracegrade.scoring.failures import Errors


def test_no_failed_call_scores_one():
    trace = make_trace(tool_calls=[tool("a", result="ok")], llm_calls=[llm()])
    assert Errors()(trace, None).value == 1.0


def test_value_is_the_fraction_of_tool_and_llm_calls_that_succeeded():
    trace = make_trace(
        tool_calls=[tool("a", result="ok"), tool("b", error="timeout")],
        llm_calls=[llm(span_id="l1"), llm(span_id="l2")],
    )
    assert Errors()(trace, None).value == 0.75


def test_tool_result_reporting_an_error_counts_as_failed():
    trace = make_trace(tool_calls=[tool("a", result="Error: order not found")])
    assert Errors()(trace, None).value == 0.0


def test_failed_llm_call_counts_as_failed():
    trace = make_trace(
        llm_calls=[llm(span_id="l1", error="rate_limit_exceeded"), llm(span_id="l2")]
    )
    assert Errors()(trace, None).value == 0.5


def test_failures_are_not_hard_failures():
    trace = make_trace(tool_calls=[tool("a", error="timeout")])
    assert Errors()(trace, None).hard_failures == ()


def test_failed_calls_are_described():
    trace = make_trace(
        tool_calls=[tool("cancel_order", error="order already shipped")],
        llm_calls=[llm("gpt-4o", error="rate_limit_exceeded")],
    )
    score = Errors()(trace, None)
    assert "cancel_order: order already shipped" in score.reason
    assert score.details["failed_tool_calls"] == [
        {"name": "cancel_order", "error": "order already shipped"}
    ]
    assert score.details["failed_llm_calls"] == [
        {"model": "gpt-4o", "error": "rate_limit_exceeded"}
    ]


def test_trace_without_calls_is_skipped():
    assert Errors()(make_trace(), None).value is None


def test_errors_runs_with_a_case_too():
    from tests.support.traces import make_case

    assert Errors()(make_trace(tool_calls=[tool("a")]), make_case()).value == 1.0
