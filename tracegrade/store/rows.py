"""OTLP requests -> the store's table rows (pure: no database access).

A receiver acknowledges a request only once its rows are committed, and it commits many
requests at once (group commit), so this is the hot path of ingestion. Spans are stored in
*chunks*: one row per trace per scope of a request, holding that trace's spans as a
serialised ``ScopeSpans`` message exactly as received (lossless; normalisation can be
re-run). A request of 100 spans of one trace is one row and one serialisation, not 100: that
is most of the receiver's speed. An identical resend (an exporter retry) has the same content
digest and adds nothing; spans that arrive twice in different chunks are deduplicated by span
id when read (:func:`chunk_spans`).

Besides the span rows, each trace gets a summary row that tells when it has *settled*
(see :meth:`tracegrade.store.traces.Store.trace_states`):

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
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import KeyValue
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import GEN_AI_OPERATION_NAME

from tracegrade.attributes import ATTRIBUTE_PREFIX, CASE_ID_ATTR, RUN_ID_ATTR

_LABEL_MARK = ATTRIBUTE_PREFIX.encode()
_AGENT_MARKS = (
    (b"invoke_agent", GEN_AI_OPERATION_NAME, "invoke_agent"),
    (b"AGENT", "openinference.span.kind", "AGENT"),
)

Labels = tuple[str | None, str | None]
"""(run id, case id) of a resource or span."""


def digest(data: bytes) -> bytes:
    """The 16-byte content digest used to deduplicate resources, scopes and log records."""
    return hashlib.sha256(data).digest()[:16]


def text(value: str) -> str:
    """``value`` fit for a text column on every backend: PostgreSQL refuses the NUL character
    (SQLite keeps it), so it becomes U+FFFD on both; the raw protobuf bytes stay as received."""
    return value.replace("\x00", "\ufffd") if "\x00" in value else value


def labels(attributes: Iterable[KeyValue], inherited: Labels = (None, None)) -> Labels:
    """``tracegrade.run_id`` / ``tracegrade.case_id`` string attributes (see :func:`text`),
    else ``inherited``."""
    run_id, case_id = inherited
    for kv in attributes:
        if kv.key == RUN_ID_ATTR and kv.value.string_value:
            run_id = text(kv.value.string_value)
        elif kv.key == CASE_ID_ATTR and kv.value.string_value:
            case_id = text(kv.value.string_value)
    return run_id, case_id


def _has_attribute(attributes: Iterable[KeyValue], key: str, value: str) -> bool:
    return any(kv.key == key and kv.value.string_value == value for kv in attributes)


def _agent_span(span: trace_pb2.Span) -> bool:
    return any(_has_attribute(span.attributes, key, value) for _, key, value in _AGENT_MARKS)


Ref = Callable[[Any, str], int]
"""Resolves a resource or scope message (with its schema URL) to its row id."""

CHUNK_COLUMNS = (
    "trace_id, start_unix_nano, span_count, spans, digest, resource_id, scope_id, received_at"
)
"""Column order of ``span_chunks`` rows: a prepared part + (digest, resource id, scope id,
received at), completed by the writer."""


LOG_COLUMNS = (
    "digest, trace_id, span_id, time_unix_nano, resource_id, scope_id, record, received_at"
)
"""Column order of ``log_records`` rows (:func:`log_rows`)."""


class PreparedSpans:
    """The database-independent part of one or more trace requests' rows, computed where the
    request is admitted (a network thread) so the single writer does as little as possible.

    ``groups``: ``(resource, schema_url, [(scope, schema_url, [chunk, ...]), ...])`` where a
    chunk is ``(trace_id hex, start_unix_nano, span_count, ScopeSpans bytes, bytes digest)``;
    ``traces``: per trace id (hex), ``[start_unix_nano, ended, span_count, run_id, case_id]``;
    ``span_ids``: per trace id (hex), the set of its span ids (8 bytes each).
    """

    def __init__(self) -> None:
        self.groups: list[tuple[Any, str, list[tuple[Any, str, list[tuple[Any, ...]]]]]] = []
        self.traces: dict[str, list[Any]] = {}
        self.span_ids: dict[str, set[bytes]] = {}

    def add_request(
        self, request: Any, raw: Sequence[Sequence[Any]] | None = None
    ) -> PreparedSpans:
        """Add every span of an ``ExportTraceServiceRequest``; returns self. ``raw``: the
        bytes of each ``ScopeSpans`` as received (``raw[i][j]`` for ``resource_spans[i].
        scope_spans[j]``), stored as they are instead of serialising the scope again."""
        groups = request.resource_spans
        if raw is not None and (
            len(raw) != len(groups)
            or any(len(r) != len(g.scope_spans) for r, g in zip(raw, groups, strict=True))
        ):
            raw = None  # not the same message: serialise
        for i, group in enumerate(groups):
            resource_labels = labels(group.resource.attributes)
            scopes = [
                (
                    _detached(scoped.scope),
                    scoped.schema_url,
                    self._scope_chunks(scoped, resource_labels, None if raw is None else raw[i][j]),
                )
                for j, scoped in enumerate(group.scope_spans)
                if scoped.spans
            ]
            if scopes:  # an entry without spans stores nothing (not even its resource)
                self.groups.append((_detached(group.resource), group.schema_url, scopes))
        return self

    def _scope_chunks(
        self, scoped: trace_pb2.ScopeSpans, resource_labels: Labels, raw: Any = None
    ) -> list[tuple[Any, ...]]:
        """One chunk per trace of a scope; the scope's own bytes when it holds one trace (the
        usual case), else a ``ScopeSpans`` per trace. One pass over the spans: the hot loop."""
        by_trace: dict[bytes, list[Any]] = {}  # raw trace id -> [spans, min start, has root]
        for span in scoped.spans:
            entry = by_trace.get(span.trace_id)
            if entry is None:
                entry = by_trace[span.trace_id] = [[], span.start_time_unix_nano, False]
            entry[0].append(span)
            if span.start_time_unix_nano < entry[1]:
                entry[1] = span.start_time_unix_nano
            if not span.parent_span_id:
                entry[2] = True
        single = len(by_trace) == 1
        chunks = []
        for raw_id, (spans, start, has_root) in by_trace.items():
            if not single:
                payload = trace_pb2.ScopeSpans(spans=spans).SerializeToString()
            else:
                payload = scoped.SerializeToString() if raw is None else bytes(raw)
            trace_id = raw_id.hex()
            self.span_ids.setdefault(trace_id, set()).update([span.span_id for span in spans])
            self._summarise(trace_id, spans, payload, start, has_root, resource_labels)
            chunks.append((trace_id, start, len(spans), payload, digest(payload)))
        return chunks

    def _summarise(
        self,
        trace_id: str,
        spans: list[trace_pb2.Span],
        payload: bytes,
        start: int,
        has_root: bool,
        resource_labels: Labels,
    ) -> None:
        summary = self.traces.get(trace_id)
        if summary is None:
            summary = self.traces[trace_id] = [start, False, 0, *resource_labels]
        summary[0] = min(summary[0], start)
        summary[2] += len(spans)
        if not summary[1]:  # a root span, else an agent span (byte search first: rarely decoded)
            summary[1] = has_root or (
                any(mark in payload for mark, _, _ in _AGENT_MARKS) and any(map(_agent_span, spans))
            )
        if _LABEL_MARK in payload:
            for span in spans:
                summary[3:5] = labels(span.attributes, (summary[3], summary[4]))

    def merge(self, other: PreparedSpans) -> None:
        """Fold ``other`` into this one (a group commit of several requests)."""
        self.groups.extend(other.groups)
        for trace_id, ids in other.span_ids.items():
            self.span_ids.setdefault(trace_id, set()).update(ids)
        for trace_id, (start, ended, count, run_id, case_id) in other.traces.items():
            mine = self.traces.get(trace_id)
            if mine is None:
                self.traces[trace_id] = [start, ended, count, run_id, case_id]
            else:
                mine[:] = [
                    min(mine[0], start),
                    mine[1] or ended,
                    mine[2] + count,
                    mine[3] or run_id,
                    mine[4] or case_id,
                ]

    def chunk_rows(
        self, resource_ref: Ref, scope_ref: Ref, received_at: float
    ) -> list[tuple[Any, ...]]:
        """Complete ``span_chunks`` rows (:data:`CHUNK_COLUMNS`), resolving resource and scope
        ids; the digest covers the chunk with its resource and scope."""
        rows: list[tuple[Any, ...]] = []
        for resource, resource_url, scopes in self.groups:
            resource_id = resource_ref(resource, resource_url)
            for scope, scope_url, chunks in scopes:
                scope_id = scope_ref(scope, scope_url)
                salt = f":{resource_id}:{scope_id}".encode()
                rows.extend(
                    [
                        chunk[:4] + (digest(chunk[4] + salt), resource_id, scope_id, received_at)
                        for chunk in chunks
                    ]
                )
        return rows

    def trace_rows(self, received_at: float) -> list[tuple[Any, ...]]:
        """Upsert rows for the ``traces`` table, sorted by trace id (a fixed lock order, so
        concurrent writers on PostgreSQL cannot deadlock)."""
        return [
            (tid, start, received_at, received_at, run_id, case_id, int(ended), count)
            for tid, (start, ended, count, run_id, case_id) in sorted(self.traces.items())
        ]


def _detached(message: Any) -> Any:
    """A copy of a decoded sub-message (a resource, a scope) that holds nothing else: the
    sub-message itself keeps its whole decoded request, every span, in memory (upb's arena:
    15 MiB of spans decode to ~50 MB, held while the request waits for the writer)."""
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def chunk_spans(payload: bytes, trace_id: str) -> list[trace_pb2.Span]:
    """The spans of a stored chunk that belong to ``trace_id`` (hex)."""
    raw = bytes.fromhex(trace_id)
    return [span for span in trace_pb2.ScopeSpans.FromString(payload).spans if span.trace_id == raw]


def log_rows(
    requests: Iterable[Any], resource_ref: Ref, scope_ref: Ref, received_at: float
) -> list[tuple[Any, ...]]:
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
                    rows.append(
                        (
                            digest(payload + f":{resource_id}:{scope_id}".encode()),
                            record.trace_id.hex() or None,
                            record.span_id.hex() or None,
                            record.time_unix_nano or record.observed_time_unix_nano,
                            resource_id,
                            scope_id,
                            payload,
                            received_at,
                        )
                    )
    return rows
