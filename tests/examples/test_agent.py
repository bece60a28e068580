"""The example agent in-process: its spans (GenAI semconv, children of the caller's span),
its tool loop and its input validation, against the scripted model."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.trace import StatusCode

from examples.ecommerce.agent import (
    AGENT_NAME,
    MAX_MODEL_CALLS,
    StepLimitError,
    answer,
    conversation_of,
)
from tests.examples.conftest import scripted_server
from tests.support.openai_server import text, tool_calls

ORDER = "550e8400-e29b-41d4-a716-446655440002"


@pytest.fixture
def listed_model(monkeypatch):
    """Start a ScriptedOpenAI serving a list of replies, the agent pointed at it."""
    servers = []

    def start(*replies):
        server = scripted_server(list(replies)).start()
        servers.append(server)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        return server

    yield start
    for server in servers:
        server.stop()


def _by_name(exporter):
    return {s.name: s for s in exporter.get_finished_spans()}


def test_spans_are_children_of_the_current_span(spans, model):
    model("good")
    with trace.get_tracer("test").start_as_current_span("case root") as root:
        answer(f"Where is my package for order {ORDER}? I want tracking info.")
    named = _by_name(spans)
    agent, tool = named[f"invoke_agent {AGENT_NAME}"], named["execute_tool get_order_tracking"]
    chats = [s for s in spans.get_finished_spans() if s.name == "chat gpt-4o-mini"]
    assert agent.parent.span_id == root.get_span_context().span_id
    assert {s.context.trace_id for s in spans.get_finished_spans()} == {
        root.get_span_context().trace_id
    }
    assert tool.parent.span_id == agent.context.span_id
    assert len(chats) == 2 and all(c.parent.span_id == agent.context.span_id for c in chats)


def test_agent_leaves_the_global_tracer_provider_alone(spans, model):
    before = trace.get_tracer_provider()
    model("good")
    answer("Show me my recent orders")
    assert trace.get_tracer_provider() is before


def test_tool_span_carries_semconv_attributes(spans, model):
    model("good")
    answer(f"Where is my package for order {ORDER}? I want tracking info.")
    tool = _by_name(spans)["execute_tool get_order_tracking"]
    attributes = dict(tool.attributes)
    assert attributes["gen_ai.operation.name"] == "execute_tool"
    assert attributes["gen_ai.tool.name"] == "get_order_tracking"
    assert attributes["gen_ai.tool.type"] == "function"
    assert attributes["gen_ai.tool.call.id"].startswith("call_")
    assert json.loads(attributes["gen_ai.tool.call.arguments"]) == {"order_id": ORDER}
    assert json.loads(attributes["gen_ai.tool.call.result"])["tracking_number"] == "794612345678"


def test_agent_span_records_conversation_and_summed_usage(spans, model):
    model("good")
    reply = answer("Show me my recent orders")
    attributes = dict(_by_name(spans)[f"invoke_agent {AGENT_NAME}"].attributes)
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == AGENT_NAME
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    # ScriptedOpenAI reports 25 input / 12 output tokens per call; two calls
    assert (attributes["gen_ai.usage.input_tokens"], attributes["gen_ai.usage.output_tokens"]) == (
        50,
        24,
    )
    assert json.loads(attributes["gen_ai.input.messages"]) == [
        {"role": "user", "parts": [{"type": "text", "content": "Show me my recent orders"}]}
    ]
    assert json.loads(attributes["gen_ai.output.messages"])[0]["parts"][0]["content"] == reply


def test_no_content_mode_keeps_content_off_the_agents_spans(spans, model, monkeypatch):
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "no_content")
    model("good")
    answer("Show me my recent orders")
    named = _by_name(spans)
    for name in (f"invoke_agent {AGENT_NAME}", "execute_tool get_user_orders"):
        keys = set(named[name].attributes)
        assert not keys & {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.system_instructions",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }, name


def test_failed_tool_is_an_error_span_and_the_model_sees_why(spans, listed_model):
    server = listed_model(
        tool_calls(("get_order_details", {"order_id": "no-such-order"})),
        text("I couldn't find that order."),
    )
    assert answer("What is in order no-such-order?") == "I couldn't find that order."
    tool = _by_name(spans)["execute_tool get_order_details"]
    assert tool.status.status_code is StatusCode.ERROR
    assert tool.attributes["error.type"] == "ToolError"
    assert "gen_ai.tool.call.result" not in tool.attributes
    sent = server.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and json.loads(sent["content"]) == {
        "error": "no order with id 'no-such-order' for this customer"
    }


def test_tool_definitions_are_sent_to_the_model(spans, listed_model):
    server = listed_model(text("Hello! How can I help?"))
    answer("hi")
    names = {t["function"]["name"] for t in server.requests[0]["tools"]}
    assert {"search_products", "get_order_tracking", "cancel_order", "initiate_return"} <= names
    assert server.requests[0]["messages"][0]["role"] == "system"


def test_model_that_never_stops_calling_tools_hits_the_step_limit(spans, listed_model):
    listed_model(*[tool_calls(("get_user_orders", {}))] * MAX_MODEL_CALLS)
    with pytest.raises(StepLimitError, match=f"no answer after {MAX_MODEL_CALLS} model calls"):
        answer("Show me my recent orders")
    agent = _by_name(spans)[f"invoke_agent {AGENT_NAME}"]
    assert agent.status.status_code is StatusCode.ERROR


def test_message_list_is_sent_in_order(spans, listed_model):
    server = listed_model(text("Sure."))
    conversation = [
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "reply"},
        {"role": "user", "content": "second"},
    ]
    assert answer(conversation) == "Sure."
    assert server.requests[0]["messages"][1:] == conversation


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("  ", "the user message is empty"),
        ([], "the conversation must end with a user message"),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "the conversation must end with a user message",
        ),
        ([{"role": "system", "content": "x"}], "message 0: expected"),
        ([{"role": "user", "content": 3}], "message 0: expected"),
    ],
)
def test_malformed_input_is_a_clear_error(message, error):
    with pytest.raises(ValueError, match=error):
        conversation_of(message)
