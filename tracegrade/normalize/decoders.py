"""Decoders: how the value at a convention map's location becomes a field's value.

Each field of :data:`~.conventions.FIELDS` has a default decoder, and a map's location can name
another with ``as:``. A decoder takes the raw attribute value (a string, number, list, or a
structure from an event) and returns the field's value, or ``None`` when the value holds no
such thing (then the next location is tried). The decoders are general: they read any shape the
field is known to come in (:mod:`.messages`, :mod:`.parts`, :mod:`.payloads`,
:mod:`.envelopes`, :mod:`.documents`), never a framework's class by name.

- ``text``: a non-empty string (numbers as text); ``int``: an integer (also from a string);
- ``finish``: finish reasons (a list, a JSON list, or one; ``tool-calls`` and ``tool_use``
  read ``tool_calls``);
- ``messages``: a message list in any shape (JSON string or structured);
  ``output_messages``: the same, a streamed response's chunks dropped
  (:func:`~.messages.completed`); ``completion``: a whole completion (messages, one message,
  ``{text, finish_reason}`` or text);
- ``system``: system instructions (text, or parts with ``content`` / ``text``);
- ``input`` / ``output``: an agent's input / answer (text, or the text a framework envelope
  holds); ``query``: a retrieval query (text, an envelope's text, an object's ``query``);
- ``tool_calls``: tool calls in any shape (:func:`~.parts.call_parts`); ``call_id``: a
  tool-call id (``unknown`` / ``None`` / ``null`` are no id);
- ``arguments``: tool arguments, JSON-decoded, call envelopes removed (``None``, the string,
  is ``{}``; a JSON schema is no arguments); ``result``: a tool result, envelopes removed
  (:func:`~.envelopes.unwrap_result`); ``error``: an error message (text, or an object's
  ``message``);
- ``documents``: retrieved documents (:mod:`.documents`); ``json``: any JSON value;
  ``as_text``: any value as text (structures as JSON); ``string_fields``: the text fields of
  an input object; ``tool_name``: a tool's name from a span named after the method that ran
  it (``get_order.__call__`` -> ``get_order``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tracegrade.normalize import envelopes
from tracegrade.normalize.arguments import unwrap_arguments
from tracegrade.normalize.documents import parse_documents
from tracegrade.normalize.messages import (
    TOOL_CALLS_FINISH,
    Message,
    as_int,
    as_str_list,
    completed,
    parse_message,
    parse_messages,
    parse_response_messages,
)
from tracegrade.normalize.parts import Part, as_text, call_parts
from tracegrade.normalize.payloads import system_text
from tracegrade.spans import loads_maybe, parse_arguments

NO_IDS = frozenset({"unknown", "none", "null", "undefined"})
"""Tool-call ids that are no id (Agent Framework writes ``unknown`` when the model gave
none)."""


def _text(value: Any) -> str | None:
    if value is None or value == "" or isinstance(value, (dict, list, tuple)):
        return None
    return str(value)


def _finish(value: Any) -> tuple[str, ...] | None:
    reasons = tuple(
        "tool_calls" if r in TOOL_CALLS_FINISH or r == "tool-calls" else r
        for r in as_str_list(value)
    )
    return reasons or None


def _output_messages(value: Any) -> Any:
    return completed(parse_response_messages(value))


def _call_id(value: Any) -> str | None:
    text = _text(value)
    return None if text is None or text.lower() in NO_IDS else text


def looks_like_schema(value: Any) -> bool:
    """True for a JSON schema (``{"type": "object", "properties": ...}``): a tool's parameter
    definition, never the arguments of a call."""
    return isinstance(value, Mapping) and value.get("type") == "object" and "properties" in value


def arguments(value: Any) -> Any:
    """Tool arguments (see the module table); ``None`` when the value holds none."""
    if value is None:
        return None
    if value == "None":  # str(None): a call without arguments (Agent Framework)
        return {}
    parsed = parse_arguments(value)
    if type(parsed) is dict or isinstance(parsed, Mapping):
        if looks_like_schema(parsed):
            return None
        if "input_str" in parsed:  # LangChain's tool callback: {input_str, inputs, tags, ...}
            inputs = parsed.get("inputs")
            return (
                dict(inputs)
                if isinstance(inputs, Mapping)
                else envelopes.decode(parsed["input_str"])
            )
        if isinstance(parsed.get("inputs"), Mapping) and set(parsed) - {"inputs"} <= _CALLBACK:
            return dict(parsed["inputs"])
    return unwrap_arguments(parsed)


_CALLBACK = frozenset({"tags", "metadata", "kwargs", "run_id", "name"})


def _error(value: Any) -> str | None:
    value = loads_maybe(value)
    if isinstance(value, Mapping):
        value = value.get("message", value.get("error"))
    return as_text(value) if value not in (None, "") else None


def _query(value: Any) -> str | None:
    decoded = envelopes.decode(value)
    if isinstance(decoded, Mapping) and isinstance(decoded.get("query"), str):
        return str(decoded["query"])
    return envelopes.input_text(value)


def _json(value: Any) -> Any:
    return loads_maybe(value)


def _tool_calls(value: Any) -> Any:
    return call_parts(value) or None


def string_fields(value: Any) -> tuple[str, ...] | None:
    """The text fields of an input object (its envelopes removed): the strings among its
    values, for the reader to pick the one the model was sent; ``None`` for anything else."""
    decoded = envelopes.unwrap_input(value)
    if not isinstance(decoded, Mapping):
        return None
    texts = tuple(
        v for v in decoded.values() if isinstance(v, str) and v.strip() and v[:1] not in "{["
    )
    return texts or None


_METHOD = re.compile(
    r"^(?P<name>[A-Za-z_][\w-]{0,127})\."
    r"(?:__call__|_?a?run|a?invoke|forward|a?call|execute)$"
)


def tool_name(value: Any) -> str | None:
    """A tool's name from a span named after the method that ran it (``get_order.__call__``,
    ``search.invoke``): the name without the method."""
    text = _text(value)
    if text is None:
        return None
    match = _METHOD.match(text)
    return match.group("name") if match else text


def _as_text(value: Any) -> str | None:
    return None if value is None or value == "" else as_text(value)


def _completion(value: Any) -> list[Message] | None:
    """A completion recorded whole (``gen_ai.completion``, semconv < 1.28): a message list, one
    message, ``{"text", "finish_reason"}``, or the text."""
    value = loads_maybe(value)
    if isinstance(value, str):
        return [Message("assistant", [Part("text", content=value)])]
    if isinstance(value, Mapping) and "text" in value and "role" not in value:
        finish = value.get("finish_reason")
        return [Message("assistant", [Part("text", content=str(value["text"]))], finish)]
    if isinstance(value, Mapping):
        message = parse_message({"role": "assistant", **value})
        return [message] if message else None
    return parse_messages(value)


DECODERS: dict[str, Callable[[Any], Any]] = {
    "text": _text,
    "int": as_int,
    "finish": _finish,
    "messages": parse_messages,
    "output_messages": _output_messages,
    "system": system_text,
    "input": envelopes.input_text,
    "output": envelopes.output_text,
    "tool_calls": _tool_calls,
    "call_id": _call_id,
    "arguments": arguments,
    "result": envelopes.unwrap_result,
    "error": _error,
    "query": _query,
    "documents": parse_documents,
    "json": _json,
    "as_text": _as_text,
    "string_fields": string_fields,
    "tool_name": tool_name,
    "completion": _completion,
}
"""Decoders by name (module table)."""
