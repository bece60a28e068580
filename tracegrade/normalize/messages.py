"""Chat messages in every shape the conventions and providers record them, read into one model.

A message is recognised by what it carries (its parts by :mod:`.parts`):

- a role and parts: GenAI semconv ``{role, parts: [...], finish_reason?}``, a Gemini
  ``Content`` ``{role: user|model, parts}``;
- a role and content: OpenAI chat ``{role, content (text or parts), tool_calls,
  tool_call_id, name}``, Anthropic ``{role, content: [blocks]}`` (tool results travel in
  ``user`` messages: they are results, not user text), Bedrock ``{role, content: [blocks]}``,
  Haystack ``{role, content: [{text}|{tool_call}|{tool_call_result}]}`` (``_role`` /
  ``_content`` in older versions);
- LangChain serialised messages (``{"lc": 1, "id": [..., "AIMessage"], "kwargs": {...}}`` and
  ``{"type": "human", "data": {...}}``);
- OpenAI Responses input/output items: ``{type: message, role, content}``, and a bare
  ``function_call`` / ``function_call_output`` item as an assistant call / a tool result;
- GenAI legacy event bodies (semconv <= 1.36): ``gen_ai.choice`` ``{index, finish_reason,
  message, tool_calls?}``, ``gen_ai.tool.message`` ``{content, id}`` (always a tool result,
  whatever ``role`` the body names; a body that is not an object is the content); the role
  comes from the event name; pydantic-ai v1 / Logfire event dicts carry ``event.name``.

Roles spelled otherwise are aliased (``model``, ``human``, ``ai``, upper case). Flattened
attribute lists (OpenInference ``llm.input_messages.N.*``, Traceloop ``gen_ai.prompt.N.*``) are
regrouped by :func:`indexed_items` and then parsed like dicts.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracegrade.normalize.histories import HistoryCache
from tracegrade.normalize.parts import (
    PLACEHOLDERS,
    TOOL_CALLS_FINISH,
    Message,
    Part,
    any_part,
    as_text,
    block_text,
    call_parts,
    is_placeholder,
    opt_str,
    part_of,
    result_part,
    text_part,
    unwrapped_result,
)
from tracegrade.spans import json_loads, loads_maybe, parse_arguments

__all__ = [
    "PLACEHOLDERS",
    "TOOL_CALLS_FINISH",
    "TOOL_MESSAGE_EVENT",
    "Message",
    "Part",
    "as_int",
    "as_str_list",
    "as_text",
    "block_text",
    "completed",
    "indexed",
    "indexed_items",
    "is_placeholder",
    "loads_maybe",
    "parse_arguments",
    "parse_message",
    "parse_messages",
]

_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}
ROLE_ALIASES = {
    "model": "assistant",
    "human": "user",
    "ai": "assistant",
    "function": "tool",
    "developer": "system",
}
"""Roles other conventions spell differently (Gemini ``model``, LangChain ``human``/``ai``,
OpenAI's ``developer`` for system instructions)."""
TOOL_MESSAGE_EVENT = "gen_ai.tool.message"
"""The legacy event carrying one tool result (body ``{content, id}``)."""

_LANGCHAIN_ROLES = {
    "human": "user",
    "humanmessage": "user",
    "humanmessagechunk": "user",
    "ai": "assistant",
    "aimessage": "assistant",
    "aimessagechunk": "assistant",
    "system": "system",
    "systemmessage": "system",
    "tool": "tool",
    "toolmessage": "tool",
    "function": "tool",
    "functionmessage": "tool",
    "chat": "user",
}


def role_of(value: Any) -> str:
    """A role as the conventions spell it (``ROLE_ALIASES``, lower case)."""
    role = str(value or "")
    if not role.islower():
        role = role.lower()
    return ROLE_ALIASES.get(role, role)


# --- scalar helpers ------------------------------------------------------------------------------


def as_int(value: Any) -> int | None:
    """An integer attribute value (OTLP/JSON may carry ints as strings); else ``None``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    return None


def as_str_list(value: Any) -> tuple[str, ...]:
    """A string-array attribute, also accepting a JSON string (Agent Framework) or a scalar."""
    value = loads_maybe(value)
    if value is None:
        return ()
    if isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value if v is not None)
    return (str(value),)


# --- flattened keys ------------------------------------------------------------------------------

_INDEX = re.compile(r"^(\d+)\.(.+)$")


def indexed(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Regroup flattened ``{prefix}{i}.{rest}`` keys into a list of nested dicts, sorted by the
    integer index (``llm.input_messages.3.message.role`` -> item 3, ``{"message": {"role"}}``).
    Nested indexes (``tool_calls.0.``) become lists too."""
    return [item for _, item in indexed_items(attributes, prefix)]


def indexed_items(attributes: Mapping[str, Any], prefix: str) -> list[tuple[int, dict[str, Any]]]:
    """Like :func:`indexed`, as ``(index, item)`` pairs: the index is the message's position in
    the request even when earlier items are missing (dropped at the attribute limit)."""
    keys = [key for key in attributes if key.startswith(prefix)]
    if not keys:
        return []
    groups: dict[int, dict[str, Any]] = {}
    for key in keys:
        match = _INDEX.match(key[len(prefix) :])
        if match:
            item = groups.setdefault(int(match.group(1)), {})
            _set_path(item, match.group(2).split("."), attributes[key])
    return [(i, _listify(groups[i])) for i in sorted(groups)]


def _set_path(target: dict[str, Any], path: list[str], value: Any) -> None:
    for key in path[:-1]:
        target = target.setdefault(key, {})
        if not isinstance(target, dict):
            return
    target[path[-1]] = value


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if node and all(k.isdigit() for k in node):
        return [_listify(node[k]) for k in sorted(node, key=int)]
    return {k: _listify(v) for k, v in node.items()}


def _content_item(item: Mapping[str, Any]) -> Any:
    """One OpenInference ``contents.N`` item: its ``message_content`` with what sits beside
    it (the Anthropic instrumentation puts a ``tool_use`` block's ``tool_call`` there)."""
    inner = item.get("message_content")
    if not isinstance(inner, Mapping):
        return item
    return {**inner, **{k: v for k, v in item.items() if k != "message_content"}}


def flattened_message(item: Mapping[str, Any], default_role: str | None = None) -> Message | None:
    """One regrouped flattened message: OpenInference nests it under ``message`` (content
    parts under ``contents.N.message_content``, calls under ``tool_calls.N.tool_call``),
    Traceloop does not. ``None`` for an item without a role and no ``default_role`` (the
    SDK's attribute limit dropped its first keys: its role is unknown)."""
    raw = dict(found) if isinstance(found := item.get("message"), Mapping) else dict(item)
    if raw.get("content") is None and isinstance(raw.get("contents"), list):
        raw["content"] = [_content_item(c) for c in raw["contents"] if isinstance(c, Mapping)]
    calls = raw.get("tool_calls")
    if isinstance(calls, list):
        raw["tool_calls"] = [
            c.get("tool_call", c) for c in calls if isinstance(c, Mapping) and c is not None
        ]
    if default_role is not None and not raw.get("role"):
        raw["role"] = default_role
    return parse_message(raw)


# --- message parsing -----------------------------------------------------------------------------


_BLOCK_KEYS = frozenset(
    {
        "type",
        "text",
        "toolUse",
        "toolResult",
        "reasoningContent",
        "image",
        "document",
        "json",
        "tool_call",
        "tool_call_result",
        "function_call",
        "functionCall",
        "function_response",
        "functionResponse",
        "part_kind",
        "toolRequest",
        "toolResponse",
    }
)
"""Keys that mark a content block: the part shapes of :mod:`.parts`."""


def _content_parts(content: Any) -> list[Part]:
    if isinstance(content, str) and content.startswith("[{"):
        decoded = loads_maybe(content)  # Traceloop and Strands record list content as JSON
        if isinstance(decoded, list) and all(
            isinstance(i, Mapping) and not _BLOCK_KEYS.isdisjoint(i) for i in decoded
        ):
            content = decoded
    if content is None or content == "":
        return []
    if isinstance(content, (list, tuple)):
        parts = []
        for item in content:
            if isinstance(item, Mapping):
                block = part_of(item)
                text = item.get("text", item.get("content"))
                if block is not None:
                    parts.append(block)
                elif isinstance(text, str):
                    parts.append(text_part(text))
            elif isinstance(item, str):
                parts.append(text_part(item))
        return parts
    return [text_part(as_text(content))]


def _tool_content(content: Any) -> str | None:
    """A tool message's content as text: text content parts joined, anything else as
    :func:`as_text` gives it (an empty list is the result ``[]``, not "no result")."""
    if isinstance(content, (list, tuple)) and content:
        texts = [
            i.get("text") for i in content if isinstance(i, Mapping) and i.get("type") == "text"
        ]
        if len(texts) == len(content) and all(isinstance(t, str) for t in texts):
            return "".join(texts)  # type: ignore[arg-type]
    return as_text(content)


def _tool_message(raw: Mapping[str, Any], finish: str | None) -> Message:
    """A ``tool`` message: its result blocks (Bedrock, Anthropic, Haystack carry their own
    ids), else one result of its content for ``tool_call_id`` (or ``id``)."""
    blocks = [p for p in _content_parts(raw.get("content")) if p.type == "tool_call_response"]
    if blocks:
        return Message("tool", blocks, finish)
    call_id = raw.get("tool_call_id", raw.get("id"))
    response = _tool_content(unwrapped_result(raw.get("content")))
    return Message("tool", [result_part(call_id, raw.get("name"), as_text(response))], finish)


def _openai_message(raw: Mapping[str, Any], role: str) -> Message:
    finish = opt_str(raw.get("finish_reason"))
    content = raw.get("content")
    if isinstance(content, str) and content[:1] == "{":
        content = loads_maybe(content)  # Google ADK: the Content as JSON
    if isinstance(content, Mapping) and isinstance(content.get("parts"), (list, tuple)):
        inner = role_of(content.get("role") or role)  # a Gemini Content (Google ADK's events)
        parts = [any_part(p) for p in content["parts"] if isinstance(p, Mapping)]
        return Message(inner, parts, finish)
    if role == "tool":
        return _tool_message(raw, finish)
    parts = _content_parts(raw.get("content"))
    calls = call_parts(raw.get("tool_calls"))
    if calls:  # a call recorded in both the content blocks and tool_calls counts once
        ids = {c.id for c in calls if c.id}
        parts = [p for p in parts if p.type != "tool_call" or (p.id and p.id not in ids)]
    parts.extend(calls)
    legacy = raw.get("function_call")
    if isinstance(legacy, Mapping) and "name" in legacy:
        parts.append(
            Part(
                "tool_call",
                name=opt_str(legacy.get("name")),
                arguments=parse_arguments(legacy.get("arguments")),
                arguments_recorded="arguments" in legacy,
            )
        )
    return Message(role, parts, finish)


def _plain_semconv_message(raw: dict[str, Any]) -> Message | None:
    """The most common shape, read without the general checks: a ``{role, parts: [...]}``
    object with a non-empty string role and no ``event.name``; ``None`` for any other."""
    role, raw_parts = raw.get("role"), raw.get("parts")
    if type(role) is not str or not role or type(raw_parts) is not list or "event.name" in raw:
        return None
    parts = []
    for item in raw_parts:
        if type(item) is dict and item.get("type") == "text" and type(item.get("content")) is str:
            parts.append(text_part(item["content"]))  # the common part, without the search
        elif type(item) is dict or isinstance(item, Mapping):
            parts.append(any_part(item))
    role = role if role in _PLAIN_ROLES else role_of(role)
    return Message(role, parts, opt_str(raw.get("finish_reason")))


_PLAIN_ROLES = frozenset({"user", "assistant", "system", "tool"})


def _langchain_message(raw: Mapping[str, Any]) -> Message | None:
    """A LangChain message serialised by ``dumpd`` (``lc`` constructor) or as
    ``{"type": ..., "data": {...}}``; ``None`` for anything else."""
    if raw.get("lc") == 1 and isinstance(raw.get("kwargs"), Mapping) and raw.get("id"):
        kind = str(raw["id"][-1]).lower() if isinstance(raw["id"], list) else ""
        data = raw["kwargs"]
    elif isinstance(raw.get("data"), Mapping) and isinstance(raw.get("type"), str):
        kind, data = raw["type"].lower(), raw["data"]
    else:
        return None
    role = _LANGCHAIN_ROLES.get(kind)
    if role is None:
        return None
    body: dict[str, Any] = {"role": role, "content": data.get("content")}
    if role == "tool":
        body["tool_call_id"] = data.get("tool_call_id")
        body["name"] = data.get("name")
    if isinstance(data.get("tool_calls"), list):
        body["tool_calls"] = data["tool_calls"]
    return parse_message(body)


def _item_message(raw: Mapping[str, Any]) -> Message | None:
    """An OpenAI Responses item that is not a ``message``: a ``function_call`` (an assistant
    message holding the call) or a ``function_call_output`` (a tool message); or a lone
    Anthropic ``tool_result`` block."""
    part = part_of(raw)
    if part is None:
        return None
    if part.type == "tool_call":
        return Message("assistant", [part])
    if part.type == "tool_call_response":
        return Message("tool", [part])
    return None


def _choice(raw: Mapping[str, Any]) -> Message:
    """A ``gen_ai.choice`` body or a choice object ``{message, finish_reason, tool_calls?}``;
    the message may be a Gemini ``Content`` (Vertex AI, ADK) or text (Strands)."""
    choice: Any = raw.get("message")
    if choice is None and "content" in raw:
        choice = {"role": "assistant", "content": raw["content"]}
    inner = (
        {"role": "assistant", "content": choice} if isinstance(choice, str) else dict(choice or {})
    )
    inner.setdefault("tool_calls", raw.get("tool_calls"))
    inner.setdefault("finish_reason", raw.get("finish_reason"))
    return _openai_message(inner, role_of(inner.get("role") or "assistant"))


def _decoded(raw: Any, event_name: str | None) -> Mapping[str, Any] | None:
    """A non-dict message value decoded: a JSON object, or a legacy tool event's body (a body
    that is not a message is the result's content)."""
    if event_name == TOOL_MESSAGE_EVENT and raw is not None and not isinstance(raw, Mapping):
        decoded = loads_maybe(raw)  # Semantic Kernel: the message as JSON
        is_message = isinstance(decoded, Mapping) and not {"role", "tool_call_id"}.isdisjoint(
            decoded
        )
        raw = decoded if is_message else {"content": raw}
    raw = loads_maybe(raw)
    return raw if isinstance(raw, Mapping) else None


def parse_message(raw: Any, event_name: str | None = None) -> Message | None:
    """One message from any supported shape (module docstring); ``None`` if not a message.

    ``event_name`` is the legacy event's name (``gen_ai.user.message``...), which gives the
    role when the body has none.
    """
    if type(raw) is dict and event_name is None:
        message = _plain_semconv_message(raw)
        if message is not None:
            return message
    elif type(raw) is not dict:  # a decoded JSON object skips the general checks
        decoded = _decoded(raw, event_name)
        if decoded is None:
            return None
        raw = decoded
    event_name = event_name or raw.get("event.name")
    if event_name == "gen_ai.choice" or (
        isinstance(raw.get("message"), Mapping) and "parts" not in raw
    ):
        return _choice(raw)
    role = raw.get("role", raw.get("_role"))
    if isinstance(role, Mapping):  # Haystack < 2.9: ChatRole serialised as {"value": ...}
        role = role.get("value")
    role = role_of(role or _EVENT_ROLES.get(str(event_name), ""))
    if event_name == TOOL_MESSAGE_EVENT:
        role = "tool"  # Vertex AI writes the Content's role ("user") into the body
    if not role:
        return _langchain_message(raw) or _item_message(raw)
    raw_parts = raw.get("parts")
    if isinstance(raw_parts, (list, tuple)):
        parts = [any_part(p) for p in raw_parts if type(p) is dict or isinstance(p, Mapping)]
        return Message(role, parts, opt_str(raw.get("finish_reason")))
    if "_content" in raw and "content" not in raw:
        raw = {**raw, "content": raw["_content"]}
    return _openai_message(raw, role)


def completed(messages: list[Message] | None) -> list[Message] | None:
    """A streamed response recorded as its chunks and then the whole (Google ADK, in span
    attributes and events: assistant messages without a finish reason, then the one with
    it): the whole only."""
    if not messages or len(messages) < 2 or not messages[-1].finish_reason:
        return messages
    partial = messages[:-1]
    if all(m.role == "assistant" and not m.finish_reason for m in partial):
        return messages[-1:]
    return messages


def parse_messages(value: Any) -> list[Message] | None:
    """A message list attribute (JSON string or structured); ``None`` when absent or not a list.

    A single object holding ``messages`` (some request envelopes) is unwrapped. A JSON array
    string is parsed through :data:`_HISTORIES` (a replayed history is parsed once; the returned
    :class:`Message` objects may be shared with other calls' results and must not be mutated).
    """
    if value is None:
        return None
    if isinstance(value, str) and value.lstrip()[:1] == "[":
        cached = _HISTORIES.parse(value)
        if cached is not None:
            return cached
    value = loads_maybe(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), (list, tuple)):
        value = value["messages"]
    if not isinstance(value, (list, tuple)):
        return None
    return _parse_items(value, 0)


def parse_response_messages(value: Any) -> list[Message] | None:
    """:func:`parse_messages` for a response's messages: each response is new, so it is
    parsed without the history cache (whose entries it would only push out)."""
    if isinstance(value, str) and value.lstrip()[:1] == "[":
        try:
            items = json_loads(value)
        except ValueError:
            return None
        return _parse_items(items, 0) if isinstance(items, list) else None
    return parse_messages(value)


def _parse_items(items: Any, start: int) -> list[Message]:
    """The messages among ``items``, each with its ``position`` (``start`` + index)."""
    messages = []
    for position, item in enumerate(items, start):
        message = parse_message(item)
        if message is not None:
            message.position = position
            messages.append(message)
    return messages


_HISTORIES = HistoryCache(_parse_items)
