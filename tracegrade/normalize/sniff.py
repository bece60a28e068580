"""Content under keys no convention map names: read it when its shape is known, report it
when it is not.

A framework that traces itself writes the model call under its own keys: one JSON blob per
span (``<framework>.input`` / ``.output``), the request and response objects' reprs, or a
message list. :func:`sniff` reads a span that no map read content from: each attribute whose
key no map names (:func:`known_keys`) and whose value is structured (JSON, a repr, a mapping
or list) is tried as a model response and as a model request (:mod:`.payloads`); what it holds
fills the view, its origin recorded as ``evidence: <key>``.

What still looks like content and fed no field is *unread*: :func:`unread_content` names those
attributes, so lint says "unread content in ATTRIBUTE: add a convention map" instead of
"content not captured". An attribute looks like content when its value is a JSON object or
list holding ``role`` and ``content`` (or ``messages``), a repr of a message (``role=`` and
``content=`` / ``text=``), or contains a user message of the trace.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracegrade.normalize.payloads import apply_reading, payload_value, read_request, read_response
from tracegrade.normalize.reprs import looks_like_repr
from tracegrade.normalize.view import SpanView

if TYPE_CHECKING:
    from tracegrade.normalize.reader import Compiled

MAX_SNIFFED_CHARS = 1_048_576
"""Longest attribute value tried as a payload (1 MiB)."""
_MIN_CHARS = 16


def known_keys(maps: Sequence[Compiled]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Every attribute key the maps name (field locations, payloads, role rules, ``applies``), and
    every key prefix (flattened locations, ``applies`` prefixes)."""
    keys: set[str] = set()
    prefixes: set[str] = set()
    for compiled in maps:
        spec = compiled.spec
        keys.update(spec.applies.keys)
        prefixes.update(spec.applies.key_prefixes)
        keys.update(p.key for p in spec.payloads)
        for rule in spec.role:
            keys.update(k for k in (rule.key, rule.template_key) if k)
            keys.update(rule.requires_any)
            if rule.key_prefix:
                prefixes.add(rule.key_prefix)
        for _, location in spec.locations():
            if location.key:
                keys.add(location.key)
            if location.flattened:
                prefixes.add(location.flattened)
    return frozenset(keys), tuple(sorted(prefixes))


_KNOWN: list[tuple[Sequence[Compiled], tuple[frozenset[str], tuple[str, ...]]]] = []


def _known(maps: Sequence[Compiled]) -> tuple[frozenset[str], tuple[str, ...]]:
    if _KNOWN and _KNOWN[0][0] is maps:
        return _KNOWN[0][1]
    found = known_keys(maps)
    _KNOWN[:] = [(maps, found)]
    _UNKNOWN.clear()
    return found


def _structured(value: Any) -> bool:
    if isinstance(value, (Mapping, list, tuple)):
        return bool(value)
    if not isinstance(value, str) or len(value) < _MIN_CHARS or len(value) > MAX_SNIFFED_CHARS:
        return False
    head = value.lstrip()[:1]
    return head in ("{", "[") or looks_like_repr(value)


_UNKNOWN: dict[tuple[str, ...], tuple[str, ...]] = {}
"""A span shape's unmapped keys, by its attribute keys (spans repeat a few shapes)."""


def _unknown_keys(view: SpanView, maps: Sequence[Compiled]) -> tuple[str, ...]:
    """The keys of the span's attributes that no map names (cached by the span's shape)."""
    shape = tuple(view.span.attributes)
    unknown = _UNKNOWN.get(shape)
    if unknown is None:
        keys, prefixes = _known(maps)
        if len(_UNKNOWN) >= 4096:
            _UNKNOWN.clear()
        unknown = _UNKNOWN[shape] = tuple(
            k for k in shape if k not in keys and not k.startswith(prefixes)
        )
    return unknown


def _unknown(view: SpanView, maps: Sequence[Compiled]) -> Iterable[tuple[str, Any]]:
    """The span's attributes whose key no map names."""
    attributes = view.span.attributes
    return [(key, attributes[key]) for key in _unknown_keys(view, maps)]


def sniff(view: SpanView, maps: Sequence[Compiled]) -> bool:
    """Read a model request/response from the span's unmapped attributes (module docstring);
    True when something was read."""
    if view.input_messages or view.output_messages:
        return False
    found = False
    for key, value in _unknown(view, maps):
        if not _structured(value):
            continue
        decoded = payload_value(value)
        origin = f"evidence: {key}"
        response = read_response(decoded)
        if response is not None and response.output_messages:
            found = apply_reading(response, origin, view) or found
            continue
        request = read_request(decoded)
        if request is not None and request.input_messages:
            found = apply_reading(request, origin, view) or found
    return found


def _looks_like_content(value: Any, user_texts: Sequence[str]) -> bool:
    if not isinstance(value, str) or len(value) < _MIN_CHARS:
        return False
    if value.lstrip()[:1] in ("{", "["):
        if ('"role"' in value and ('"content"' in value or '"parts"' in value)) or (
            '"messages"' in value
        ):
            return True
    elif "role=" in value and ("content=" in value or "text=" in value):
        return True
    return any(text in value and len(value) > len(text) + 20 for text in user_texts)


_CONTENT_KEYS = frozenset(
    {"content", "text", "message", "output", "result", "answer", "input", "query", "prompt"}
)


def _texts_of(value: str) -> list[str]:
    """The content texts a candidate holds: the strings with a space in them directly under
    content keys (``content``, ``text``, ``result``...) of a JSON/repr value (an id or a type
    name is no content), or the value itself when it is plain text."""
    decoded = payload_value(value)
    if isinstance(decoded, str):
        return [decoded]
    found: list[str] = []
    stack: list[tuple[Any, bool]] = [(decoded, False)]
    while stack and len(found) < 1000:
        item, content = stack.pop()
        if isinstance(item, str):
            if content and len(item) >= 8 and " " in item.strip():
                found.append(item)
        elif isinstance(item, Mapping):
            stack.extend((v, k in _CONTENT_KEYS) for k, v in item.items())
        elif isinstance(item, (list, tuple)):
            stack.extend((v, content) for v in item)
    return found


def _read_texts(views: Sequence[SpanView]) -> str:
    """Every text the views read (messages, inputs, outputs, tool arguments and results),
    joined for substring tests."""
    texts: list[str] = []
    for view in views:
        for messages in (view.input_messages, view.output_messages):
            for message in messages or ():
                texts.extend(p.content for p in message.parts if isinstance(p.content, str))
                texts.extend(str(p.response) for p in message.parts if p.response is not None)
                texts.extend(str(p.arguments) for p in message.parts if p.arguments is not None)
        for text in (view.input_text, view.output_text, view.tool_result, view.system_instructions):
            if text:
                texts.append(text)
        if view.has_arguments:
            texts.append(str(view.arguments))
    return "\0".join(texts)


def unread_content(
    views: Sequence[SpanView], maps: Sequence[Compiled], user_texts: Sequence[str] = ()
) -> list[tuple[str, str]]:
    """``(span name, attribute key)`` of attributes that look like content and hold text no
    field was read from (module docstring)."""
    unmapped = [(view, keys) for view in views if (keys := _unknown_keys(view, maps))]
    if not unmapped:
        return []
    texts = [t for t in user_texts if len(t) >= 12]
    used = {origin.split(": ", 1)[-1] for view in views for origin in view.origins.values()}
    candidates = [
        (view.span.name, key, value)
        for view, keys in unmapped
        for key in keys
        if key not in used and _looks_like_content(value := view.span.attributes[key], texts)
    ]
    if not candidates:
        return []
    read = _read_texts(views)
    return [
        (name, key)
        for name, key, value in candidates
        if any(text not in read for text in _texts_of(value))
    ]
