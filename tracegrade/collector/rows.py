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


SPAN_COLUMNS = ("trace_id, span_id, parent_span_id, name, start_unix_nano, end_unix_nano, span,"
                " resource_id, scope_id, received_at")
"""Column order of span rows: a prepared part (:class:`PreparedSpans`) + (resource id,
scope id, received at), so the writer joins two tuples per span and nothing else."""


class PreparedSpans:
    """The database-independent part of one or more trace requests' rows, computed where the
    request is admitted (a network thread) so the single writer does as little as possible.

    ``groups``: ``(resource, schema_url, [(scope, schema_url, [row prefix, ...]), ...])``;
    ``traces``: per trace id (hex), ``[start_unix_nano, ended, span_count, run_id, case_id]``.
    """

    def __init__(self) -> None:
        self.groups: list[tuple[Any, str, list[tuple[Any, str, list[tuple[Any, ...]]]]]] = []
        self.traces: dict[str, list[Any]] = {}

    def add_request(self, request: Any) -> PreparedSpans:
        """Add every span of an ``ExportTraceServiceRequest``; returns self."""
        for group in request.resource_spans:
            resource_labels = labels(group.resource.attributes)
            scopes = [(scoped.scope, scoped.schema_url, self._scope_rows(scoped.spans, resource_labels))
                      for scoped in group.scope_spans]
            self.groups.append((group.resource, group.schema_url, scopes))
        return self

    def _scope_rows(self, spans: Iterable[trace_pb2.Span], resource_labels: Labels) -> list[tuple[Any, ...]]:
        """Row prefixes of one scope's spans (ids as lowercase hex; times in Unix ns). The hot
        loop of ingestion: kept flat on purpose."""
        rows, traces = [], self.traces
        append = rows.append
        for span in spans:
            payload = span.SerializeToString()
            trace_id, parent, start = span.trace_id.hex(), span.parent_span_id, span.start_time_unix_nano
            append((trace_id, span.span_id.hex(), parent.hex() or None, span.name, start,
                    span.end_time_unix_nano, payload))
            summary = traces.get(trace_id)
            if summary is None:
                summary = traces[trace_id] = [start, False, 0, *resource_labels]
            elif start < summary[0]:
                summary[0] = start
            summary[2] += 1
            if not summary[1] and ends_agent_work(span, payload):
                summary[1] = True
            if _LABEL_MARK in payload:
                summary[3:5] = labels(span.attributes, (summary[3], summary[4]))
        return rows

    def merge(self, other: PreparedSpans) -> None:
        """Fold ``other`` into this one (a group commit of several requests)."""
        self.groups.extend(other.groups)
        for trace_id, (start, ended, count, run_id, case_id) in other.traces.items():
            mine = self.traces.get(trace_id)
            if mine is None:
                self.traces[trace_id] = [start, ended, count, run_id, case_id]
            else:
                mine[:] = [min(mine[0], start), mine[1] or ended, mine[2] + count, mine[3] or run_id,
                           mine[4] or case_id]

    def span_rows(self, resource_ref: Callable[[Any, str], int], scope_ref: Callable[[Any, str], int],
                  received_at: float) -> list[tuple[Any, ...]]:
        """Complete rows (:data:`SPAN_COLUMNS`), resolving resource and scope ids."""
        rows: list[tuple[Any, ...]] = []
        for resource, resource_url, scopes in self.groups:
            resource_id = resource_ref(resource, resource_url)
            for scope, scope_url, prefixes in scopes:
                tail = (resource_id, scope_ref(scope, scope_url), received_at)
                rows.extend([prefix + tail for prefix in prefixes])
        return rows

    def trace_rows(self, received_at: float) -> list[tuple[Any, ...]]:
        """Upsert rows for the ``traces`` table, sorted by trace id (a fixed lock order, so
        concurrent writers on PostgreSQL cannot deadlock)."""
        return [(tid, start, received_at, received_at, run_id, case_id, int(ended), count)
                for tid, (start, ended, count, run_id, case_id) in sorted(self.traces.items())]


Ref = Callable[[Any, str], int]
"""Resolves a resource or scope message (with its schema URL) to its row id."""


def log_rows(requests: Iterable[Any], resource_ref: Ref, scope_ref: Ref, received_at: float) -> list[tuple[Any, ...]]:
    """Rows for the ``log_records`` table from ``ExportLogsServiceRequest`` messages; the
    digest covers the record with its resource and scope, so a resent record is not doubled."""
    rows = []
    for request in requests:
        for group in request.resource_logs:
            resource_id = resource_ref(group.resource, group.schema_url)
            for scoped in group.scope_logs:
                scope_id = scope_ref(scoped.scope, scoped.schema_url)
                for record in scoped.log_records:
                    payload = record.SerializeToString(deterministic=True)
                    rows.append((digest(payload + f":{resource_id}:{scope_id}".encode()),
                                 record.trace_id.hex() or None, record.span_id.hex() or None,
                                 record.time_unix_nano or record.observed_time_unix_nano,
                                 resource_id, scope_id, payload, received_at))
    return rows
