"""The one reader: a span, through every convention map, into a :class:`~.view.SpanView`.

For each span, in order:

1. **Which maps apply** (:class:`~.conventions.Applies`: a key, a key prefix, a scope, a
   name); each one that applies is recorded in ``view.conventions``.
2. **Role from the maps' rules**, the first rule that matches (most specific map first).
3. **Fields**: every applying map's ``fields``, ``payloads`` and ``events``, most specific
   map first; a field keeps the first value found (:meth:`~.view.SpanView.fill_from`), and
   where it was read is recorded (its origin) for ``inspect --explain``.
4. **Role from evidence** when no rule gave one (:func:`classify`): a span that carries a
   model response is an LLM call, one that carries a tool name with arguments or a result is
   a tool call, one with retrieved documents a retrieval - whatever the span is called.
5. **Role fields**: each map's ``roles`` section for the span's role.
6. **Unrecognised payloads** (:mod:`.sniff`): a span no map read content from, whose
   attributes hold a model request or response in a shape :mod:`.payloads` knows (a
   framework's own tracer: a JSON blob or a repr under its own key), is read from those
   (before step 4 for a span no rule placed, so that what it holds can place it; after its
   role's fields for one a rule placed, so that they come first).
7. **Completion**: a response recorded field by field becomes its output message, usage
   recorded as an agent's aggregate stays aggregated, finish reasons follow the tool calls.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tracegrade.normalize import events as legacy
from tracegrade.normalize.conventions import ConventionMap, FieldLocation, Role, active_maps
from tracegrade.normalize.decoders import DECODERS
from tracegrade.normalize.documents import flattened_documents
from tracegrade.normalize.messages import flattened_message, indexed_items
from tracegrade.normalize.payloads import (
    apply_reading,
    payload_value,
    read_output_message,
    read_output_text,
    read_request,
    read_response,
    read_usage,
    usage_into,
)
from tracegrade.normalize.sniff import sniff
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import Span

_Getter = Callable[[Span, SpanView], Any]
"""Reads one location's raw value from a span (``None``: not there)."""


def _boundary(name: str, prefix: str) -> bool:
    """True when ``name`` starts with ``prefix`` as a word: equal, or followed by a non-word
    character (``chat gpt-4`` for ``chat``; ``Function: x`` for ``Function:``)."""
    if not name.startswith(prefix):
        return False
    return len(name) == len(prefix) or not name[len(prefix)].isalnum() or not prefix[-1].isalnum()


_Option = tuple[int, str, _Getter]
"""A field's location: its rank in the field's list, its label, its getter."""


class Table:
    """A map's ``fields`` (or one role's) indexed by attribute key: a span's fields are found
    by intersecting its keys with the table's, not by asking every location."""

    def __init__(self, name: str, options: dict[str, list[tuple[str, _Getter]]]) -> None:
        self.name = name
        self.keyed: dict[str, list[tuple[str, int, str, _Getter]]] = {}
        self.other: list[tuple[str, int, str, _Getter]] = []
        for field, locations in options.items():
            for rank, (label, getter) in enumerate(locations):
                entry = (field, rank, f"{name}: {label}", getter)
                if label.endswith("*") or label == "span name":
                    self.other.append(entry)
                else:
                    self.keyed.setdefault(label, []).append(entry)
        self.keys = frozenset(self.keyed)
        self._plans: dict[tuple[str, ...], list[tuple[str, list[tuple[str, _Getter]]]]] = {}

    def read(self, span: Span, view: SpanView) -> bool:
        """Fill the view's empty fields from the locations present; True when any was set."""
        plan = self._plans.get(shape := tuple(span.attributes))
        if plan is None:
            plan = self._plan(shape)
        found = False
        for field, options in plan:
            if not view.is_empty(field):
                continue
            for label, getter in options:
                value = getter(span, view)
                if value is not None and value != () and value != []:
                    view.fill_from(label, field, value)
                    found = True
                    break
        return found

    def _plan(self, shape: tuple[str, ...]) -> list[tuple[str, list[tuple[str, _Getter]]]]:
        """Which fields a span with these attribute keys can fill, each with its locations
        present, in rank order (worked out once per shape: spans repeat a few shapes)."""
        candidates: dict[str, list[_Option]] = {}
        for key in self.keys.intersection(shape):
            for field, rank, label, getter in self.keyed[key]:
                candidates.setdefault(field, []).append((rank, label, getter))
        for field, rank, label, getter in self.other:
            candidates.setdefault(field, []).append((rank, label, getter))
        plan = [
            (field, [(label, getter) for _, label, getter in sorted(options, key=_rank)])
            for field, options in candidates.items()
        ]
        if len(self._plans) >= 4096:
            self._plans.clear()
        self._plans[shape] = plan
        return plan


def _rank(option: _Option) -> int:
    return option[0]


class Compiled:
    """A :class:`~.conventions.ConventionMap` prepared for reading many spans."""

    def __init__(self, spec: ConventionMap) -> None:
        self.spec = spec
        self.name = spec.name
        self.keys = frozenset(spec.applies.keys)
        self.prefixes = spec.applies.key_prefixes
        self.scopes = tuple(spec.applies.scopes)
        self.names = tuple(spec.applies.names)
        self.every_span = not (self.keys or self.prefixes or self.scopes or self.names)
        self.empty = tuple(spec.empty)
        self.fields = Table(
            spec.name, {n: [self._getter(s, n) for s in ss] for n, ss in spec.fields.items()}
        )
        self.roles = {
            role: Table(spec.name, {n: [self._getter(s, n) for s in ss] for n, ss in t.items()})
            for role, t in spec.roles.items()
        }
        self.events = [
            (
                frozenset(rule.names),
                rule.decoder,
                [(n, [(s.key or "", _decoder(s, n)) for s in ss]) for n, ss in rule.fields.items()],
            )
            for rule in spec.events
        ]

    # -- applying ------------------------------------------------------------------------------

    def applies(self, span: Span, view: SpanView) -> bool:
        if self.every_span:
            return True
        if self.keys and not self.keys.isdisjoint(span.attributes):
            return True
        for prefix in self.prefixes:
            if view.has_key_prefix(prefix):
                return True
        if self.scopes and span.scope_name.startswith(self.scopes):
            return True
        if self.names and span.name.startswith(self.names):
            return any(_boundary(span.name, n) for n in self.names)
        return False

    def role(self, span: Span, view: SpanView) -> tuple[Role, str] | None:
        """``(role, rule)`` from the first of the map's rules that matches."""
        attributes = span.attributes
        for rule in self.spec.role:
            if rule.key_prefix is not None:
                if rule.role is not None and view.has_key_prefix(rule.key_prefix):
                    return rule.role, rule.key_prefix + "*"
                continue
            if rule.requires_any and all(k not in attributes for k in rule.requires_any):
                continue
            if rule.name_prefix is not None:
                name = (
                    str(attributes.get(rule.template_key) or span.name)
                    if rule.template_key
                    else span.name
                )
                for prefix, role in rule.name_prefix.items():
                    if _boundary(name, prefix):
                        return role, f"span name {prefix!r}"
                continue
            if rule.key is None:
                continue
            value = attributes.get(rule.key)
            if value is None or value == "" or value in self.empty:
                continue
            if rule.values is not None:
                found = _value_role(rule.values, str(value))
                if found is not None:
                    return found, f"{rule.key}={value}"
            elif rule.role is not None:
                return rule.role, rule.key
        return None

    # -- reading -------------------------------------------------------------------------------

    def _getter(self, location: FieldLocation, field: str) -> tuple[str, _Getter]:
        decode = _decoder(location, field)
        empty = self.empty
        if location.flattened is not None:
            return location.flattened + "*", _flattened(location.flattened, field)
        if location.span_name is not None:
            pattern = (
                re.compile(location.span_name) if isinstance(location.span_name, str) else None
            )

            def from_name(span: Span, view: SpanView) -> Any:
                if pattern is None:
                    return decode(span.name) if span.name else None
                match = pattern.match(span.name)
                return decode(match.group("value")) if match else None

            return "span name", from_name
        key = location.key or ""

        def from_attribute(span: Span, view: SpanView) -> Any:
            value = span.attributes.get(key)
            if value is None or (empty and value in empty):
                return None
            return decode(value)

        return key, from_attribute

    def read(self, span: Span, view: SpanView, context: Context) -> bool:
        """Fill ``view`` from the map's fields, payloads and events; True when any was read."""
        found = self.fields.read(span, view)
        for payload in self.spec.payloads:
            if payload.role is None:
                found = _read_payload(self, payload.key, payload.decoder, span, view) or found
        for names, decoder, fields in self.events:
            found = _read_events(self.name, names, decoder, fields, span, view, context) or found
        return found

    def read_role(self, span: Span, view: SpanView) -> bool:
        table = self.roles.get(view.role) if view.role else None
        found = table.read(span, view) if table is not None else False
        for payload in self.spec.payloads:
            if payload.role is not None and payload.role == view.role:
                found = _read_payload(self, payload.key, payload.decoder, span, view) or found
        return found


def _value_role(values: Mapping[str, Role | None], value: str) -> Role | None:
    found = values.get(value)
    if found is None:
        found = values.get(value.lower())
    if found is None:
        for pattern, role in values.items():
            if pattern.startswith("*") and value.endswith(pattern[1:]) and role is not None:
                return role
    return found


def _decoder(location: FieldLocation, field: str) -> Callable[[Any], Any]:
    from tracegrade.normalize.conventions import FIELDS

    name = location.decoder or FIELDS[field]
    decoder = DECODERS.get(name)
    if decoder is None:
        raise ValueError(f"unknown decoder {name!r}: one of {', '.join(DECODERS)}")
    return decoder


def _flattened(prefix: str, field: str) -> _Getter:
    """Indexed keys under ``prefix``: messages (an output list's items default to the
    assistant role) or documents."""
    if field == "documents":

        def documents(span: Span, view: SpanView) -> Any:
            return (
                flattened_documents(span.attributes, prefix)
                if view.has_key_prefix(prefix)
                else None
            )

        return documents
    default_role = "assistant" if field == "output_messages" else None

    def messages(span: Span, view: SpanView) -> Any:
        if not view.has_key_prefix(prefix):
            return None
        found = []
        for position, item in indexed_items(span.attributes, prefix):
            message = flattened_message(item, default_role)
            if message is not None:
                message.position = position
                found.append(message)
        return found or None

    return messages


def _read_payload(compiled: Compiled, key: str, decoder: str, span: Span, view: SpanView) -> bool:
    raw = span.attributes.get(key)
    if raw is None or (compiled.empty and raw in compiled.empty):
        return False
    origin = f"{compiled.name}: {key}"
    if decoder == "legacy_messages":
        return legacy.read_events(legacy.inlined(raw), view, _operation(span))
    value = payload_value(raw)
    if decoder == "usage":
        usage = read_usage(value)
        return usage is not None and usage_into(view, origin, *usage)
    reader = read_request if decoder == "request" else read_response
    reading = reader(value)
    if reading is None and decoder == "response" and isinstance(raw, str) and value is raw:
        reading = read_output_text(raw)
    return reading is not None and apply_reading(reading, origin, view)


def _operation(span: Span) -> str | None:
    operation = span.attributes.get("gen_ai.operation.name")
    return None if operation is None else str(operation)


def _read_events(
    name: str,
    names: frozenset[str],
    decoder: str | None,
    fields: Sequence[tuple[str, Sequence[tuple[str, Callable[[Any], Any]]]]],
    span: Span,
    view: SpanView,
    context: Context,
) -> bool:
    events = context.events_for(span, names)
    if not events:
        return False
    if decoder == "legacy_messages":
        return legacy.read_events([(e.name, e.body) for e in events], view, _operation(span))
    found = False
    for event in events:
        for field, locations in fields:
            if not view.is_empty(field):
                continue
            for key, decode in locations:
                value = event.attributes.get(key)
                decoded = decode(value) if value is not None else None
                if decoded is not None and view.fill_from(
                    f"{name}: event {event.name} {key}", field, decoded
                ):
                    found = True
                    break
    return found


_COMPILED: list[tuple[tuple[ConventionMap, ...], tuple[Compiled, ...]]] = []


def compiled_maps() -> tuple[Compiled, ...]:
    """The active maps (:func:`~.conventions.active_maps`), compiled once for each set."""
    maps = active_maps()
    if _COMPILED and _COMPILED[0][0] is maps:
        return _COMPILED[0][1]
    compiled = tuple(Compiled(m) for m in maps)
    _COMPILED[:] = [(maps, compiled)]
    return compiled


# --- evidence ------------------------------------------------------------------------------------


def classify(view: SpanView) -> tuple[Role, str] | None:
    """The role a span's content shows (module docstring, step 4), or ``None``."""
    if view.output_messages or view.response_text or view.response_tool_calls:
        return "llm", "evidence: a model response"
    if view.input_messages and (view.has_usage or view.model) and not view.agent_name:
        return "llm", "evidence: a model request with its model or usage"
    if view.tool_name and (view.has_arguments or view.tool_result is not None):
        return "tool", "evidence: a tool name with arguments or a result"
    if view.documents:
        return "retriever", "evidence: retrieved documents"
    return None


def _complete(view: SpanView) -> None:
    """Step 7 of the module docstring."""
    if view.output_messages is None and (view.response_text or view.response_tool_calls):
        finish = view.finish_reasons[0] if view.finish_reasons else None
        messages = read_output_message(view.response_text, view.response_tool_calls or (), finish)
        if messages:
            view.output_messages = messages
            view.origins["output_messages"] = view.origins.get("response_text") or view.origins.get(
                "response_tool_calls", ""
            )
    if not view.finish_reasons and view.output_messages:
        reasons = tuple(m.finish_reason for m in view.output_messages if m.finish_reason)
        if any(m.tool_calls for m in view.output_messages) and not reasons:
            reasons = ("tool_calls",)
        view.finish_reasons = reasons
    if not view.has_usage and (
        view.aggregated_input_tokens is not None or view.aggregated_output_tokens is not None
    ):
        view.input_tokens = view.aggregated_input_tokens
        view.output_tokens = view.aggregated_output_tokens
        view.usage_aggregated = True


_APPLYING: dict[tuple[str, str, tuple[str, ...]], list[Compiled]] = {}
"""The maps that apply to a span, by its shape (scope, name, attribute keys): spans of one
trace, and of a run's traces, repeat a few shapes."""
_APPLYING_SIZE = 4096


def applying(span: Span, view: SpanView) -> list[Compiled]:
    """The compiled maps that apply to ``span`` (module docstring, step 1)."""
    maps = compiled_maps()
    shape = (span.scope_name, span.name, tuple(span.attributes))
    found = _APPLYING.get(shape)
    if found is None or _APPLYING_OWNER[0] is not maps:
        if _APPLYING_OWNER[0] is not maps or len(_APPLYING) >= _APPLYING_SIZE:
            _APPLYING.clear()
            _APPLYING_OWNER[0] = maps
        found = _APPLYING[shape] = [m for m in maps if m.applies(span, view)]
    return found


_APPLYING_OWNER: list[tuple[Compiled, ...] | None] = [None]


def read_view(span: Span, context: Context) -> SpanView:
    """Read one span through every active convention map (module docstring)."""
    view = SpanView(span)
    maps = applying(span, view)
    for compiled in maps:
        found = compiled.role(span, view)
        if found is not None:
            view.role, rule = found
            view.role_origin = f"{compiled.name}: {rule}"
            break
    for compiled in maps:
        had_usage = view.has_usage
        if compiled.read(span, view, context) or not compiled.every_span:
            view.conventions.append(compiled.name)
        if not had_usage and view.has_usage and view.role in compiled.spec.aggregated_usage:
            view.usage_aggregated = True
    sniffed = False
    if view.role is None:  # a span no rule placed: what it carries decides
        if not (view.input_messages or view.output_messages):
            sniffed = sniff(view, compiled_maps()) or True
        found_role = classify(view)
        if found_role is not None:
            view.role, view.role_origin = found_role
    for compiled in maps:
        had_usage = view.has_usage
        if compiled.read_role(span, view) and compiled.name not in view.conventions:
            view.conventions.append(compiled.name)
        if not had_usage and view.has_usage and view.role in compiled.spec.aggregated_usage:
            view.usage_aggregated = True
    if not sniffed and not (view.input_messages or view.output_messages):
        sniff(view, compiled_maps())  # a placed span whose maps read no content
    _complete(view)
    return view
