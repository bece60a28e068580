"""GenAI semantic conventions <= v1.36: message content in log events (the ``legacy_messages``
decoder of the ``genai-events`` map).

Instrumentations of that era (opentelemetry-instrumentation-openai-v2 in its default mode,
Agent Framework's Python logs) emit one log record per message, joined to the span by its
span id: ``gen_ai.system.message``, ``gen_ai.user.message``, ``gen_ai.assistant.message``
(``{content?, tool_calls: [{id, type, function: {name, arguments}}]}``, arguments the raw JSON
string), ``gen_ai.tool.message`` (``{content, id}``, ``id`` = the tool-call id) and
``gen_ai.choice`` (``{index, finish_reason, message: {...}}``; ``tool_calls`` under ``message``,
or at body level as the spec YAML has it). The event name is ``LogRecord.event_name`` or,
from older SDKs, the attribute ``event.name``.

Why this is a decoder and not a map: the messages are spread over several records whose
*names* give the roles, the output is the ``gen_ai.choice`` records ordered by their
``index`` (else the trailing assistant messages), and a tool span's events mean the call's
input and result (Strands Agents) - an order and a grouping, not an attribute per field.

With content capture on, openai-v2 still omits a falsy ``content`` (``if capture_content and
content``), so a ``gen_ai.tool.message`` without content in a span whose other events carry
content is an empty result, not a missing one.

The same event dicts also appear inlined in an ``events`` span attribute (pydantic-ai
instrumentation version 1, Logfire's OpenAI Agents spans); those are read here too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracegrade.normalize.messages import (
    TOOL_MESSAGE_EVENT,
    Message,
    block_text,
    completed,
    loads_maybe,
    parse_arguments,
    parse_message,
)
from tracegrade.normalize.view import SpanView

EVENT_NAMES = frozenset(
    {
        "gen_ai.system.message",
        "gen_ai.user.message",
        "gen_ai.assistant.message",
        "gen_ai.tool.message",
        "gen_ai.choice",
    }
)


def split_events(events: Iterable[tuple[str, Any]]) -> tuple[list[Message], list[Message]]:
    """(input messages, output messages) from ``(event name, body)`` pairs in order.

    ``gen_ai.choice`` events are the output (ordered by their ``index``); without any, the
    assistant messages after the last non-assistant message are.
    """
    inputs: list[Message] = []
    choices: list[tuple[int, Message]] = []
    for name, body in events:
        message = parse_message(body, name)
        if message is None:
            continue
        if name == "gen_ai.choice":
            index = body.get("index", len(choices)) if isinstance(body, Mapping) else len(choices)
            choices.append((int(index) if str(index).isdigit() else len(choices), message))
        else:
            inputs.append(message)
    if choices:
        return inputs, completed([m for _, m in sorted(choices, key=lambda c: c[0])]) or []
    cut = len(inputs)
    while cut > 0 and inputs[cut - 1].role == "assistant":
        cut -= 1
    return inputs[:cut], inputs[cut:]


def _empty_results_are_empty(messages: list[Message]) -> None:
    for message in messages:
        for part in message.tool_responses:
            if part.response is None:
                part.response = ""


def inlined(value: Any) -> list[tuple[str, Any]]:
    """``(event name, body)`` pairs of an ``events`` attribute holding event dicts."""
    events = loads_maybe(value)
    if not isinstance(events, (list, tuple)):
        return []
    return [
        (str(e.get("event.name")), e)
        for e in events
        if isinstance(e, Mapping) and e.get("event.name") in EVENT_NAMES
    ]


LLM_OPERATIONS = frozenset(
    {"chat", "text_completion", "generate_content", "completion", "responses"}
)


def _read_tool_events(events: list[tuple[str, Any]], view: SpanView) -> bool:
    """Events on a tool span (Strands Agents): ``gen_ai.tool.message`` holds the call's
    input and ``gen_ai.choice`` its result, when a choice is there; without one, the tool
    message is the result (Agent Framework logs it so)."""
    choices = [body for name, body in events if name == "gen_ai.choice"]
    if not choices:
        return False
    body = choices[-1]
    result = body.get("message") if isinstance(body, Mapping) else body
    view.fill(tool_result=block_text(result))
    for name, body in events:
        if name == TOOL_MESSAGE_EVENT and isinstance(body, Mapping) and "content" in body:
            view.fill(tool_arguments=parse_arguments(body["content"]))
            view.fill(tool_call_id=body.get("id") or None)
    return True


def _placeholder_only(messages: list[Message]) -> str | None:
    """The placeholder, when every part of every message is one (or carries nothing)."""
    parts = [p for m in messages for p in m.parts]
    found = [p.content for p in parts if p.type == "placeholder"]
    if found and all(p.type == "placeholder" or not (p.content or p.name) for p in parts):
        return found[0]
    return None


def read_events(events: list[tuple[str, Any]], view: SpanView, operation: str | None) -> bool:
    """Fill the view's messages from a span's legacy events (module docstring); True when
    they held any. A ``gen_ai.choice`` makes the span an LLM call unless its operation
    (``gen_ai.operation.name``) says it is something else (an agent, a tool, an event loop)."""
    if not events:
        return False
    if operation == "execute_tool" and _read_tool_events(events, view):
        return True
    inputs, outputs = split_events(events)
    placeholder = _placeholder_only([*inputs, *outputs])
    if placeholder is not None:  # content not captured: the messages are no record
        view.content_placeholder = placeholder
        inputs, outputs = [], []
    if any(isinstance(body, Mapping) and "content" in body for _, body in events):
        _empty_results_are_empty(inputs)
    is_call = any(name == "gen_ai.choice" for name, _ in events) and (
        operation is None or operation in LLM_OPERATIONS
    )
    if is_call and view.role is None:
        view.role = "llm"
    view.fill(input_messages=inputs or None, output_messages=outputs or None)
    if outputs and outputs[-1].finish_reason:
        view.fill(finish_reasons=tuple(m.finish_reason for m in outputs if m.finish_reason))
    return True
