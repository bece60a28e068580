"""OTLP requests -> the store's table rows (pure: no database access).

A receiver acknowledges a request only once its rows are committed, and it commits many
requests at once (group commit), so this is the hot path of ingestion: one pass over the
spans, each span serialised once, nothing decoded that need not be.

Besides the span rows, each trace gets a summary row that tells when it has *settled*
(see :meth:`tracegrade.collector.store.Store.trace_states`):

- ``ended``: a root span (no parent) or an agent span arrived. OTLP exporters send a span
  once it has ended, so its arrival means the agent's work is done. An agent span is one with
  ``gen_ai.operation.name = invoke_agent`` (GenAI semconv) or ``openinference.span.kind =
  AGENT`` (OpenInference).
- ``run_id`` / ``case_id``: the ``tracegrade.run_id`` / ``tracegrade.case_id`` attributes of
  the span or of its resource (``OTEL_RESOURCE_ATTRIBUTES``, or a span processor copying W3C
  baggage), which link a trace to an eval run's case.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2

RUN_ID_ATTR = "tracegrade.run_id"
CASE_ID_ATTR = "tracegrade.case_id"
_LABEL_MARK = b"tracegrade."
_AGENT_MARKS = ((b"invoke_agent", "gen_ai.operation.name", "invoke_agent"),
                (b"AGENT", "openinference.span.kind", "AGENT"))

Labels = tuple[str | None, str | None]
"""(run id, case id) of a resource or span."""


def digest(data: bytes) -> bytes:
    """The 16-byte content digest used to deduplicate resources, scopes and log records."""
    return hashlib.sha256(data).digest()[:16]


def labels(attributes: Iterable[KeyValue], inherited: Labels = (None, None)) -> Labels:
    """``tracegrade.run_id`` / ``tracegrade.case_id`` string attributes, else ``inherited``."""
    run_id, case_id = inherited
    for kv in attributes:
        if kv.key == RUN_ID_ATTR and kv.value.string_value:
            run_id = kv.value.string_value
        elif kv.key == CASE_ID_ATTR and kv.value.string_value:
            case_id = kv.value.string_value
    return run_id, case_id


def _has_attribute(attributes: Iterable[KeyValue], key: str, value: str) -> bool:
    return any(kv.key == key and kv.value.string_value == value for kv in attributes)


def ends_agent_work(span: trace_pb2.Span, payload: bytes) -> bool:
    """True for a root span or an agent span (see the module docstring); ``payload`` is the
    span's serialised bytes, searched first so most spans are never decoded further."""
    if not span.parent_span_id:
        return True
    return any(mark in payload and _has_attribute(span.attributes, key, value)
               for mark, key, value in _AGENT_MARKS)


@dataclass
class TraceSummary:
    """What one batch adds to a trace's summary row."""

    start_unix_nano: int
    ended: bool = False
    span_count: int = 0
    run_id: str | None = None
    case_id: str | None = None

    def add(self, span: trace_pb2.Span, payload: bytes, span_labels: Labels) -> None:
        self.start_unix_nano = min(self.start_unix_nano, span.start_time_unix_nano)
        self.ended = self.ended or ends_agent_work(span, payload)
        self.span_count += 1
        self.run_id = self.run_id or span_labels[0]
        self.case_id = self.case_id or span_labels[1]


@dataclass
class SpanRows:
    """Rows for the ``spans`` table and one :class:`TraceSummary` per trace id (hex)."""

    spans: list[tuple[Any, ...]] = field(default_factory=list)
    traces: dict[str, TraceSummary] = field(default_factory=dict)

    def add(self, span: trace_pb2.Span, resource_id: int, scope_id: int, resource_labels: Labels,
            received_at: float) -> None:
        """Add one span (ids as lowercase hex; times in Unix ns; ``received_at`` Unix s)."""
        payload = span.SerializeToString()
        trace_id = span.trace_id.hex()
        self.spans.append((trace_id, span.span_id.hex(), span.parent_span_id.hex() or None, span.name,
                           span.start_time_unix_nano, span.end_time_unix_nano, resource_id, scope_id,
                           payload, received_at))
        span_labels = labels(span.attributes, resource_labels) if _LABEL_MARK in payload else resource_labels
        summary = self.traces.get(trace_id)
        if summary is None:
            summary = self.traces[trace_id] = TraceSummary(span.start_time_unix_nano)
        summary.add(span, payload, span_labels)

    def trace_rows(self, received_at: float) -> list[tuple[Any, ...]]:
        """Upsert rows for the ``traces`` table, sorted by trace id (a fixed lock order, so
        concurrent writers on PostgreSQL cannot deadlock)."""
        return [(tid, s.start_unix_nano, received_at, received_at, s.run_id, s.case_id, int(s.ended), s.span_count)
                for tid, s in sorted(self.traces.items())]


Ref = Callable[[Any, str], int]
"""Resolves a resource or scope message (with its schema URL) to its row id."""


def span_rows(requests: Iterable[Any], resource_ref: Callable[[Any, str], tuple[int, Labels]],
              scope_ref: Ref, received_at: float) -> SpanRows:
    """The rows of every span of these ``ExportTraceServiceRequest`` messages."""
    rows = SpanRows()
    for request in requests:
        for group in request.resource_spans:
            resource_id, resource_labels = resource_ref(group.resource, group.schema_url)
            for scoped in group.scope_spans:
                scope_id = scope_ref(scoped.scope, scoped.schema_url)
                for span in scoped.spans:
                    rows.add(span, resource_id, scope_id, resource_labels, received_at)
    return rows


def log_rows(requests: Iterable[Any], resource_ref: Callable[[Any, str], tuple[int, Labels]],
             scope_ref: Ref, received_at: float) -> list[tuple[Any, ...]]:
    """Rows for the ``log_records`` table from ``ExportLogsServiceRequest`` messages; the
    digest covers the record with its resource and scope, so a resent record is not doubled."""
    rows = []
    for request in requests:
        for group in request.resource_logs:
            resource_id, _ = resource_ref(group.resource, group.schema_url)
            for scoped in group.scope_logs:
                scope_id = scope_ref(scoped.scope, scoped.schema_url)
                for record in scoped.log_records:
                    payload = record.SerializeToString(deterministic=True)
                    rows.append((digest(payload + f":{resource_id}:{scope_id}".encode()),
                                 record.trace_id.hex() or None, record.span_id.hex() or None,
                                 record.time_unix_nano or record.observed_time_unix_nano,
                                 resource_id, scope_id, payload, received_at))
    return rows
