"""Logfire driver: the raw ``openai`` client instrumented by Logfire, in a hand-written agent.

Telemetry: ``logfire.configure(send_to_logfire=False, console=False)`` exports OTLP/HTTP to
the standard ``OTEL_EXPORTER_OTLP_ENDPOINT`` (Logfire adds an OTLP exporter when that variable
is set), then ``logfire.instrument_openai(client)`` with its default attribute format
(version 2: OpenTelemetry GenAI attributes). Logfire records message content by default.

The agent is this file: call the model with the two tools, run ``call_tool`` for each tool
call (a raised error goes back to the model as the tool message ``Error: ...``), send the
results back, until the model answers in text. Each user turn is one plain
``logfire.span("agent turn")`` so a turn's model calls share one trace; a conversation's turns
share one message list. The streaming scenario passes ``stream=True`` (with
``stream_options.include_usage``) and assembles the deltas.
"""

from __future__ import annotations

import json
from typing import Any

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, ToolFailure, call_tool, scenarios, tool_spec, turn

TOOL_NAMES = ("get_order", "track_shipment")


def tool_definitions() -> list[dict[str, Any]]:
    tools = []
    for name in TOOL_NAMES:
        spec = tool_spec(name)
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": spec["description"],
                    "parameters": {
                        "type": "object",
                        "properties": spec["parameters"],
                        "required": list(spec["parameters"]),
                    },
                },
            }
        )
    return tools


def complete(client, messages: list[dict[str, Any]], stream: bool) -> dict[str, Any]:
    """One model call; the assistant message as a dict (content, tool_calls)."""
    if not stream:
        response = client.chat.completions.create(
            model=MODEL, messages=messages, tools=tool_definitions()
        )
        return response.choices[0].message.model_dump(exclude_none=True)
    content: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    for chunk in client.chat.completions.create(
        model=MODEL,
        messages=messages,
        tools=tool_definitions(),
        stream=True,
        stream_options={"include_usage": True},
    ):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        if delta.content:
            content.append(delta.content)
        for call in delta.tool_calls or []:
            entry = calls.setdefault(
                call.index,
                {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
            )
            if call.id:
                entry["id"] = call.id
            if call.function and call.function.name:
                entry["function"]["name"] += call.function.name
            if call.function and call.function.arguments:
                entry["function"]["arguments"] += call.function.arguments
    message: dict[str, Any] = {"role": "assistant", "content": "".join(content) or None}
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    return message


def run_turn(client, messages: list[dict[str, Any]], stream: bool, max_steps: int = 8) -> str:
    """Call the model and the tools until the model answers in text."""
    for _ in range(max_steps):
        message = complete(client, messages, stream)
        messages.append(message)
        if not message.get("tool_calls"):
            return message.get("content") or ""
        for call in message["tool_calls"]:
            name = call["function"]["name"]
            try:
                result = call_tool(name, json.loads(call["function"]["arguments"] or "{}"))
            except ToolFailure as exc:
                result = f"Error: {exc}"
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise RuntimeError(f"no answer after {max_steps} model calls")


def main() -> None:
    import logfire
    from openai import OpenAI

    logfire.configure(send_to_logfire=False, console=False)
    client = OpenAI(base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    logfire.instrument_openai(client)
    for scenario in scenarios():
        messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}]
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, logfire.span("agent turn"):
                messages.append({"role": "user", "content": spec["user"]})
                record.answer = run_turn(client, messages, scenario.stream)
    logfire.force_flush()
    logfire.shutdown()


if __name__ == "__main__":
    main()
