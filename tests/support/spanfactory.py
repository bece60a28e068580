"""Build spans and log records with explicit ids and time offsets, for unit tests.

``TraceBuilder().add("chat gpt-4", {...}, parent=root, start_ms=10, duration_ms=5)`` returns
the new span id; :meth:`TraceBuilder.normalize` runs the real normaliser. Attribute values
are shaped as OTLP decoding leaves them: lists become tuples.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tracegrade.normalize import normalize_trace
from tracegrade.spans import LogRecord, Span, SpanEvent, SpanKind, StatusCode, TraceData
from tracegrade.trace import AgentTrace

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
BASE_NS = 1_700_000_000_000_000_000
KINDS = {"INTERNAL": SpanKind.INTERNAL, "CLIENT": SpanKind.CLIENT, "SERVER": SpanKind.SERVER}


def otlp_shape(value: Any) -> Any:
    """Lists to tuples, recursively (as decoded OTLP arrays)."""
    if isinstance(value, list):
        return tuple(otlp_shape(v) for v in value)
    if isinstance(value, dict):
        return {k: otlp_shape(v) for k, v in value.items()}
    return value


@dataclass
class TraceBuilder:
    trace_id: str = TRACE_ID
    spans: list[Span] = field(default_factory=list)
    logs: list[LogRecord] = field(default_factory=list)
    scope: str = "test"

    def add(
        self,
        name: str,
        attributes: dict[str, Any] | None = None,
        *,
        parent: str | None = None,
        start_ms: float = 0,
        duration_ms: float = 1,
        kind: str | int = "INTERNAL",
        error: str | None = None,
        events: tuple[SpanEvent, ...] = (),
        scope: str | None = None,
        dropped: int = 0,
    ) -> str:
        span_id = f"{len(self.spans) + 1:016x}"
        start = BASE_NS + int(start_ms * 1e6)
        self.spans.append(
            Span(
                trace_id=self.trace_id,
                span_id=span_id,
                parent_span_id=parent,
                name=name,
                kind=KINDS.get(kind, kind) if isinstance(kind, str) else kind,
                start_unix_nano=start,
                end_unix_nano=start + int(duration_ms * 1e6),
                status_code=StatusCode.ERROR if error is not None else StatusCode.UNSET,
                status_message=error or "",
                attributes=otlp_shape(attributes or {}),
                events=events,
                scope_name=scope or self.scope,
                dropped_attributes_count=dropped,
            )
        )
        return span_id

    def log(self, event_name: str, body: Any, *, span_id: str, time_ms: float = 0) -> None:
        time = BASE_NS + int(time_ms * 1e6)
        self.logs.append(
            LogRecord(self.trace_id, span_id, time, time, event_name, otlp_shape(body))
        )

    def data(self) -> TraceData:
        return TraceData(self.trace_id, list(self.spans), list(self.logs))

    def normalize(self) -> AgentTrace:
        return normalize_trace(self.data())
