"""Issue 23 rule 1-2: framework envelopes are unwrapped to the text they hold, or left to the
LLM spans; tool results lose their envelopes. Shapes quoted from the recordings in
``tests/data/frameworks`` (LangGraph, OpenLLMetry, CrewAI, smolagents, Strands, ADK)."""

from __future__ import annotations

import json

import pytest

from tracegrade.normalize.envelopes import input_text, output_text, unwrap_result

HUMAN = {"type": "human", "data": {"content": "What is the total of order A100?"}}
AI_CALL = {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "get_order", "args": {}}]}}
AI_TEXT = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "messages", "AIMessage"],
    "kwargs": {"content": "Order A100 totals $42.50."},
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"messages": [{"role": "user", "content": "hi there"}]}', "hi there"),
        (
            json.dumps(
                {
                    "inputs": {"messages": [{"role": "user", "content": "hi there"}]},
                    "tags": [],
                    "metadata": {"thread_id": "t"},
                    "kwargs": {"name": "LangGraph"},
                }
            ),
            "hi there",
        ),
        ('{"task": "find order A100", "stream": false, "reset": true}', "find order A100"),
        ('{"question": "find order A100"}', "find order A100"),
        ('{"args": ["find order A100"], "kwargs": {}}', "find order A100"),
        ("plain text input", "plain text input"),
        ('{"order_id": "A100", "verbose": true}', None),
        ("<elided>", None),
        ("AgentInput(text='hi', session=3)", None),
    ],
)
def test_input_text(value, expected):
    assert input_text(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (json.dumps({"messages": [HUMAN, AI_CALL, AI_TEXT]}), "Order A100 totals $42.50."),
        (
            json.dumps({"outputs": {"messages": [HUMAN, AI_TEXT]}, "kwargs": {}}),
            "Order A100 totals $42.50.",
        ),
        (json.dumps({"messages": [HUMAN, AI_CALL]}), None),
        (
            '{"raw": "Order A100 totals $42.50.", "pydantic": null, "tasks_output": []}',
            "Order A100 totals $42.50.",
        ),
        ('[{"text": "Order A100 "}, {"text": "totals $42.50."}]', "Order A100 totals $42.50."),
        ('"Order A100 totals $42.50."', "Order A100 totals $42.50."),
        ("<crewai.types.streaming.CrewStreamingOutput object at 0x7f3a2b1c>", None),
        ("null", None),
    ],
)
def test_output_text(value, expected):
    assert output_text(value) == expected


TOOL_MESSAGE = {
    "lc": 1,
    "type": "constructor",
    "id": ["langchain", "schema", "messages", "ToolMessage"],
    "kwargs": {"content": '{"total_usd": 42.5}', "tool_call_id": "call_1"},
}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (
            json.dumps({"output": TOOL_MESSAGE, "kwargs": {"name": "get_order"}}),
            '{"total_usd": 42.5}',
        ),
        (json.dumps({"type": "tool", "data": {"content": "42.5", "tool_call_id": "c"}}), "42.5"),
        ('[{"text": "{\\"total_usd\\": 42.5}"}]', '{"total_usd": 42.5}'),
        ('{"result": "{\\"total_usd\\": 42.5}"}', '{"total_usd": 42.5}'),
        ('"{\\"total_usd\\": 42.5}"', '{"total_usd": 42.5}'),
        ('{"total_usd": 42.5, "task": "ship"}', '{"total_usd": 42.5, "task": "ship"}'),
        ("plain result", "plain result"),
    ],
)
def test_unwrap_result(value, expected):
    assert unwrap_result(value) == expected
