"""Anthropic driver: a hand-written tool loop on the ``anthropic`` SDK (the Messages API, the
way Anthropic's tool-use guide writes it), instrumented by one of two instrumentations
(``FW_MODE``):

- ``openllmetry``: ``opentelemetry-instrumentation-anthropic`` (Traceloop's OpenLLMetry);
  ``AnthropicInstrumentor().instrument()`` on the global provider (``fwtools.setup_otel``);
  content capture is its default (``TRACELOOP_TRACE_CONTENT`` unset = on). Each turn is one
  plain span ``agent turn`` (no attributes of ours) so a turn's model calls share a trace,
  as a user of a bare client instrumentation writes it; the tools run without spans.
- ``openinference``: ``openinference-instrumentation-anthropic`` on OpenInference's own
  ``TracerProvider`` (its tracer has the ``@tracer.agent`` / ``@tracer.tool`` decorators
  OpenInference documents for hand-written agents): each turn is the decorated agent
  function (input: the question, output: the answer) inside ``using_session(conversation id)``,
  each tool a decorated tool function. Content capture is OpenInference's default.

The loop: ``messages.create`` with the two tools (``input_schema``), run each ``tool_use``
block, send the results back as one user message of ``tool_result`` blocks (a failed tool:
``is_error: true`` and the message), until ``stop_reason`` is not ``tool_use``. A
conversation's turns share one message list. Streaming: ``client.messages.stream(...)`` (the
SDK's helper), ``get_final_message()``. The model name comes from the setup (``FW_MODEL``);
the client reads ``ANTHROPIC_BASE_URL`` / ``ANTHROPIC_API_KEY`` (set by ``record.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import fwtools
from fwtools import MODE, MODEL, SYSTEM_PROMPT, ToolFailure, call_tool, scenarios, tool_spec, turn

TOOL_NAMES = ("get_order", "track_shipment")
MAX_TOKENS = 1024


def tool_definitions() -> list[dict[str, Any]]:
    return [
        {
            "name": name,
            "description": tool_spec(name)["description"],
            "input_schema": {
                "type": "object",
                "properties": tool_spec(name)["parameters"],
                "required": list(tool_spec(name)["parameters"]),
            },
        }
        for name in TOOL_NAMES
    ]


def ask(client: Any, messages: list[dict[str, Any]], stream: bool) -> Any:
    """One model call; the final ``Message``."""
    request = {
        "model": MODEL,
        "max_tokens": MAX_TOKENS,
        "system": SYSTEM_PROMPT,
        "messages": messages,
        "tools": tool_definitions(),
    }
    if not stream:
        return client.messages.create(**request)
    with client.messages.stream(**request) as events:
        for _ in events:
            pass
        return events.get_final_message()


def run_agent(
    client: Any,
    messages: list[dict[str, Any]],
    stream: bool,
    tools: dict[str, Callable[..., str]],
    max_steps: int = 8,
) -> str:
    """Call the model and the tools until the model answers in text."""
    for _ in range(max_steps):
        message = ask(client, messages, stream)
        messages.append({"role": "assistant", "content": message.content})
        uses = [b for b in message.content if b.type == "tool_use"]
        if message.stop_reason != "tool_use" or not uses:
            return "".join(b.text for b in message.content if b.type == "text")
        results = []
        for use in uses:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": use.id}
            try:
                block["content"] = tools[use.name](**use.input)
            except ToolFailure as exc:
                block.update(content=f"Error: {exc}", is_error=True)
            results.append(block)
        messages.append({"role": "user", "content": results})
    raise RuntimeError(f"no answer after {max_steps} model calls")


def plain_tools() -> dict[str, Callable[..., str]]:
    return {
        "get_order": lambda order_id: call_tool("get_order", {"order_id": order_id}),
        "track_shipment": lambda tracking_id: call_tool(
            "track_shipment", {"tracking_id": tracking_id}
        ),
    }


def main_openllmetry(client_factory: Callable[[], Any]) -> None:
    from opentelemetry import trace
    from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor

    provider, _ = fwtools.setup_otel()
    AnthropicInstrumentor().instrument()
    client = client_factory()
    tracer = trace.get_tracer("shop-agent")
    tools = plain_tools()
    for scenario in scenarios():
        messages: list[dict[str, Any]] = []
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, tracer.start_as_current_span("agent turn"):
                messages.append({"role": "user", "content": spec["user"]})
                record.answer = run_agent(client, messages, scenario.stream, tools)
    fwtools.shutdown(provider)


def main_openinference(client_factory: Callable[[], Any]) -> None:
    from openinference.instrumentation import TracerProvider, using_session
    from openinference.instrumentation.anthropic import AnthropicInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    AnthropicInstrumentor().instrument(tracer_provider=provider)
    tracer = provider.get_tracer("shop-agent")
    client = client_factory()

    @tracer.tool(name="get_order", description=tool_spec("get_order")["description"])
    def get_order(order_id: str) -> str:
        return call_tool("get_order", {"order_id": order_id})

    @tracer.tool(name="track_shipment", description=tool_spec("track_shipment")["description"])
    def track_shipment(tracking_id: str) -> str:
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    tools = {"get_order": get_order, "track_shipment": track_shipment}

    conversation: dict[str, Any] = {}  # the current conversation's messages and mode

    @tracer.agent(name="shop_agent")
    def shop_agent(question: str) -> str:
        messages = conversation["messages"]
        messages.append({"role": "user", "content": question})
        return run_agent(client, messages, conversation["stream"], tools)

    for scenario in scenarios():
        conversation.update(messages=[], stream=scenario.stream)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, using_session(scenario.conversation_id):
                record.answer = shop_agent(spec["user"])
    fwtools.shutdown(provider)


def main() -> None:
    import anthropic

    def client_factory() -> Any:
        return anthropic.Anthropic(base_url=os.environ["ANTHROPIC_BASE_URL"])

    if MODE == "openinference":
        main_openinference(client_factory)
    else:
        main_openllmetry(client_factory)


if __name__ == "__main__":
    main()
