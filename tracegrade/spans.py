"""Decoded OTLP data: spans and log records as plain, immutable Python objects.

These are the only shapes the normalisers see; wire formats (protobuf, OTLP/JSON) stop at
:mod:`tracegrade.otlp.codec`. Ids are lowercase hex strings (32 characters for a trace
id, 16 for a span id), times are integers in nanoseconds since the Unix epoch, and attribute
values are decoded ``AnyValue`` s: ``str``, ``bool``, ``int``, ``float``, ``bytes``, ``None``,
``tuple`` (array) or ``dict`` (kvlist).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

AttrValue = Any
"""A decoded OTLP ``AnyValue`` (see the module docstring)."""


class SpanKind(enum.IntEnum):
    """``Span.SpanKind`` values of the OTLP protocol."""

    UNSPECIFIED = 0
    INTERNAL = 1
    SERVER = 2
    CLIENT = 3
    PRODUCER = 4
    CONSUMER = 5


class StatusCode(enum.IntEnum):
    """``Status.StatusCode`` values of the OTLP protocol."""

    UNSET = 0
    OK = 1
    ERROR = 2


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """One span event (e.g. ``exception``), time in unix nanoseconds."""

    name: str
    time_unix_nano: int
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Span:
    """One decoded OTLP span with its resource and instrumentation scope."""

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_unix_nano: int
    end_unix_nano: int
    status_code: int = StatusCode.UNSET
    status_message: str = ""
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource_attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    scope_name: str = ""
    scope_version: str = ""
    dropped_attributes_count: int = 0

    @property
    def duration_ms(self) -> float:
        """End minus start, in milliseconds (0 when the end precedes the start)."""
        return max(0, self.end_unix_nano - self.start_unix_nano) / 1e6

    @property
    def is_error(self) -> bool:
        """True when the span status is ERROR (OTLP ``STATUS_CODE_ERROR``)."""
        return self.status_code == StatusCode.ERROR

    def attr(self, key: str, default: Any = None) -> Any:
        """The attribute ``key``, or ``default`` when absent."""
        return self.attributes.get(key, default)


@dataclass(frozen=True, slots=True)
class LogRecord:
    """One decoded OTLP log record; ``event_name`` falls back to the ``event.name`` attribute."""

    trace_id: str | None
    span_id: str | None
    time_unix_nano: int
    observed_time_unix_nano: int
    event_name: str
    body: AttrValue
    attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    severity_number: int = 0
    severity_text: str = ""
    resource_attributes: Mapping[str, AttrValue] = field(default_factory=dict)
    scope_name: str = ""

    @property
    def sort_time(self) -> int:
        """The record's time, or its observed time when no time was set (unix ns)."""
        return self.time_unix_nano or self.observed_time_unix_nano


@dataclass(slots=True)
class TraceData:
    """The spans and log records of one trace id, as read from a file or the store."""

    trace_id: str
    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)


def group_by_trace(spans: Iterable[Span], logs: Iterable[LogRecord] = ()) -> list[TraceData]:
    """Group spans and log records by trace id, keeping first-seen trace order.

    Log records without a trace id cannot be joined to a span and are dropped.
    """
    traces: dict[str, TraceData] = {}
    for span in spans:
        traces.setdefault(span.trace_id, TraceData(span.trace_id)).spans.append(span)
    for record in logs:
        if record.trace_id:
            traces.setdefault(record.trace_id, TraceData(record.trace_id)).logs.append(record)
    return list(traces.values())


def json_loads(text: str) -> Any:
    """``json.loads``, through orjson (several times faster on the large message histories
    spans carry); what orjson refuses but the standard library reads (``NaN``, integers past
    64 bits) falls back to :func:`json.loads`.

    Raises:
        json.JSONDecodeError: ``text`` is not JSON.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def loads_maybe(value: Any) -> Any:
    """``json.loads`` a string that holds a JSON object or array; anything else unchanged.

    Content attributes MAY be recorded as JSON strings on spans (GenAI semconv), and
    everyone does; this is the one place they are decoded.
    """
    if isinstance(value, str):
        stripped = value.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                return json_loads(value)
            except json.JSONDecodeError:
                return value
    return value


def parse_arguments(value: Any) -> Any:
    """Tool-call arguments as parsed JSON where they parse (any JSON value), else as given."""
    if isinstance(value, str):
        try:
            return json_loads(value)
        except json.JSONDecodeError:
            return value
    if isinstance(value, tuple):
        return [parse_arguments(v) for v in value]
    return value
