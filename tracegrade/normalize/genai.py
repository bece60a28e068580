"""OpenTelemetry GenAI semantic conventions, current shape (v1.37+, and the genai repo).

Reads ``gen_ai.operation.name`` (``chat``/``text_completion``/``generate_content`` -> LLM call,
``invoke_agent`` -> agent, ``execute_tool`` -> tool, ``invoke_workflow`` -> workflow), model
(``gen_ai.response.model``, else ``gen_ai.request.model``), provider (``gen_ai.provider.name``,
else the older ``gen_ai.system``), usage (``gen_ai.usage.input_tokens`` /
``gen_ai.usage.output_tokens``; cached input from ``gen_ai.usage.cache_read.input_tokens``),
``gen_ai.response.finish_reasons``, the content attributes ``gen_ai.input.messages`` /
``gen_ai.output.messages`` (JSON strings or structured), ``gen_ai.agent.name``,
``gen_ai.conversation.id`` (else ``session.id``, the session semconv Strands Agents
uses) and the tool attributes ``gen_ai.tool.name``,
``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``.
A ``retrieval`` operation (the genai repo's retrieval span) is a retrieval: the query in
``gen_ai.retrieval.query.text``, the documents in ``gen_ai.retrieval.documents`` (a list of
``{id, score, ...}``, the text under ``content``; JSON string or structured), the data
source in ``gen_ai.data_source.id``.

With capture mode ``event_only`` (or ``span_and_event``) the content goes to the log event
``gen_ai.client.inference.operation.details``, joined to the span by span id, whose
*attributes* carry the same keys structured; they fill what the span lacks.

Usage on an ``invoke_agent`` span sums its inner LLM calls (util-genai, Agent Framework),
so it is marked aggregated and never added to them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.normalize.documents import parse_documents
from tracegrade.normalize.envelopes import unwrap_result
from tracegrade.normalize.messages import (
    as_int,
    as_str_list,
    as_text,
    completed,
    loads_maybe,
    parse_arguments,
    parse_messages,
)
from tracegrade.normalize.view import Context, Role, SpanView, attr_str
from tracegrade.spans import Span

NAME = "genai"

LLM_OPERATIONS = frozenset(
    {"chat", "text_completion", "generate_content", "completion", "responses"}
)
_ROLES: dict[str, Role] = {
    **{op: "llm" for op in LLM_OPERATIONS},
    "invoke_agent": "agent",
    "execute_tool": "tool",
    "invoke_workflow": "workflow",
    "retrieval": "retriever",
}


_CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages")


def _role(span: Span) -> Role | None:
    """The role from ``gen_ai.operation.name``; without one, a span named after an LLM
    operation (``chat gpt-4``) that names a provider or carries content is an LLM call, and a
    span with ``gen_ai.tool.name`` a tool."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation is not None:
        return _ROLES.get(str(operation))
    if span.name.split(" ", 1)[0] in LLM_OPERATIONS and (
        "gen_ai.provider.name" in attrs
        or "gen_ai.system" in attrs
        or any(k in attrs for k in _CONTENT_KEYS)
    ):
        return "llm"
    if "gen_ai.tool.name" in attrs:
        return "tool"
    return None


DETAILS_EVENT = "gen_ai.client.inference.operation.details"
_DETAILS = frozenset({DETAILS_EVENT})


def _read_content(source: Mapping[str, Any], view: SpanView) -> None:
    """Messages and system instructions from ``source`` (the span's attributes or a details
    event's) into the fields still empty; a filled field's value is not parsed at all."""
    if view.input_messages is None:
        view.input_messages = parse_messages(source.get("gen_ai.input.messages"))
    if view.output_messages is None:
        view.output_messages = completed(parse_messages(source.get("gen_ai.output.messages")))
    if view.system_instructions is None:
        view.system_instructions = system_text(source.get("gen_ai.system_instructions"))


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from GenAI semconv attributes; True if the span carries any."""
    if not view.has_key_prefix("gen_ai."):
        return False
    attrs = span.attributes
    view.recognise(NAME, _role(span))
    _read_content(attrs, view)
    for event in context.events_for(span, _DETAILS):
        _read_content(event.attributes, view)
    if view.model is None:
        view.model = attr_str(span, "gen_ai.response.model", "gen_ai.request.model")
    if view.provider is None:
        view.provider = attr_str(span, "gen_ai.provider.name", "gen_ai.system")
    if view.agent_name is None:
        view.agent_name = attr_str(span, "gen_ai.agent.name")
    if view.conversation_id is None:
        view.conversation_id = attr_str(span, "gen_ai.conversation.id", "session.id")
    if view.finish_reasons == ():
        view.finish_reasons = as_str_list(attrs.get("gen_ai.response.finish_reasons"))
    _read_usage(span, view, aggregated=view.role in ("agent", "workflow"))
    if view.role == "tool":
        _read_tool(span, view)
    elif view.role == "retriever":
        _read_retrieval(span, view)
    return True


def _read_retrieval(span: Span, view: SpanView) -> None:
    attrs = span.attributes
    view.fill(
        retrieval_query=attr_str(span, "gen_ai.retrieval.query.text"),
        documents=parse_documents(attrs.get("gen_ai.retrieval.documents")),
        data_source=attr_str(span, "gen_ai.data_source.id"),
    )


def system_text(value: object) -> str | None:
    """The text of ``gen_ai.system_instructions``: a parts array (JSON string or structured)
    or a plain string."""
    value = loads_maybe(value)
    if isinstance(value, (list, tuple)):
        texts = [
            text for p in value if isinstance(p, dict) and isinstance(text := p.get("content"), str)
        ]
        return "\n".join(texts) or None
    return as_text(value) if value else None


def _read_usage(span: Span, view: SpanView, *, aggregated: bool) -> None:
    attrs = span.attributes
    input_tokens = as_int(attrs.get("gen_ai.usage.input_tokens"))
    output_tokens = as_int(attrs.get("gen_ai.usage.output_tokens"))
    if input_tokens is None and output_tokens is None:
        return
    if not view.has_usage:
        view.usage_aggregated = aggregated
    view.fill(
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=as_int(
            attrs.get(
                "gen_ai.usage.cache_read.input_tokens",
                attrs.get("gen_ai.usage.cache_read_input_tokens"),
            )
        ),
    )


def _read_tool(span: Span, view: SpanView) -> None:
    attrs = span.attributes
    view.fill(
        tool_name=attr_str(span, "gen_ai.tool.name"),
        tool_call_id=attr_str(span, "gen_ai.tool.call.id"),
        tool_result=unwrap_result(attrs.get("gen_ai.tool.call.result")),
    )
    if "gen_ai.tool.call.arguments" in attrs:
        view.fill(tool_arguments=parse_arguments(attrs["gen_ai.tool.call.arguments"]))
