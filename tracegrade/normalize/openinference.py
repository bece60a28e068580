"""OpenInference (Arize) span conventions.

``openinference.span.kind`` gives the role: ``LLM`` -> LLM call, ``TOOL`` -> tool, ``AGENT``
-> agent, ``CHAIN`` -> workflow. LLM spans flatten their messages into zero-based indexed keys
``llm.input_messages.{i}.message.*`` / ``llm.output_messages.{i}.message.*`` (``role``,
``content`` or ``contents.{j}.message_content.text``, ``tool_calls.{k}.tool_call.id`` /
``.function.name`` / ``.function.arguments``, ``tool_call_id`` and ``name`` on tool results),
tokens in ``llm.token_count.prompt`` / ``.completion`` / ``.prompt_details.cache_read``, the
model in ``llm.model_name``. TOOL spans carry ``tool.name``, ``tool.id`` (the call id), the
arguments in ``input.value`` (JSON) and the result in ``output.value``. Converters put the
actual arguments in ``tool.parameters``, which the spec defines as the parameter schema: it
is used only when ``input.value`` is absent and it does not look like a JSON schema. AGENT and
CHAIN spans carry the user input in ``input.value`` and the answer in ``output.value``;
``session.id`` is the conversation. ``RETRIEVER`` spans (LangChain retrievers, LlamaIndex
retrievers) carry the query in ``input.value`` and the documents in
``retrieval.documents.{i}.document.{id, content, score, metadata}`` (:mod:`.documents`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.normalize import envelopes
from tracegrade.normalize.documents import flattened_documents
from tracegrade.normalize.messages import (
    Message,
    as_int,
    indexed_items,
    loads_maybe,
    parse_arguments,
    parse_message,
)
from tracegrade.normalize.view import Context, Role, SpanView, attr_str
from tracegrade.spans import Span

NAME = "openinference"
KIND_ATTR = "openinference.span.kind"
_ROLES: dict[str, Role] = {
    "LLM": "llm",
    "TOOL": "tool",
    "AGENT": "agent",
    "CHAIN": "workflow",
    "RETRIEVER": "retriever",
}
DOCUMENTS_PREFIX = "retrieval.documents."


def _message(item: Mapping[str, Any]) -> Message | None:
    raw = found if isinstance(found := item.get("message"), Mapping) else item
    content = raw.get("content")
    if content is None and isinstance(raw.get("contents"), list):
        content = [c.get("message_content", {}) for c in raw["contents"] if isinstance(c, Mapping)]
    calls = [c.get("tool_call", c) for c in raw.get("tool_calls") or [] if isinstance(c, Mapping)]
    return parse_message(
        {
            "role": raw.get("role") or "",
            "content": content,
            "tool_calls": calls,
            "tool_call_id": raw.get("tool_call_id"),
            "name": raw.get("name"),
        }
    )


def messages(attributes: Mapping[str, Any], prefix: str) -> list[Message] | None:
    """The messages under a flattened ``prefix`` (e.g. ``llm.input_messages.``), or None."""
    items = indexed_items(attributes, prefix)
    if not items:
        return None
    messages = []
    for position, item in items:
        message = _message(item)
        if message is not None:
            message.position = position
            messages.append(message)
    return messages


def _looks_like_schema(value: Any) -> bool:
    return isinstance(value, Mapping) and value.get("type") == "object" and "properties" in value


def _read_llm(span: Span, view: SpanView) -> None:
    attrs = span.attributes
    outputs = messages(attrs, "llm.output_messages.")
    finish = attr_str(span, "llm.finish_reason")
    if finish is None and outputs:
        finish = "tool_calls" if any(m.tool_calls for m in outputs) else None
    view.fill(
        model=attr_str(span, "llm.response.model_name", "llm.model_name", "llm.request.model_name"),
        provider=attr_str(span, "llm.provider", "llm.system"),
        input_tokens=as_int(attrs.get("llm.token_count.prompt")),
        output_tokens=as_int(attrs.get("llm.token_count.completion")),
        cached_input_tokens=as_int(attrs.get("llm.token_count.prompt_details.cache_read")),
        input_messages=messages(attrs, "llm.input_messages."),
        output_messages=outputs,
        finish_reasons=(finish,) if finish else None,
    )


def _read_tool(span: Span, view: SpanView) -> None:
    attrs = span.attributes
    view.fill(
        tool_name=attr_str(span, "tool.name") or span.name,
        tool_call_id=attr_str(span, "tool.id"),
        tool_result=envelopes.unwrap_result(attrs.get("output.value")),
    )
    if "input.value" in attrs:
        view.fill(tool_arguments=parse_arguments(attrs["input.value"]))
    elif "tool.parameters" in attrs and not _looks_like_schema(
        loads_maybe(attrs["tool.parameters"])
    ):
        view.fill(tool_arguments=parse_arguments(attrs["tool.parameters"]))


def _read_retriever(span: Span, view: SpanView) -> None:
    query = span.attributes.get("input.value")
    documents = (
        flattened_documents(span.attributes, DOCUMENTS_PREFIX)
        if view.has_key_prefix(DOCUMENTS_PREFIX)
        else None
    )
    view.fill(
        retrieval_query=envelopes.input_text(query) if query is not None else None,
        documents=documents,
    )


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from OpenInference attributes; True if the span has a span kind."""
    kind = span.attributes.get(KIND_ATTR)
    if kind is None:
        return False
    role = _ROLES.get(str(kind).upper())
    view.recognise(NAME, role)
    view.fill(conversation_id=attr_str(span, "session.id"))
    if role == "llm":
        _read_llm(span, view)
    elif role == "tool":
        _read_tool(span, view)
    elif role == "retriever":
        _read_retriever(span, view)
    elif role in ("agent", "workflow"):
        view.fill(
            agent_name=attr_str(span, "agent.name") or (span.name if role == "agent" else None),
            input_text=envelopes.input_text(span.attributes.get("input.value")),
            output_text=envelopes.output_text(span.attributes.get("output.value")),
        )
    return True
