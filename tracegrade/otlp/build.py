"""Build OTLP trace requests from records that are not OTLP (transcripts, any-agent files).

:class:`RequestBuilder` collects protobuf spans for one trace with deterministic ids, so the
same input always yields the same trace and re-importing it adds nothing to the store.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.otlp.codec import ExportTraceServiceRequest, key_values
from tracegrade.spans import SpanKind, StatusCode
from tracegrade.version import __version__

SCOPE_NAME = "tracegrade.import"


def stable_hex(*parts: Any, nbytes: int) -> str:
    """A hex id of ``nbytes`` bytes derived from ``parts`` (sha256; never all zeros)."""
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).digest()
    raw = digest[:nbytes]
    return (raw if any(raw) else b"\x01" * nbytes).hex()


def json_attr(value: Any) -> Any:
    """An attribute value for ``value``: scalars and lists of scalars as they are (OTLP
    arrays), anything else as a JSON string (as GenAI semconv records content on spans)."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if (
        isinstance(value, (list, tuple))
        and all(isinstance(v, (str, bool, int, float)) for v in value)
        and value
    ):
        return list(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=False, default=str)


@dataclass
class RequestBuilder:
    """Spans of one trace, built with explicit ids and times (unix nanoseconds)."""

    trace_id: str
    resource_attributes: Mapping[str, Any] = field(default_factory=dict)
    scope_name: str = SCOPE_NAME
    spans: list[trace_pb2.Span] = field(default_factory=list)

    def span_id(self, *parts: Any) -> str:
        """A span id derived from this trace id and ``parts``."""
        return stable_hex(self.trace_id, *parts, nbytes=8)

    def add(
        self,
        span_id: str,
        name: str,
        *,
        start_unix_nano: int,
        end_unix_nano: int,
        attributes: Mapping[str, Any],
        parent_span_id: str | None = None,
        kind: int = SpanKind.INTERNAL,
        error: str | None = None,
    ) -> trace_pb2.Span:
        """Add one span; ``error`` sets status ERROR with that message."""
        span = trace_pb2.Span(
            trace_id=bytes.fromhex(self.trace_id),
            span_id=bytes.fromhex(span_id),
            parent_span_id=bytes.fromhex(parent_span_id) if parent_span_id else b"",
            name=name,
            kind=trace_pb2.Span.SpanKind.ValueType(kind),
            start_time_unix_nano=start_unix_nano,
            end_time_unix_nano=end_unix_nano,
            attributes=key_values({k: json_attr(v) for k, v in attributes.items()}),
        )
        if error is not None:
            span.status.code = trace_pb2.Status.StatusCode.ValueType(StatusCode.ERROR)
            span.status.message = error
        self.spans.append(span)
        return span

    def request(self) -> ExportTraceServiceRequest:
        """The spans as one ``ExportTraceServiceRequest`` (one resource, one scope)."""
        request = ExportTraceServiceRequest()
        resource_spans = request.resource_spans.add()
        resource_spans.resource.CopyFrom(Resource(attributes=key_values(self.resource_attributes)))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.CopyFrom(InstrumentationScope(name=self.scope_name, version=__version__))
        scope_spans.spans.extend(self.spans)
        return request
