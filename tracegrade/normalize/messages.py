"""Chat messages in every shape the conventions record them, read into one model.

Shapes understood by :func:`parse_message`:

- GenAI semconv parts (``gen-ai-input-messages.json``): ``{role, parts: [{type, ...}],
  finish_reason?}`` with part types ``text``, ``tool_call {id, name, arguments}``,
  ``tool_call_response {id, response}`` (``result`` accepted too: pydantic-ai, the
  openai-agents bridge, and the registry's own example use it), ``reasoning``/``thinking``;
- OpenAI chat messages: ``{role, content (string or content parts), tool_calls: [{id,
  function: {name, arguments}}], tool_call_id, name}`` (transcripts, any-agent, Logfire);
- GenAI legacy event bodies (semconv <= 1.36): ``gen_ai.choice`` ``{index, finish_reason,
  message: {...}, tool_calls?}``, ``gen_ai.tool.message`` ``{content, id}`` (always a tool
  result, whatever ``role`` the body names; a body that is not an object is the content);
  the role comes from the event name;
- pydantic-ai v1 / Logfire event dicts carrying their own ``event.name``;
- Vercel AI SDK prompt parts ``tool-call`` / ``tool-result`` in a message's content list;
- Bedrock Converse content blocks (Strands Agents), as a list or its JSON string:
  ``{"text"}``, ``{"toolUse": {toolUseId, name, input}}``, ``{"toolResult": {toolUseId,
  status, content: [blocks]}}``, ``{"reasoningContent"}``; a ``gen_ai.choice`` whose
  ``message`` is such a string or plain text.

Flattened attribute lists (OpenInference ``llm.input_messages.N.*``, Traceloop
``gen_ai.prompt.N.*``) are regrouped by :func:`indexed` and then parsed like dicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracegrade.normalize.histories import HistoryCache
from tracegrade.spans import loads_maybe, parse_arguments

TOOL_CALLS_FINISH = frozenset({"tool_calls", "tool_call", "function_call", "tool_use"})
"""Finish reasons meaning "the model asked for tools" (semconv ``tool_call``, OpenAI
``tool_calls``, Bedrock/Anthropic ``tool_use``)."""

_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}
ROLE_ALIASES = {"model": "assistant"}
"""Roles other conventions spell differently (Gemini ``Content``: ``model``)."""
TOOL_MESSAGE_EVENT = "gen_ai.tool.message"
"""The legacy event carrying one tool result (body ``{content, id}``)."""
_TEXT_PART_TYPES = frozenset({"text", "output_text", "input_text"})
_REASONING_PART_TYPES = frozenset({"reasoning", "thinking"})


@dataclass(slots=True)
class Part:
    """One message part: ``type`` is ``text``, ``tool_call``, ``tool_call_response``,
    ``reasoning`` or the original type for anything else."""

    type: str
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    arguments_recorded: bool = True
    """False for a ``tool_call`` whose arguments were not captured (content capture off)."""


@dataclass(slots=True)
class Message:
    """One chat message (role ``system``/``user``/``assistant``/``tool`` or another string)."""

    role: str
    parts: list[Part] = field(default_factory=list)
    finish_reason: str | None = None
    position: int | None = None
    """Index of the message in the request's message list, when known. Flattened attributes
    (``gen_ai.prompt.{i}.*``) keep it even when the SDK's attribute limit dropped the earlier
    messages, so replays of one history line up by position."""
    text: str | None = field(init=False, repr=False, compare=False)
    """The concatenated text parts, or ``None`` when there are none."""
    tool_calls: list[Part] = field(init=False, repr=False, compare=False)
    """The ``tool_call`` parts, in order."""
    tool_responses: list[Part] = field(init=False, repr=False, compare=False)
    """The ``tool_call_response`` parts, in order.

    ``text``, ``tool_calls`` and ``tool_responses`` are computed once, when the message is
    made (a replayed history's messages are shared between calls, and every history walk reads
    them): ``parts`` must not change afterwards."""

    def __post_init__(self) -> None:
        texts: list[str] = []
        calls: list[Part] = []
        responses: list[Part] = []
        for part in self.parts:
            kind = part.type
            if kind == "text":
                if part.content:
                    texts.append(part.content)
            elif kind == "tool_call":
                calls.append(part)
            elif kind == "tool_call_response":
                responses.append(part)
        self.text = "".join(texts) if texts else None
        self.tool_calls = calls
        self.tool_responses = responses


# --- JSON helpers ----------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    """A tool result or content value as text: strings unchanged, structures as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False, default=str)


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


# --- flattened keys --------------------------------------------------------------------------

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


# --- message parsing -------------------------------------------------------------------------


PLACEHOLDERS = frozenset({"<elided>", "<redacted>", "[redacted]", "readacted", "<hidden>"})
"""Texts instrumentations write in place of content they did not capture (Google ADK's log
events ``<elided>``, the openai-agents bridge's ``readacted``): not content. A text part
holding one is a ``placeholder`` part, so it is never taken for a message's text."""


def is_placeholder(text: object) -> bool:
    """True when ``text`` is a content placeholder (see :data:`PLACEHOLDERS`)."""
    return isinstance(text, str) and text.strip().lower() in PLACEHOLDERS


def _text_part(text: str | None) -> Part:
    return Part("placeholder" if is_placeholder(text) else "text", content=text)


_BLOCK_KEYS = frozenset(
    {"type", "text", "toolUse", "toolResult", "reasoningContent", "image", "document", "json"}
)
"""Keys that mark a content block (OpenAI/semconv ``type``; Bedrock Converse block names)."""


def block_text(value: Any) -> str | None:
    """A value as text, content blocks (``[{"text": ...}, ...]``, or their JSON string) as
    their text joined; anything else as :func:`as_text` gives it."""
    decoded = loads_maybe(value) if isinstance(value, str) and value[:2] == "[{" else value
    if isinstance(decoded, (list, tuple)) and decoded:
        texts = [i.get("text") if isinstance(i, Mapping) else None for i in decoded]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
        jsons = [i.get("json") if isinstance(i, Mapping) else None for i in decoded]
        if all(j is not None for j in jsons) and len(jsons) == 1:
            return as_text(jsons[0])
    return as_text(value)


def _ai_sdk_part(item: Mapping[str, Any]) -> Part | None:
    """A Vercel AI SDK prompt part: ``tool-call {toolCallId, toolName, input}`` (``args``
    before v5) or ``tool-result {toolCallId, toolName, output: {type, value}}`` (``result``
    before v5; output types ``error-text``/``error-json`` report an error)."""
    kind = item.get("type")
    if kind == "tool-call":
        arguments = item.get("input", item.get("args"))
        return Part(
            "tool_call",
            id=_opt_str(item.get("toolCallId")),
            name=_opt_str(item.get("toolName")),
            arguments=parse_arguments(arguments),
            arguments_recorded="input" in item or "args" in item,
        )
    if kind == "tool-result":
        output = item.get("output", item.get("result"))
        error = False
        if isinstance(output, Mapping) and "type" in output and "value" in output:
            error = str(output["type"]).startswith("error")
            output = output["value"]
        text = block_text(output)
        if error and text is not None and not text.lower().startswith("error"):
            text = f"Error: {text}"
        return Part(
            "tool_call_response",
            id=_opt_str(item.get("toolCallId")),
            name=_opt_str(item.get("toolName")),
            response=text,
        )
    return None


def _block_part(item: Mapping[str, Any]) -> Part | None:
    """One Bedrock Converse content block or Vercel AI SDK tool part as a part; ``None``
    when it is not one."""
    if item.get("type") in ("tool-call", "tool-result"):
        return _ai_sdk_part(item)
    use = item.get("toolUse")
    if isinstance(use, Mapping):
        return Part(
            "tool_call",
            id=_opt_str(use.get("toolUseId")),
            name=_opt_str(use.get("name")),
            arguments=parse_arguments(use.get("input")),
            arguments_recorded="input" in use,
        )
    result = item.get("toolResult")
    if isinstance(result, Mapping):
        text = block_text(result.get("content"))
        if result.get("status") == "error" and text and not text.lower().startswith("error"):
            text = f"Error: {text}"
        return Part("tool_call_response", id=_opt_str(result.get("toolUseId")), response=text)
    if "reasoningContent" in item:
        return Part("reasoning", content=as_text(item["reasoningContent"]))
    return None


def _semconv_part(raw: Mapping[str, Any]) -> Part:
    kind = str(raw.get("type") or "")
    if kind in _TEXT_PART_TYPES:
        return _text_part(as_text(raw.get("content", raw.get("text"))))
    if kind == "tool_call":
        return Part(
            "tool_call",
            id=_opt_str(raw.get("id")),
            name=_opt_str(raw.get("name")),
            arguments=parse_arguments(raw.get("arguments")),
            arguments_recorded="arguments" in raw,
        )
    if kind == "tool_call_response":
        response = raw["response"] if "response" in raw else raw.get("result")
        return Part(
            "tool_call_response",
            id=_opt_str(raw.get("id")),
            name=_opt_str(raw.get("name")),
            response=block_text(response),
        )
    if kind in _REASONING_PART_TYPES:
        return Part("reasoning", content=as_text(raw.get("content")))
    if not kind:
        gemini = _gemini_part(raw)
        if gemini is not None:
            return gemini
    if not kind and "content" in raw:
        return _text_part(as_text(raw.get("content")))
    return Part(kind or "unknown", content=as_text(raw.get("content")))


def _gemini_part(raw: Mapping[str, Any]) -> Part | None:
    """A Gemini ``Part`` (Google ADK, Vertex AI): ``text``, ``function_call {id, name,
    args}``, ``function_response {id, name, response}`` (ADK wraps a non-dict return value as
    ``{"result": value}``: the value is the result); ``None`` when it is none of them."""
    call = raw.get("function_call")
    if isinstance(call, Mapping):
        return Part(
            "tool_call",
            id=_opt_str(call.get("id")),
            name=_opt_str(call.get("name")),
            arguments=parse_arguments(call.get("args")),
            arguments_recorded=call.get("args") is not None or "partial_args" not in call,
        )
    response = raw.get("function_response")
    if isinstance(response, Mapping):
        value = response.get("response")
        if isinstance(value, Mapping) and set(value) == {"result"}:
            value = value["result"]
        return Part(
            "tool_call_response",
            id=_opt_str(response.get("id")),
            name=_opt_str(response.get("name")),
            response=block_text(value),
        )
    if isinstance(raw.get("text"), str):
        kind = "reasoning" if raw.get("thought") is True else "text"
        return Part(kind, content=raw["text"])
    return None


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _openai_tool_calls(raw: Any) -> list[Part]:
    parts = []
    for call in raw or ():
        if not isinstance(call, Mapping):
            continue
        function = found if isinstance(found := call.get("function"), Mapping) else {}
        name = function.get("name", call.get("name"))
        arguments = function.get("arguments", call.get("arguments"))
        recorded = "arguments" in function or "arguments" in call
        parts.append(
            Part(
                "tool_call",
                id=_opt_str(call.get("id")),
                name=_opt_str(name),
                arguments=parse_arguments(arguments),
                arguments_recorded=recorded,
            )
        )
    return parts


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
                block = _block_part(item)
                text = item.get("text", item.get("content"))
                if block is not None:
                    parts.append(block)
                elif isinstance(text, str):
                    parts.append(_text_part(text))
            elif isinstance(item, str):
                parts.append(_text_part(item))
        return parts
    return [_text_part(as_text(content))]


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


def _openai_message(raw: Mapping[str, Any], role: str) -> Message:
    finish = _opt_str(raw.get("finish_reason"))
    content = raw.get("content")
    if isinstance(content, str) and content[:1] == "{":
        content = loads_maybe(content)  # Google ADK: the Content as JSON
    if isinstance(content, Mapping) and isinstance(content.get("parts"), (list, tuple)):
        inner = str(content.get("role") or role)  # a Gemini Content (Google ADK's events)
        parts = [_semconv_part(p) for p in content["parts"] if isinstance(p, Mapping)]
        return Message(ROLE_ALIASES.get(inner, inner), parts, finish)
    if role in ("tool", "function"):
        blocks = [p for p in _content_parts(raw.get("content")) if p.type == "tool_call_response"]
        if blocks:  # Bedrock toolResult blocks carry their own ids
            return Message("tool", blocks, finish)
        call_id = raw.get("tool_call_id", raw.get("id"))
        response = _tool_content(raw.get("content"))
        return Message(
            "tool",
            [
                Part(
                    "tool_call_response",
                    id=_opt_str(call_id),
                    name=_opt_str(raw.get("name")),
                    response=as_text(response),
                )
            ],
            finish,
        )
    parts = _content_parts(raw.get("content"))
    parts.extend(_openai_tool_calls(raw.get("tool_calls")))
    legacy = raw.get("function_call")
    if isinstance(legacy, Mapping):
        parts.append(
            Part(
                "tool_call",
                name=_opt_str(legacy.get("name")),
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
    parts = [_semconv_part(p) for p in raw_parts if type(p) is dict or isinstance(p, Mapping)]
    return Message(ROLE_ALIASES.get(role, role), parts, _opt_str(raw.get("finish_reason")))


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
        if event_name == TOOL_MESSAGE_EVENT and raw is not None and not isinstance(raw, Mapping):
            decoded = loads_maybe(raw)  # Semantic Kernel: the message as JSON
            is_message = isinstance(decoded, Mapping) and not {"role", "tool_call_id"}.isdisjoint(
                decoded
            )
            raw = decoded if is_message else {"content": raw}  # else the body is the content
        raw = loads_maybe(raw)
        if not isinstance(raw, Mapping):
            return None
    event_name = event_name or raw.get("event.name")
    if event_name == "gen_ai.choice" or (
        isinstance(raw.get("message"), Mapping) and "parts" not in raw
    ):
        choice: Any = raw.get("message")
        if choice is None and "content" in raw:  # Vertex AI / Google ADK: a Content
            choice = {"role": "assistant", "content": raw["content"]}
        inner = (
            {"role": "assistant", "content": choice}
            if isinstance(choice, str)  # Strands: the content (blocks as JSON, or text)
            else dict(choice or {})
        )
        inner.setdefault("tool_calls", raw.get("tool_calls"))
        inner.setdefault("finish_reason", raw.get("finish_reason"))
        return _openai_message(inner, str(inner.get("role") or "assistant"))
    role = str(raw.get("role") or _EVENT_ROLES.get(str(event_name), "") or "")
    if event_name == TOOL_MESSAGE_EVENT:
        role = "tool"  # Vertex AI writes the Content's role ("user") into the body
    if not role:
        return None
    role = ROLE_ALIASES.get(role, role)
    raw_parts = raw.get("parts")
    if isinstance(raw_parts, (list, tuple)):
        parts = [_semconv_part(p) for p in raw_parts if type(p) is dict or isinstance(p, Mapping)]
        return Message(role, parts, _opt_str(raw.get("finish_reason")))
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
