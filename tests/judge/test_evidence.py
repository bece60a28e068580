"""What the judge sees: user input, tool calls with results, final answer; held to a budget
with the truncation stated."""

from __future__ import annotations

import dataclasses
import json

from tracegrade.judge.evidence import allocate, build_evidence, estimate_tokens
from tracegrade.trace import AgentTrace, ToolCall


def test_real_trace_evidence_has_inputs_tool_results_and_answer(contradiction):
    evidence = build_evidence(contradiction, 6000)
    assert not evidence.truncated and evidence.notes == ()
    text = evidence.text
    document = json.loads(text)
    assert list(document) == ["user_inputs", "tool_calls", "final_answer"]
    assert document["user_inputs"] == list(contradiction.user_inputs)
    assert document["tool_calls"][3] == {
        "call": 4,
        "tool": "calculate",
        "arguments": '{"expression": "(136 - (94 + 80)) * 3"}',
        "result": "-114.0",
    }
    assert document["final_answer"] == contradiction.final_output
    assert evidence.estimated_tokens == estimate_tokens(text) <= 6000


def test_over_budget_results_are_cut_and_the_cut_is_stated(contradiction):
    evidence = build_evidence(contradiction, 600)
    assert evidence.truncated
    document = json.loads(evidence.text)
    assert document["truncated"].startswith(
        "this evidence was truncated to fit a budget of about 600 tokens"
    )
    assert "…[cut: " in evidence.text
    assert any(
        n.startswith("the results of 4 tool call(s) are cut (calls 1, 2, 3, 5)")
        for n in evidence.notes
    )
    assert document["final_answer"] == contradiction.final_output
    assert document["tool_calls"][3]["result"] == "-114.0"  # short results keep their share
    assert evidence.estimated_tokens <= 600


def _calls(n: int) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(f"lookup_{i}", f"c{i}", {"q": "x" * 300}, "r" * 500) for i in range(n))


def test_when_headers_do_not_fit_middle_calls_are_dropped_and_counted():
    trace = AgentTrace("t", ("question",), "answer", (), _calls(60))
    evidence = build_evidence(trace, 2000)
    calls = json.loads(evidence.text)["tool_calls"]
    assert calls[0]["tool"] == "lookup_0" and calls[-1] == {**calls[-1], "call": 60}
    dropped = next(n for n in evidence.notes if "tool calls omitted" in n)
    assert dropped.endswith("of 60 tool calls omitted (calls " + dropped.split("(calls ")[1])
    assert "tool calls omitted to fit the budget" in evidence.text
    assert evidence.estimated_tokens <= 2000


def test_missing_results_are_said_not_silent():
    calls = tuple(dataclasses.replace(c, result=None) for c in _calls(1))
    trace = AgentTrace("t", ("question",), "answer", (), calls)
    (call,) = json.loads(build_evidence(trace).text)["tool_calls"]
    assert call["result"] == "(no result recorded)"


def test_allocate_is_max_min_fair():
    assert allocate([10, 500, 1000], 600) == [10, 295, 295]
    assert allocate([10, 20], 600) == [10, 20]
