"""Framework envelopes: the call objects and states that frameworks record in place of a message.

An agent or chain span's generic input/output value (OpenInference ``input.value`` /
``output.value``, OpenLLMetry ``traceloop.entity.input`` / ``.output``) holds whatever the
framework passed around, which is a message only sometimes. Seen in real frameworks:

- LangGraph's graph state ``{"messages": [...]}``, its messages serialised the LangChain way
  (``{"type": "human", "data": {"content": ...}}``, or ``{"lc": 1, "type": "constructor",
  "id": [..., "AIMessage"], "kwargs": {"content": ...}}``);
- OpenLLMetry's callback envelopes ``{"inputs": {...}, "tags", "metadata", "kwargs": {"name":
  "LangGraph"}}`` and ``{"outputs": {...}, "kwargs": {...}}``, and the decorators'
  ``{"args": [...], "kwargs": {...}}``; LangChain's tool ``{"output": <ToolMessage>}``;
- CrewAI's ``CrewOutput`` / ``TaskOutput`` (``{"raw": "...", "pydantic": ..., ...}``),
  smolagents' run arguments (``{"task": "...", ...}``), message lists with the system prompt;
- content blocks ``[{"text": ...}]`` / ``[{"type": "text", "text": ...}]`` (Bedrock, MCP).

**Rule.** :func:`message_list` unwraps the recognised envelopes down to a list of messages
(the whole value being one message, a list of them, or a state holding them);
:func:`input_text` and :func:`output_text` give the user input / the answer the value holds:
plain text as it is, a recognised message or envelope as the text it holds, and ``None`` for
anything else (an unrecognised JSON object, a Python repr, a placeholder). ``None`` means "no
evidence here": the LLM spans decide. :func:`unwrap_result` does the same for a tool's result.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.normalize.messages import Message, Part, as_text, is_placeholder, parse_message
from tracegrade.spans import json_loads

_MAX_DEPTH = 8
"""Envelopes nest a few levels at most; deeper structures are not unwrapped further."""

_REPR = re.compile(r"[A-Za-z_][\w.]{0,200}\(")
"""The head of a Python repr such as ``AIMessage(content=...)`` or ``CrewOutput(raw=...)``."""

_OBJECT_AT = re.compile(r"<[A-Za-z_][\w.]{0,200} object at 0x[0-9A-Fa-f]{1,32}>")


def looks_like_repr(text: str) -> bool:
    """True when ``text`` is a Python object's repr rather than content: ``Name(...)`` as a
    whole (or cut short by an instrumentation's length limit, ending ``...``: LlamaIndex's
    ``StopEvent(result=AgentOutput(...``), or holding a default ``<... object at 0x...>``
    repr."""
    stripped = text.strip()
    if _OBJECT_AT.search(stripped[:4096]):
        return True
    head = _REPR.match(stripped)
    ends = stripped.endswith((")", "...", "\u2026"))
    return head is not None and ends and "=" in stripped[: head.end() + 200]


def decode(value: Any) -> Any:
    """A JSON string decoded (twice at most: OpenLLMetry encodes string outputs again)."""
    for _ in range(2):
        if not isinstance(value, str):
            return value
        stripped = value.strip()
        if stripped == "null":  # the JSON of a None return value (OpenLLMetry)
            return None
        if not stripped or stripped[0] not in '{["':
            return value
        try:
            value = json_loads(stripped)
        except ValueError:
            return value
    return value


_MESSAGE_KEYS = frozenset({"role", "lc", "data", "type", "messages"})

"""Keys without which an object is no message (:func:`_as_message`)."""

_ITEM_TYPES = frozenset({"function_call", "function_call_output", "tool_use", "tool_result"})
"""Types of items that are messages of their own (OpenAI Responses items, Anthropic blocks)."""


def _as_message(raw: Any) -> Message | None:
    """A message in any shape :func:`~.messages.parse_message` knows (a role with content,
    parts or tool calls; a LangChain serialised message; a Responses item); ``None`` for any
    other object (checked by its keys first: tool results are often large objects)."""
    if not isinstance(raw, Mapping):
        return None
    if "role" in raw:
        if "content" in raw or "parts" in raw or "tool_calls" in raw:
            return parse_message(raw)
        return None
    if raw.get("lc") == 1 or ("data" in raw and "type" in raw) or raw.get("type") in _ITEM_TYPES:
        return parse_message(raw)
    return None


_CALLBACK_KEYS = frozenset({"kwargs", "tags", "metadata", "run_id", "name"})
"""Keys OpenLLMetry's LangChain callbacks put beside ``inputs``/``outputs``."""
_ANSWER_KEYS = ("raw", "task", "final_output", "answer")
"""String fields that carry the text of a framework's run object (CrewAI ``raw``,
smolagents ``task``)."""


def _unwrap(value: Any, *, run_object: bool = True, depth: int = 0) -> Any:
    """Peel the envelopes of the module docstring off ``value`` (decoded JSON). With
    ``run_object`` False (tool results) only pure wrappers are peeled: ``{"output": x}``
    (with ``kwargs`` at most), ``{"result": x}``, ``{"args": [...], "kwargs": {...}}``."""
    value = decode(value)
    if depth >= _MAX_DEPTH or not isinstance(value, Mapping):
        return value
    keys = set(value)
    extra = _CALLBACK_KEYS if run_object else frozenset({"kwargs"})
    for key in ("inputs", "outputs", "output", "input", "result"):
        if key in keys and keys - {key} <= extra:
            return _unwrap(value[key], run_object=run_object, depth=depth + 1)
    if keys and keys <= {"args", "kwargs"}:
        args = value.get("args") or []
        kwargs = value.get("kwargs") or {}
        items = [*args, *kwargs.values()] if isinstance(kwargs, Mapping) else list(args)
        if len(items) == 1:
            return _unwrap(items[0], run_object=run_object, depth=depth + 1)
        return value
    if run_object:
        for key in _ANSWER_KEYS:
            if isinstance(value.get(key), str):
                return value[key]
    return value


def unwrap_input(value: Any) -> Any:
    """An input value with its envelopes removed, and a one-key object around an object
    unwrapped (DSPy's ``{"input_args": {...}}``)."""
    value = _unwrap(value)
    for _ in range(_MAX_DEPTH):
        if isinstance(value, Mapping) and len(value) == 1:
            inner = decode(next(iter(value.values())))
            if isinstance(inner, Mapping):
                value = inner
                continue
        break
    return value


def message_list(value: Any) -> list[Message] | None:
    """The messages a value holds (one message, a list, or a state with ``messages``) once
    its envelopes are unwrapped; ``None`` when it holds none."""
    value = _unwrap(value)
    if isinstance(value, Mapping) and isinstance(value.get("messages"), list):
        value = value["messages"]
    if isinstance(value, Mapping):
        message = _as_message(value)
        return [message] if message is not None else None
    if isinstance(value, list) and value:
        messages = [m for m in (_as_message(decode(item)) for item in value) if m is not None]
        return messages if len(messages) == len(value) else None
    return None


def _plain_text(value: Any) -> str | None:
    """``value`` as text when it is text (not JSON structure, a repr, or a placeholder)."""
    value = _unwrap(value)
    if isinstance(value, list) and value and all(isinstance(i, Mapping) for i in value):
        texts = [i.get("text") for i in value]
        if all(isinstance(t, str) for t in texts):  # content blocks
            return "".join(texts)
        return None
    if not isinstance(value, str):
        return None
    if not value.strip() or is_placeholder(value) or looks_like_repr(value):
        return None
    return value


def input_text(value: Any) -> str | None:
    """The user input an agent/chain input value holds: its last user message, the one
    string of a one-field input object (CrewAI's ``kickoff(inputs={"question": ...})``), or
    plain text; ``None`` when it is not recognisably any (module docstring)."""
    messages = message_list(value)
    if messages is not None:
        users = [m.text for m in messages if m.role == "user" and m.text]
        return users[-1] if users else None
    unwrapped = _unwrap(value)
    if isinstance(unwrapped, Mapping) and len(unwrapped) == 1:
        only = next(iter(unwrapped.values()))
        return _plain_text(only) if isinstance(only, str) else None
    return _plain_text(value)


def input_messages(value: Any) -> list[Message] | None:
    """The messages of an agent/chain input value when it holds a list of them (for the
    history it carries), else ``None``."""
    return message_list(value)


def output_text(value: Any) -> str | None:
    """The answer an agent/chain output value holds: its last assistant message's text (a
    message with tool calls and no text is no answer), or plain text; else ``None``."""
    messages = message_list(value)
    if messages is not None:
        last = next((m for m in reversed(messages) if m.role == "assistant"), None)
        return last.text if last is not None and last.text else None
    return _plain_text(value)


def unwrap_result(value: Any) -> str | None:
    """A tool result's text with the framework's envelope removed: a serialised tool message
    gives its content; ``{"output": ...}`` / ``{"result": ...}`` their value; content blocks
    their text; a JSON string encoded twice (OpenLLMetry) the string it encodes. Anything else
    is the recorded text unchanged (structured values as JSON)."""
    if value is None:
        return None
    text = as_text(value)
    if text is None:
        return None
    once = _decode_once(text)
    if isinstance(once, str):
        text = once  # a string result JSON-encoded again
    decoded = decode(text)
    inner = _unwrap(decoded, run_object=False)
    if inner is decoded and type(inner) is dict and _MESSAGE_KEYS.isdisjoint(inner):
        return text  # a plain object: no envelope, no message
    messages = message_list(inner) if isinstance(inner, (Mapping, list)) else None
    if messages and len(messages) == 1 and messages[0].role == "tool":
        responses = messages[0].tool_responses
        if responses and responses[0].response is not None:
            return str(responses[0].response)
    if isinstance(inner, list) and inner and all(isinstance(i, Mapping) for i in inner):
        texts = [i.get("text") for i in inner]
        if all(isinstance(t, str) for t in texts):
            return "".join(texts)
    if inner is decoded:
        return text
    return inner if isinstance(inner, str) else as_text(inner)


def _decode_once(text: str | None) -> Any:
    if not text or text.lstrip()[:1] != '"':
        return None
    try:
        return json_loads(text)
    except ValueError:
        return None


def tool_part_text(parts: Sequence[Part]) -> str | None:
    """The text of ``text`` parts, joined; ``None`` when there are none."""
    texts = [p.content for p in parts if p.type == "text" and p.content]
    return "".join(texts) if texts else None
