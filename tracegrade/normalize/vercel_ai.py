"""The Vercel AI SDK's own telemetry (``ai`` package, ``experimental_telemetry``; the default
through AI SDK 6, ``LegacyOpenTelemetry`` in 7, whose default speaks GenAI semconv).

Spans carry ``ai.operationId``:

- ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject``: one
  call of the SDK, all its steps: an *agent* (named by ``ai.telemetry.functionId``) with the
  request in ``ai.prompt`` (JSON ``{system, prompt | messages}``), the answer in
  ``ai.response.text`` (``ai.response.object``), and ``ai.usage.*`` that **sums its steps**
  (aggregated: never added to the calls');
- ``<that>.doGenerate`` / ``.doStream``: one model call (they carry ``gen_ai.system`` and
  ``gen_ai.usage.*`` but no ``gen_ai.operation.name``): messages in ``ai.prompt.messages``
  (AI SDK parts: ``text``, ``tool-call``, ``tool-result``), the reply in ``ai.response.text``
  and ``ai.response.toolCalls`` (``[{toolCallId, toolName, input}]``, ``args`` before v5),
  ``ai.response.finishReason`` (``tool-calls``), usage in ``ai.usage.inputTokens`` /
  ``outputTokens`` (``promptTokens`` / ``completionTokens`` before v5);
- ``ai.toolCall``: a tool call, ``ai.toolCall.name`` / ``.id`` / ``.args`` / ``.result``.

The conversation is whatever the app put in ``ai.telemetry.metadata`` under a conversation,
session or thread key.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.normalize.envelopes import unwrap_result
from tracegrade.normalize.messages import (
    Message,
    Part,
    as_int,
    as_text,
    loads_maybe,
    parse_arguments,
    parse_messages,
)
from tracegrade.normalize.view import Context, SpanView, attr_str
from tracegrade.spans import Span

NAME = "vercel-ai"
OPERATION = "ai.operationId"
_CALLS = frozenset({"ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"})
_CONVERSATION_KEYS = tuple(
    f"ai.telemetry.metadata.{key}"
    for key in (
        "conversationId",
        "conversation_id",
        "sessionId",
        "session_id",
        "threadId",
        "thread_id",
    )
)


def _finish(value: Any) -> str | None:
    text = as_text(value)
    return "tool_calls" if text == "tool-calls" else text


def _prompt(value: Any) -> list[Message] | None:
    """``ai.prompt``: ``{system?, prompt?, messages?}``."""
    prompt = loads_maybe(value)
    if not isinstance(prompt, Mapping):
        return None
    messages = []
    if isinstance(prompt.get("system"), str):
        messages.append(Message("system", [Part("text", content=prompt["system"])]))
    if isinstance(prompt.get("prompt"), str):
        messages.append(Message("user", [Part("text", content=prompt["prompt"])]))
    messages += parse_messages(prompt.get("messages")) or []
    return messages or None


def _response(span: Span) -> list[Message] | None:
    attrs = span.attributes
    parts = []
    text = as_text(attrs.get("ai.response.text"))
    if text:
        parts.append(Part("text", content=text))
    calls = loads_maybe(attrs.get("ai.response.toolCalls"))
    for call in calls if isinstance(calls, (list, tuple)) else ():
        if isinstance(call, Mapping):
            arguments = call.get("input", call.get("args"))
            parts.append(
                Part(
                    "tool_call",
                    id=as_text(call.get("toolCallId")),
                    name=as_text(call.get("toolName")),
                    arguments=parse_arguments(arguments),
                    arguments_recorded="input" in call or "args" in call,
                )
            )
    if not parts:
        return None
    return [Message("assistant", parts, _finish(attrs.get("ai.response.finishReason")))]


def _usage(span: Span, view: SpanView, *, aggregated: bool) -> None:
    attrs = span.attributes
    tokens_in = as_int(attrs.get("ai.usage.inputTokens", attrs.get("ai.usage.promptTokens")))
    tokens_out = as_int(attrs.get("ai.usage.outputTokens", attrs.get("ai.usage.completionTokens")))
    if (tokens_in is None and tokens_out is None) or view.has_usage:
        return
    view.usage_aggregated = aggregated
    view.fill(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cached_input_tokens=as_int(
            attrs.get(
                "ai.usage.inputTokenDetails.cacheReadTokens",
                attrs.get("ai.usage.cachedInputTokens"),
            )
        ),
    )


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from the AI SDK's ``ai.*`` attributes; True if the span is one of its."""
    operation = span.attributes.get(OPERATION)
    if operation is None:
        return False
    operation = str(operation)
    attrs = span.attributes
    view.fill(conversation_id=attr_str(span, *_CONVERSATION_KEYS))
    if operation in _CALLS:
        view.recognise(NAME, "agent")
        view.fill(
            agent_name=attr_str(span, "ai.telemetry.functionId"),
            input_messages=_prompt(attrs.get("ai.prompt")),
            output_text=as_text(attrs.get("ai.response.text"))
            or as_text(attrs.get("ai.response.object")),
        )
        _usage(span, view, aggregated=True)
    elif operation.rsplit(".", 1)[-1] in ("doGenerate", "doStream"):
        view.recognise(NAME, "llm")
        view.fill(
            model=attr_str(span, "ai.response.model", "ai.model.id"),
            provider=attr_str(span, "ai.model.provider"),
            input_messages=parse_messages(attrs.get("ai.prompt.messages")),
            output_messages=_response(span),
            finish_reasons=(f,) if (f := _finish(attrs.get("ai.response.finishReason"))) else None,
        )
        _usage(span, view, aggregated=False)
    elif operation == "ai.toolCall":
        view.recognise(NAME, "tool")
        view.fill(
            tool_name=attr_str(span, "ai.toolCall.name"),
            tool_call_id=attr_str(span, "ai.toolCall.id"),
            tool_result=unwrap_result(attrs.get("ai.toolCall.result")),
        )
        if "ai.toolCall.args" in attrs:
            view.fill(tool_arguments=parse_arguments(attrs["ai.toolCall.args"]))
    else:
        view.recognise(NAME)
    return True
