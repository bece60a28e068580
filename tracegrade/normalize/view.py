"""What one span says, read through every convention map: the :class:`SpanView`.

:mod:`.reader` fills a view from the span's attributes, events and log records through the
convention maps (:mod:`.conventions`), most specific first; :meth:`SpanView.fill` keeps the
first value set for each field, so a specific reading is never overwritten by a generic one,
and records where each value came from (:attr:`SpanView.origins`, shown by ``inspect
--explain``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from tracegrade.normalize.messages import Message, Part
from tracegrade.spans import LogRecord, Span
from tracegrade.trace import RetrievedDocument

Role = Literal["agent", "llm", "tool", "workflow", "retriever"]  # as conventions.Role
"""What a span stands for: an agent invocation, an LLM call, a tool execution, a
workflow/chain that wraps agents (treated like an agent with no name), or a retrieval
(a query and the documents it returned)."""

_UNSET_ARGUMENTS = object()


@dataclass(slots=True)
class SpanView:
    """The normalised reading of one span. Token counts are tokens; ``usage_aggregated``
    marks usage that sums the span's children (agent spans), never added to LLM usage."""

    span: Span
    role: Role | None = None
    conventions: list[str] = field(default_factory=list)
    agent_name: str | None = None
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    usage_aggregated: bool = False
    finish_reasons: tuple[str, ...] = ()
    input_messages: list[Message] | None = None
    output_messages: list[Message] | None = None
    input_text: str | None = None
    output_text: str | None = None
    system_instructions: str | None = None
    tool_name: str | None = None
    tool_call_id: str | None = None
    tool_arguments: Any = _UNSET_ARGUMENTS
    tool_result: str | None = None
    tool_error: str | None = None
    conversation_id: str | None = None
    content_placeholder: str | None = None
    """A placeholder recorded in place of the messages (``<elided>``): content not captured."""
    retrieval_query: str | None = None
    documents: list[RetrievedDocument] | None = None
    """A retrieval's documents in the retriever's order; None when the span records none."""
    data_source: str | None = None
    """The retriever or data source a retrieval asked (``gen_ai.data_source.id``)."""
    response_id: str | None = None
    """The model's response id (``gen_ai.response.id``): two spans with one are one call."""
    response_text: str | None = None
    """A response's text recorded apart from its messages (``ai.response.text``)."""
    response_tool_calls: list[Part] | None = None
    """A response's tool calls recorded apart from its messages (``ai.response.toolCalls``)."""
    input_fields: tuple[str, ...] | None = None
    """The text fields of an agent's input object (``{"question": ..., "history": ...}``):
    the user input is the one the model was sent (:mod:`.assemble`)."""
    aggregated_input_tokens: int | None = None
    aggregated_output_tokens: int | None = None
    origins: dict[str, str] = field(default_factory=dict)
    """Where each filled field came from: field -> ``"map: attribute"``."""
    role_origin: str | None = None
    """What gave the role: ``"map: rule"`` or ``"evidence: ..."``."""
    _keys: str | None = field(default=None, repr=False, compare=False)
    _keys_exact: bool = field(default=True, repr=False, compare=False)

    def has_key_prefix(self, prefix: str) -> bool:
        """True when some attribute key of the span starts with ``prefix``: one substring
        search in C over the keys joined by NUL (built once per view), exact unless a key
        itself holds a NUL (then the keys are checked one by one)."""
        keys = self._keys
        if keys is None:
            attributes = self.span.attributes
            keys = self._keys = "\0" + "\0".join(attributes) if attributes else ""
            self._keys_exact = keys.count("\0") == len(attributes)
        if ("\0" + prefix) not in keys:
            return False
        return self._keys_exact or any(key.startswith(prefix) for key in self.span.attributes)

    def fill(self, **values: Any) -> None:
        """Set each field that is still empty to the given value (``None`` values are ignored)."""
        for key, value in values.items():
            if value is None:
                continue
            current = getattr(self, key)
            if current is None or current is _UNSET_ARGUMENTS or current == ():
                setattr(self, key, value)

    def fill_from(self, origin: str, name: str, value: Any) -> bool:
        """Set field ``name`` to ``value`` when it is still empty and ``value`` is not
        ``None``, recording its ``origin`` (``"map: attribute"``); True when it was set."""
        if value is None:
            return False
        current = getattr(self, name)
        if current is None or current is _UNSET_ARGUMENTS or current == ():
            setattr(self, name, value)
            self.origins[name] = origin
            return True
        return False

    def is_empty(self, name: str) -> bool:
        """True when field ``name`` has no value yet."""
        current = getattr(self, name)
        return current is None or current is _UNSET_ARGUMENTS or current == ()

    def recognise(self, name: str, role: Role | None = None) -> None:
        """Record that convention ``name`` read this span, and its role if none is set yet."""
        if name not in self.conventions:
            self.conventions.append(name)
        if role is not None and self.role is None:
            self.role = role

    @property
    def has_arguments(self) -> bool:
        """True when some convention recorded the tool call's arguments."""
        return self.tool_arguments is not _UNSET_ARGUMENTS

    @property
    def arguments(self) -> Any:
        """The tool call's arguments (parsed JSON where possible), ``None`` when unrecorded."""
        return None if self.tool_arguments is _UNSET_ARGUMENTS else self.tool_arguments

    @property
    def has_usage(self) -> bool:
        return self.input_tokens is not None or self.output_tokens is not None


@dataclass(frozen=True, slots=True)
class Event:
    """One GenAI event about a span, from a log record or a span event: ``body`` is the
    log record's body, or the span event's attributes (a span event has no body: Strands
    Agents puts the legacy events' fields there); ``attributes`` are the record's or event's
    attributes (``gen_ai.client.inference.operation.details`` carries its content there)."""

    name: str
    time_unix_nano: int
    body: Any
    attributes: Mapping[str, Any]


@dataclass
class Context:
    """What a convention may consult besides the span: the trace's log records by span id."""

    logs_by_span: Mapping[str, Sequence[LogRecord]] = field(default_factory=dict)

    def logs_for(self, span: Span) -> Sequence[LogRecord]:
        """Log records emitted inside ``span`` (same span id), in time order."""
        return self.logs_by_span.get(span.span_id, ())

    def events_for(self, span: Span, names: frozenset[str]) -> list[Event]:
        """The span's events named in ``names``, in time order: from its log records when any
        has one of those names, else from its span events. OpenTelemetry moves events to the
        logs API, but current frameworks emit either (Strands Agents: span events) or both;
        reading one of the two never counts a message twice."""
        logs = [r for r in self.logs_for(span) if r.event_name in names]
        if logs:
            logs.sort(key=lambda r: r.sort_time)
            return [Event(r.event_name, r.sort_time, r.body, r.attributes) for r in logs]
        return [
            Event(e.name, e.time_unix_nano, dict(e.attributes), e.attributes)
            for e in span.events
            if e.name in names
        ]


def attr_str(span: Span, *keys: str) -> str | None:
    """The first of ``keys`` present on the span with a non-empty value, as a string."""
    for key in keys:
        value = span.attributes.get(key)
        if value is not None and value != "":
            return str(value)
    return None
