"""What the receiver accepts from an OTLP payload: decode, validate, redact.

Shared by the gRPC and HTTP front ends, so both protocols accept and reject exactly the same
data. The steps, all before anything is queued for the store:

1. **decode** the body (protobuf, or OTLP/JSON with hex ids) into the request message; a body
   that does not decode raises :class:`~tracegrade.errors.OtlpDecodeError`, which the front
   end turns into ``INVALID_ARGUMENT`` / HTTP 400;
2. **validate** each span and log record (OTLP specification: a trace id is 16 non-zero bytes,
   a span id 8 non-zero bytes, a parent span id empty or 8 bytes; times fit a signed 64-bit
   integer); invalid items are dropped and counted, and the response's ``partial_success``
   reports them while the valid rest is stored;
3. **redact** secrets by key and by form (:mod:`tracegrade.otlp.redaction`, rules in
   ``config/redaction.yaml``) before storage, replacing them with ``[REDACTED]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracegrade.collector.compact import scope_slices
from tracegrade.errors import OtlpDecodeError
from tracegrade.otlp.codec import parse_logs_json, parse_traces_json
from tracegrade.otlp.redaction import REDACTED, Redactor, default_rules
from tracegrade.store.rows import PreparedSpans

__all__ = ["REDACTED", "Redactor", "DEFAULT_REDACT", "Admitted", "admit", "decode"]

Signal = Literal["traces", "logs", "metrics"]
Encoding = Literal["protobuf", "json"]

DEFAULT_REDACT = tuple(default_rules().keys)
"""Attribute keys redacted by default (``config/redaction.yaml``; shell-style patterns,
matched case-insensitively), e.g. ``http.request.header.authorization`` or ``openai.api_key``."""
_MAX_NS = 2**63 - 1
_ZERO_TRACE, _ZERO_SPAN = bytes(16), bytes(8)


@dataclass
class Admitted:
    """A decoded, validated, redacted request ready to store: ``items`` spans or log records
    kept, ``rejected`` dropped with the first reason in ``message``; ``size`` is the wire
    size in bytes (what the receive queue is bounded by)."""

    signal: Signal
    request: Any
    items: int
    rejected: int = 0
    message: str = ""
    size: int = 0
    prepared: PreparedSpans | None = None
    """The spans' rows, prepared here rather than in the writer (traces only)."""
    queued_at: float = 0.0
    """When it entered the receive queue (``time.monotonic()``)."""
    answer_by: float | None = None
    """When its client stops waiting for the answer (``time.monotonic()``; the gRPC call's
    deadline); None: unknown. A request that could not be committed by then is refused
    rather than stored for a client that has gone (and will resend it)."""


def decode(signal: Signal, body: bytes, encoding: Encoding) -> Any:
    """The ``Export*ServiceRequest`` in ``body``.

    Raises:
        OtlpDecodeError: the body is not a valid message of that encoding.
    """
    if encoding == "json":
        if signal == "traces":  # receivers MUST ignore unknown fields (OTLP specification)
            return parse_traces_json(body, ignore_unknown=True)
        if signal == "logs":
            return parse_logs_json(body, ignore_unknown=True)
        return _metrics_json(body)
    kinds: dict[str, type[Message]] = {
        "traces": ExportTraceServiceRequest,
        "logs": ExportLogsServiceRequest,
        "metrics": ExportMetricsServiceRequest,
    }
    message = kinds[signal]()
    try:
        message.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError) as exc:
        raise OtlpDecodeError(f"malformed OTLP protobuf {message.DESCRIPTOR.name}: {exc}") from exc
    return message


def _metrics_json(body: bytes) -> ExportMetricsServiceRequest:
    import json

    from google.protobuf import json_format

    try:
        data = json.loads(body)
        if not isinstance(data, dict):
            raise OtlpDecodeError(
                f"an OTLP/JSON request must be a JSON object, got {type(data).__name__}"
            )
        request: ExportMetricsServiceRequest = json_format.ParseDict(
            data, ExportMetricsServiceRequest(), ignore_unknown_fields=True
        )
        return request
    except (ValueError, TypeError, RecursionError, json_format.ParseError) as exc:
        raise OtlpDecodeError(f"malformed OTLP/JSON metrics: {exc}") from exc


def span_problem(span: Any) -> str | None:
    """Why a span is invalid (OTLP specification), or None."""
    trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
    if len(trace_id) != 16 or trace_id == _ZERO_TRACE:
        return f"span {span.name!r}: invalid trace_id (need 16 non-zero bytes, got {len(trace_id)})"
    if len(span_id) != 8 or span_id == _ZERO_SPAN:
        return f"span {span.name!r}: invalid span_id (need 8 non-zero bytes, got {len(span_id)})"
    if parent and len(parent) != 8:
        return f"span {span.name!r}: invalid parent_span_id (need 8 bytes, got {len(parent)})"
    if span.start_time_unix_nano > _MAX_NS or span.end_time_unix_nano > _MAX_NS:
        return f"span {span.name!r}: time out of range"
    return None


def log_problem(record: Any) -> str | None:
    """Why a log record is invalid (OTLP specification), or None."""
    if len(record.trace_id) not in (0, 16) or len(record.span_id) not in (0, 8):
        return "log record: invalid trace_id or span_id length"
    if record.time_unix_nano > _MAX_NS or record.observed_time_unix_nano > _MAX_NS:
        return "log record: time out of range"
    return None


def _validate(
    groups: Any, scopes_field: str, items_field: str, problem: Any
) -> tuple[int, int, str]:
    kept = rejected = 0
    message = ""
    for group in groups:
        for scoped in getattr(group, scopes_field):
            items = getattr(scoped, items_field)
            # the first problem's text only (one per item was ~1 GB for a 15 MB body of
            # tiny invalid spans)
            first = next((why for why in map(problem, items) if why is not None), None)
            if first is not None:
                message = message or first
                good = [item for item in items if problem(item) is None]
                rejected += len(items) - len(good)
                del items[:]
                items.extend(good)
            kept += len(items)
    return kept, rejected, message


def admit(
    signal: Signal, body: bytes, encoding: Encoding, redactor: Redactor | None = None
) -> Admitted:
    """Decode, validate and redact one export request (see the module docstring).

    Raises:
        OtlpDecodeError: the body does not decode.
    """
    request = decode(signal, body, encoding)
    if signal == "metrics":
        return Admitted(signal, request, 0, size=len(body))
    if signal == "traces":
        kept, rejected, message = _validate(
            request.resource_spans, "scope_spans", "spans", span_problem
        )
    else:
        kept, rejected, message = _validate(
            request.resource_logs, "scope_logs", "log_records", log_problem
        )
    redacted = 0
    if redactor is not None and redactor.may_apply(body, encoding):
        redacted = redactor.request(request)
    prepared = None
    if signal == "traces":
        # The scopes' bytes as received, unless validation or redaction changed the message.
        raw = scope_slices(body) if encoding == "protobuf" and not (rejected or redacted) else None
        prepared = PreparedSpans().add_request(request, raw)
    return Admitted(signal, request, kept, rejected, message, len(body), prepared)
