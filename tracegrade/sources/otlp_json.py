"""OTLP/JSON as the backends answer it, into OTLP trace requests.

Backends bend the OTLP/JSON encoding in small ways, all read here: field names in
lowerCamelCase or snake_case (Phoenix, MLflow), ids in hex (upper or lower case: Jaeger,
Phoenix) or base64 (protobuf's JSON mapping: Tempo, MLflow), enums as numbers or names
(``SPAN_KIND_INTERNAL``), 64-bit numbers as strings, ``null`` for absent fields, the trace
wrapped in ``{"result": …}`` (Jaeger's API v3), ``{"trace": …}`` (Tempo's ``/api/v2/traces``)
or named ``batches`` (Tempo's v1 answer).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.errors import OtlpDecodeError
from tracegrade.otlp.codec import ExportTraceServiceRequest, parse_traces_json

_WRAPPERS = ("result", "trace")
_RESOURCE_SPANS = ("resourceSpans", "resource_spans", "batches")


def without_nulls(node: Any) -> Any:
    """A copy of a JSON tree without ``null`` members (absent, as OTLP means them)."""
    if isinstance(node, dict):
        return {k: without_nulls(v) for k, v in node.items() if v is not None}
    if isinstance(node, list):
        return [without_nulls(v) for v in node if v is not None]
    return node


def resource_spans_of(document: Any) -> list[Any]:
    """The ``resourceSpans`` of an answer, unwrapped (see the module docstring); [] when it
    holds none (an empty search, a trace not found)."""
    while isinstance(document, dict):
        for key in _RESOURCE_SPANS:
            if key in document:
                return list(document[key] or [])
        inner = next((document[k] for k in _WRAPPERS if isinstance(document.get(k), dict)), None)
        if inner is None:
            return []
        document = inner
    return []


def request_from_json(document: Any, source: str) -> ExportTraceServiceRequest:
    """One OTLP trace request from a backend's OTLP/JSON answer (any of the forms of the module
    docstring); fields OTLP does not define are ignored, as receivers must.

    Raises:
        OtlpDecodeError: the answer is not OTLP/JSON (``source`` names the backend and path).
    """
    groups = resource_spans_of(document)
    try:
        return parse_traces_json({"resourceSpans": without_nulls(groups)}, ignore_unknown=True)
    except OtlpDecodeError as exc:
        raise OtlpDecodeError(str(exc), source=source) from None


def request_of_spans(
    spans: Sequence[Mapping[str, Any]],
    source: str,
    *,
    resource: Mapping[str, Any] | None = None,
    scope: Mapping[str, Any] | None = None,
) -> ExportTraceServiceRequest:
    """One OTLP trace request holding ``spans`` (OTLP/JSON span objects, in any of the forms of
    the module docstring) under one resource and scope (OTLP/JSON objects; none: empty).

    Raises:
        OtlpDecodeError: as :func:`request_from_json`.
    """
    group = {
        "resource": dict(resource or {}),
        "scopeSpans": [{"scope": dict(scope or {}), "spans": list(spans)}],
    }
    return request_from_json({"resourceSpans": [group]}, source)


def split_by_trace(request: ExportTraceServiceRequest) -> dict[str, ExportTraceServiceRequest]:
    """The spans of ``request`` by trace id (hex), each under its own resource and scope."""
    out: dict[str, ExportTraceServiceRequest] = {}
    for group in request.resource_spans:
        for scope_spans in group.scope_spans:
            by_trace: dict[str, list[Any]] = {}
            for span in scope_spans.spans:
                by_trace.setdefault(span.trace_id.hex(), []).append(span)
            for trace_id, spans in by_trace.items():
                target = out.setdefault(trace_id, ExportTraceServiceRequest())
                new_group = target.resource_spans.add()
                new_group.resource.CopyFrom(group.resource)
                new_group.schema_url = group.schema_url
                new_scope = new_group.scope_spans.add()
                new_scope.scope.CopyFrom(scope_spans.scope)
                new_scope.schema_url = scope_spans.schema_url
                new_scope.spans.extend(spans)
    return out
