"""OpenLLMetry / Traceloop conventions: SDK decorators, and the legacy flattened LLM format.

**Decorators** (``@workflow``, ``@task``, ``@agent``, ``@tool``): spans named
``{entity}.{kind}`` with ``traceloop.span.kind`` (``workflow`` -> workflow, ``agent`` ->
agent, ``tool`` -> tool), ``traceloop.entity.name``, ``traceloop.entity.input`` (JSON
``{"args": [...], "kwargs": {...}}``; LangChain wraps it as ``{input_str, inputs, ...}``) and
``traceloop.entity.output`` (the JSON of the return value, so a string result is JSON-encoded
twice). Tool spans carry no call id: the assembler joins them to the model's tool calls by
name and order. The session is ``traceloop.association.properties.session_id``. The LangChain
instrumentation records a retriever as a ``task`` span named ``vector_db_retrieve {name}``
with ``gen_ai.operation.name=vector_db_retrieve``, the query in ``traceloop.entity.input``
(``{"query": ..., "tags", "metadata", "kwargs"}``) and the documents in
``traceloop.entity.output`` (``{"documents": [{"page_content", "metadata"}], "count"}``).

**Legacy flattened LLM spans** (semconv-ai <= 0.4, OpenAI instrumentation until March 2026):
``llm.request.type`` (``chat``/``completion``), ``gen_ai.prompt.{i}.{role,content,
tool_call_id,tool_calls.{j}.{id,name,arguments}}``, ``gen_ai.completion.{i}.{role,content,
finish_reason,tool_calls.{j}.*}``, usage in ``gen_ai.usage.prompt_tokens`` /
``completion_tokens`` (or ``input_tokens``/``output_tokens``) and
``gen_ai.usage.cache_read_input_tokens``. The current format (semconv-ai 0.5) uses the GenAI
content attributes and is read by :mod:`.genai`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracegrade.normalize import envelopes
from tracegrade.normalize.documents import parse_documents
from tracegrade.normalize.messages import Message, as_int, indexed_items, parse_message
from tracegrade.normalize.view import Context, Role, SpanView, attr_str
from tracegrade.spans import Span

NAME = "traceloop"
KIND_ATTR = "traceloop.span.kind"
_ROLES: dict[str, Role] = {"workflow": "workflow", "agent": "agent", "tool": "tool"}
RETRIEVE_OPERATION = "vector_db_retrieve"
"""``gen_ai.operation.name`` of OpenLLMetry's LangChain retriever spans."""


def decode_entity(value: Any) -> Any:
    """Decode ``traceloop.entity.input``/``output`` once (they hold the JSON of a value)."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError:
        return value


def tool_arguments(raw_input: Any) -> Any:
    """Tool arguments from an entity input envelope: ``kwargs``, LangChain ``inputs``, a single
    positional dict, or the positional list."""
    value = decode_entity(raw_input)
    if not isinstance(value, Mapping):
        return value
    if isinstance(value.get("inputs"), Mapping):
        return dict(value["inputs"])
    if "input_str" in value:
        return decode_entity(value["input_str"])
    kwargs, args = value.get("kwargs") or {}, value.get("args") or []
    if kwargs or not args:
        return dict(kwargs)
    return args[0] if len(args) == 1 and isinstance(args[0], Mapping) else list(args)


def _flat_message(
    position: int, item: Mapping[str, Any], default_role: str | None
) -> Message | None:
    """One flattened message; ``None`` for a prompt item without a role (the SDK's attribute
    limit dropped its first keys: its role is unknown, so it is not taken for a user turn)."""
    raw = dict(item)
    if default_role is not None:
        raw.setdefault("role", default_role)
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        raw["tool_calls"] = [c for c in calls if isinstance(c, Mapping)]
    message = parse_message(raw)
    if message is not None:
        message.position = position
    return message


def _read_legacy_llm(span: Span, view: SpanView) -> bool:
    attrs = span.attributes
    prompts = (
        indexed_items(attrs, "gen_ai.prompt.") if view.has_key_prefix("gen_ai.prompt.") else []
    )
    completions = (
        indexed_items(attrs, "gen_ai.completion.")
        if view.has_key_prefix("gen_ai.completion.")
        else []
    )
    if not (prompts or completions or "llm.request.type" in attrs):
        return False
    role: Role | None = (
        "llm" if str(attrs.get("llm.request.type", "chat")) in ("chat", "completion") else None
    )
    view.recognise(NAME, role)
    outputs = [m for m in (_flat_message(i, c, "assistant") for i, c in completions) if m]
    view.fill(
        input_messages=[m for m in (_flat_message(i, p, None) for i, p in prompts) if m] or None,
        output_messages=outputs or None,
        finish_reasons=tuple(m.finish_reason for m in outputs if m.finish_reason) or None,
        cached_input_tokens=as_int(attrs.get("gen_ai.usage.cache_read_input_tokens")),
    )
    return True


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from Traceloop attributes; True if any were found."""
    attrs = span.attributes
    found = _read_legacy_llm(span, view)
    kind = attrs.get(KIND_ATTR)
    session = attr_str(
        span,
        "traceloop.association.properties.session_id",
        "traceloop.association.properties.thread_id",
    )
    if kind is None:
        if session:
            view.fill(conversation_id=session)
        return found
    role: Role | None = _ROLES.get(str(kind))
    if attrs.get("gen_ai.operation.name") == RETRIEVE_OPERATION:
        role = "retriever"
    view.recognise(NAME, role)
    entity = attr_str(span, "traceloop.entity.name")
    view.fill(conversation_id=session)
    if role == "tool":
        view.fill(
            tool_name=attr_str(span, "gen_ai.tool.name", "gen_ai.completion.tool.name") or entity,
            tool_result=envelopes.unwrap_result(attrs.get("traceloop.entity.output")),
        )
        if "traceloop.entity.input" in attrs:
            view.fill(tool_arguments=tool_arguments(attrs["traceloop.entity.input"]))
    elif role == "retriever":
        query = decode_entity(attrs.get("traceloop.entity.input"))
        view.fill(
            retrieval_query=query["query"]
            if isinstance(query, Mapping) and isinstance(query.get("query"), str)
            else None,
            documents=parse_documents(attrs.get("traceloop.entity.output")),
            data_source=entity,
        )
    elif role in ("agent", "workflow"):
        view.fill(
            agent_name=entity if role == "agent" else None,
            input_text=envelopes.input_text(attrs.get("traceloop.entity.input")),
            output_text=envelopes.output_text(attrs.get("traceloop.entity.output")),
        )
    return True
