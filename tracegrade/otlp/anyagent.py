"""mozilla-ai/any-agent trace files to OTLP.

any-agent serialises the SDK's ``ReadableSpan`` s of a run as ``{"spans": [...],
"final_output": ...}``: ids are decimal integers under ``context``/``parent``, kinds and status
codes are lowercase names, attributes a flat object, and each span repeats its resource. This
adapter rewrites that layout as an ``ExportTraceServiceRequest`` (hex ids, OTLP enums) and keeps
every attribute unchanged; the attribute conventions themselves (``call_llm``,
``gen_ai.output``, ``gen_ai.tool.args``) are read by
the any-agent convention map (``tracegrade/normalize/maps/any-agent.yaml``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.errors import InputError
from tracegrade.otlp.codec import ExportTraceServiceRequest, key_values
from tracegrade.spans import SpanKind, StatusCode

_KINDS = {k.name.lower(): int(k) for k in SpanKind}
_STATUS = {"unset": StatusCode.UNSET, "ok": StatusCode.OK, "error": StatusCode.ERROR}


def _hex_id(value: Any, nbytes: int, what: str) -> bytes:
    if isinstance(value, str):
        value = int(value, 16) if value.startswith("0x") else int(value)
    if not isinstance(value, int) or value < 0 or value >= 1 << (8 * nbytes):
        raise InputError(f"{what} {value!r} is not a {8 * nbytes}-bit integer id")
    return value.to_bytes(nbytes, "big")


def _span(raw: Mapping[str, Any]) -> tuple[tuple[tuple[str, Any], ...], str, trace_pb2.Span]:
    context = raw.get("context") or {}
    parent = raw.get("parent") or {}
    status = raw.get("status") or {}
    span = trace_pb2.Span(
        trace_id=_hex_id(context.get("trace_id"), 16, "trace_id"),
        span_id=_hex_id(context.get("span_id"), 8, "span_id"),
        parent_span_id=_hex_id(parent["span_id"], 8, "parent span_id")
        if parent.get("span_id")
        else b"",
        name=str(raw.get("name", "")),
        kind=trace_pb2.Span.SpanKind.ValueType(
            _KINDS.get(str(raw.get("kind", "internal")).lower(), SpanKind.INTERNAL)
        ),
        start_time_unix_nano=int(raw.get("start_time") or 0),
        end_time_unix_nano=int(raw.get("end_time") or 0),
        attributes=key_values(raw.get("attributes") or {}),
    )
    span.status.code = trace_pb2.Status.StatusCode.ValueType(
        _STATUS.get(str(status.get("status_code", "unset")).lower(), StatusCode.UNSET)
    )
    if status.get("description"):
        span.status.message = str(status["description"])
    resource = raw.get("resource") or {}
    resource_key = tuple(sorted((resource.get("attributes") or {}).items()))
    scope = (raw.get("instrumentation_scope") or {}).get("name", "any_agent")
    return resource_key, scope, span


def to_request(
    document: Mapping[str, Any], *, source: str = "<any-agent>"
) -> ExportTraceServiceRequest:
    """Convert an any-agent ``{"spans": [...]}`` document to one OTLP trace request.

    Raises:
        InputError: a span without a valid ``context`` id.
    """
    request = ExportTraceServiceRequest()
    groups: dict[tuple[Any, str], list[trace_pb2.Span]] = {}
    for number, raw in enumerate(document.get("spans") or [], start=1):
        if not isinstance(raw, Mapping):
            raise InputError(f"span {number} is not an object", source=source)
        try:
            resource_key, scope, span = _span(raw)
        except (InputError, ValueError, TypeError) as exc:
            raise InputError(f"span {number}: {exc}", source=source) from exc
        groups.setdefault((resource_key, scope), []).append(span)
    for (resource_key, scope), spans in groups.items():
        resource_spans = request.resource_spans.add()
        resource_spans.resource.attributes.extend(key_values(dict(resource_key)))
        scope_spans = resource_spans.scope_spans.add()
        scope_spans.scope.name = scope
        scope_spans.spans.extend(spans)
    return request
