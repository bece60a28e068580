"""Issue 23 rule 9: lint checks that a value is plausible, not only that it is present; a
trace tracegrade cannot read well is never all ok."""

from __future__ import annotations

from dataclasses import replace

from tracegrade.normalize.lint import lint
from tracegrade.trace import AgentInfo, AgentTrace, ToolCall

GOOD = AgentTrace(
    trace_id="t1",
    user_inputs=("What is the total of order A100?",),
    final_output="Order A100 totals $42.50.",
    llm_calls=(),
    tool_calls=(
        ToolCall("get_order", "c1", {"order_id": "A100"}, '{"total_usd": 42.5}', llm_call_index=0),
    ),
    agents=(AgentInfo("shop_assistant", "s1"),),
    root_span_name="LangGraph",
)


def _check(trace: AgentTrace, name: str):
    return next(c for c in lint(trace).checks if c.input == name)


def test_a_plausible_trace_has_no_implausible_check():
    assert not [c for c in lint(GOOD).checks if c.status == "implausible"]


def test_the_agents_name_as_user_input_is_implausible():
    report = lint(replace(GOOD, user_inputs=("LangGraph",)))
    check = next(c for c in report.checks if c.input == "user_inputs")
    assert check.status == "implausible" and "agent's name 'LangGraph'" in check.detail
    assert not report.ok


def test_an_envelope_as_the_answer_is_implausible():
    state = '{"messages": [{"role": "assistant", "content": "Order A100 totals $42.50."}]}'
    assert _check(replace(GOOD, final_output=state), "final_output").status == "implausible"
    call = '{"inputs": {"q": 1}, "kwargs": {"name": "x"}}'
    assert _check(replace(GOOD, final_output=call), "final_output").status == "implausible"


def test_a_placeholder_and_a_repr_are_implausible():
    assert _check(replace(GOOD, user_inputs=("<elided>",)), "user_inputs").status == "implausible"
    text = "AIMessage(content='hi', id='run-1')"
    assert _check(replace(GOOD, final_output=text), "final_output").status == "implausible"


def test_a_json_answer_is_only_doubtful_structured_output_is_legitimate():
    check = _check(replace(GOOD, final_output='{"steps": [1, 2]}'), "final_output")
    assert check.status == "partial" and "structured output" in check.detail


def test_arguments_that_disagree_with_the_request_are_implausible():
    call = replace(
        GOOD.tool_calls[0],
        arguments_mismatch='the tool span recorded {"order_id": "B200"} but the model '
        'requested {"order_id": "A100"}',
    )
    check = _check(replace(GOOD, tool_calls=(call,)), "tool_arguments")
    assert check.status == "implausible" and "B200" in check.detail


def test_a_serialised_tool_message_as_the_result_is_implausible():
    result = '{"type": "tool", "data": {"content": "42.5", "tool_call_id": "c1"}}'
    call = replace(GOOD.tool_calls[0], result=result)
    assert _check(replace(GOOD, tool_calls=(call,)), "tool_results").status == "implausible"
