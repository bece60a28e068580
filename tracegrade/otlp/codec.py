"""OTLP decoding and encoding: protobuf and OTLP/JSON to :mod:`tracegrade.spans` and back.

Both encodings go through the generated classes of ``opentelemetry-proto``
(``ExportTraceServiceRequest``, ``ExportLogsServiceRequest``). OTLP/JSON is the protobuf JSON
mapping with the differences the OTLP specification sets out: trace and span ids are hex
strings (not base64), enums are integers, and 64-bit integers may be strings. Field names
may be lowerCamelCase or the original snake_case. Ids that arrive base64-encoded (as the
plain protobuf JSON mapping would write them) are accepted too.

Errors: every parse function raises :class:`~tracegrade.errors.OtlpDecodeError` with the
protocol-level reason; callers add the file and line.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Mapping
from typing import Any, cast

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.errors import OtlpDecodeError
from tracegrade.spans import LogRecord, Span, SpanEvent

__all__ = [
    "ExportLogsServiceRequest",
    "ExportTraceServiceRequest",
    "any_value",
    "decode_any_value",
    "decode_attributes",
    "logs_from_request",
    "parse_logs_json",
    "parse_logs_protobuf",
    "parse_traces_json",
    "parse_traces_protobuf",
    "request_to_json",
    "span_from_proto",
    "spans_from_request",
]

_ID_KEYS = frozenset({"traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id"})
_ID_LENGTHS = {16, 8}


# --- AnyValue -----------------------------------------------------------------------------


def decode_any_value(value: AnyValue) -> Any:
    """Decode one OTLP ``AnyValue`` to a Python value (tuple for arrays, dict for kvlists)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return tuple(decode_any_value(v) for v in value.array_value.values)
    if kind == "kvlist_value":
        return {kv.key: decode_any_value(kv.value) for kv in value.kvlist_value.values}
    if kind == "bytes_value":
        return bytes(value.bytes_value)
    return None


def decode_attributes(attributes: Iterable[KeyValue]) -> dict[str, Any]:
    """Decode repeated ``KeyValue`` to a dict (a repeated key keeps its last value)."""
    return {kv.key: decode_any_value(kv.value) for kv in attributes}


def any_value(value: Any) -> AnyValue:
    """Encode a Python value as an OTLP ``AnyValue``.

    ``str``/``bool``/``int``/``float``/``bytes`` map to their scalar fields, lists and tuples to
    ``array_value``, dicts to ``kvlist_value``; ``None`` gives an empty AnyValue. Anything
    else is encoded as its ``str()``.
    """
    out = AnyValue()
    if value is None:
        return out
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int_value = value
    elif isinstance(value, float):
        out.double_value = value
    elif isinstance(value, str):
        out.string_value = value
    elif isinstance(value, bytes):
        out.bytes_value = value
    elif isinstance(value, (list, tuple)):
        out.array_value.values.extend(any_value(v) for v in value)
    elif isinstance(value, Mapping):
        out.kvlist_value.values.extend(
            KeyValue(key=str(k), value=any_value(v)) for k, v in value.items()
        )
    else:
        out.string_value = str(value)
    return out


def key_values(attributes: Mapping[str, Any]) -> list[KeyValue]:
    """Encode a dict of attributes as repeated ``KeyValue`` (``None`` values are skipped)."""
    return [KeyValue(key=k, value=any_value(v)) for k, v in attributes.items() if v is not None]


# --- protobuf -> spans / log records ------------------------------------------------------


def _hex(raw: bytes) -> str:
    return raw.hex()


def span_from_proto(
    span: trace_pb2.Span,
    resource_attributes: Mapping[str, Any],
    scope_name: str = "",
    scope_version: str = "",
) -> Span:
    """Decode one protobuf ``Span`` together with its resource attributes and scope."""
    return Span(
        trace_id=_hex(span.trace_id),
        span_id=_hex(span.span_id),
        parent_span_id=_hex(span.parent_span_id) or None,
        name=span.name,
        kind=span.kind,
        start_unix_nano=span.start_time_unix_nano,
        end_unix_nano=span.end_time_unix_nano,
        status_code=span.status.code,
        status_message=span.status.message,
        attributes=decode_attributes(span.attributes),
        events=tuple(
            SpanEvent(e.name, e.time_unix_nano, decode_attributes(e.attributes))
            for e in span.events
        ),
        resource_attributes=resource_attributes,
        scope_name=scope_name,
        scope_version=scope_version,
        dropped_attributes_count=span.dropped_attributes_count,
    )


def spans_from_request(request: ExportTraceServiceRequest) -> list[Span]:
    """All spans of an ``ExportTraceServiceRequest``, in payload order."""
    spans: list[Span] = []
    for resource_spans in request.resource_spans:
        resource = decode_attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = scope_spans.scope
            spans.extend(
                span_from_proto(s, resource, scope.name, scope.version) for s in scope_spans.spans
            )
    return spans


def log_from_proto(
    record: logs_pb2.LogRecord, resource_attributes: Mapping[str, Any], scope_name: str = ""
) -> LogRecord:
    """Decode one protobuf ``LogRecord``; the event name falls back to ``event.name``."""
    attributes = decode_attributes(record.attributes)
    event_name = getattr(record, "event_name", "") or str(attributes.get("event.name") or "")
    body = decode_any_value(record.body) if record.HasField("body") else None
    return LogRecord(
        trace_id=_hex(record.trace_id) or None,
        span_id=_hex(record.span_id) or None,
        time_unix_nano=record.time_unix_nano,
        observed_time_unix_nano=record.observed_time_unix_nano,
        event_name=event_name,
        body=body,
        attributes=attributes,
        severity_number=record.severity_number,
        severity_text=record.severity_text,
        resource_attributes=resource_attributes,
        scope_name=scope_name,
    )


def logs_from_request(request: ExportLogsServiceRequest) -> list[LogRecord]:
    """All log records of an ``ExportLogsServiceRequest``, in payload order."""
    records: list[LogRecord] = []
    for resource_logs in request.resource_logs:
        resource = decode_attributes(resource_logs.resource.attributes)
        for scope_logs in resource_logs.scope_logs:
            name = scope_logs.scope.name
            records.extend(log_from_proto(r, resource, name) for r in scope_logs.log_records)
    return records


# --- protobuf bytes ------------------------------------------------------------------------


def _parse_protobuf(data: bytes, message: Any) -> Any:
    try:
        message.ParseFromString(data)
    except DecodeError as exc:
        raise OtlpDecodeError(f"invalid {type(message).__name__} protobuf: {exc}") from exc
    return message


def parse_traces_protobuf(data: bytes) -> ExportTraceServiceRequest:
    """Parse a binary ``ExportTraceServiceRequest``.

    Raises:
        OtlpDecodeError: the bytes are not a valid protobuf message.
    """
    return cast(ExportTraceServiceRequest, _parse_protobuf(data, ExportTraceServiceRequest()))


def parse_logs_protobuf(data: bytes) -> ExportLogsServiceRequest:
    """Parse a binary ``ExportLogsServiceRequest``.

    Raises:
        OtlpDecodeError: the bytes are not a valid protobuf message.
    """
    return cast(ExportLogsServiceRequest, _parse_protobuf(data, ExportLogsServiceRequest()))


# --- OTLP/JSON -----------------------------------------------------------------------------


def _id_to_base64(value: Any, key: str) -> str:
    """Convert an OTLP/JSON id (hex, or base64 as a lenient fallback) to protobuf-JSON base64."""
    if not isinstance(value, str):
        raise OtlpDecodeError(f"{key} must be a hex string, got {type(value).__name__}")
    if value == "":
        return ""
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) not in _ID_LENGTHS:
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) not in _ID_LENGTHS:
            raise OtlpDecodeError(f"{key} {value!r} is not a 16- or 32-digit hex id")
    return base64.b64encode(raw).decode("ascii")


def _ids_to_base64(node: Any) -> Any:
    """Copy of an OTLP/JSON tree with every trace/span id rewritten for ``ParseDict``."""
    if isinstance(node, dict):
        return {
            k: (_id_to_base64(v, k) if k in _ID_KEYS else _ids_to_base64(v))
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_ids_to_base64(v) for v in node]
    return node


def _load_json(payload: str | bytes | Mapping[str, Any]) -> Mapping[str, Any]:
    if isinstance(payload, Mapping):
        return payload
    try:
        obj = json.loads(payload)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise OtlpDecodeError(f"invalid JSON: {exc}") from exc
    except RecursionError as exc:
        raise OtlpDecodeError("invalid JSON: nested too deeply") from exc
    if not isinstance(obj, dict):
        raise OtlpDecodeError(
            f"an OTLP/JSON request must be a JSON object, got {type(obj).__name__}"
        )
    return obj


def _parse_json(
    payload: str | bytes | Mapping[str, Any], message: Any, ignore_unknown: bool
) -> Any:
    try:
        obj = _ids_to_base64(_load_json(payload))
        return json_format.ParseDict(obj, message, ignore_unknown_fields=ignore_unknown)
    except json_format.ParseError as exc:
        raise OtlpDecodeError(f"invalid OTLP/JSON {type(message).__name__}: {exc}") from exc
    except RecursionError as exc:
        raise OtlpDecodeError(
            f"invalid OTLP/JSON {type(message).__name__}: nested too deeply"
        ) from exc


def parse_traces_json(
    payload: str | bytes | Mapping[str, Any], *, ignore_unknown: bool = False
) -> ExportTraceServiceRequest:
    """Parse an OTLP/JSON ``ExportTraceServiceRequest`` (text, bytes or an already-loaded dict).
    ``ignore_unknown``: skip fields the schema does not know, as the OTLP specification
    requires of receivers (files are read strictly, so a typo is reported).

    Raises:
        OtlpDecodeError: invalid JSON, a bad id, a value of the wrong type, or (unless
            ``ignore_unknown``) a field the schema does not know.
    """
    return cast(
        ExportTraceServiceRequest,
        _parse_json(payload, ExportTraceServiceRequest(), ignore_unknown),
    )


def parse_logs_json(
    payload: str | bytes | Mapping[str, Any], *, ignore_unknown: bool = False
) -> ExportLogsServiceRequest:
    """Parse an OTLP/JSON ``ExportLogsServiceRequest`` (text, bytes or a loaded dict);
    ``ignore_unknown`` as :func:`parse_traces_json`.

    Raises:
        OtlpDecodeError: as :func:`parse_traces_json`.
    """
    return cast(
        ExportLogsServiceRequest,
        _parse_json(payload, ExportLogsServiceRequest(), ignore_unknown),
    )


def _ids_to_hex(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in _ID_KEYS and isinstance(v, str)
                else _ids_to_hex(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_ids_to_hex(v) for v in node]
    return node


def request_to_json(
    request: ExportTraceServiceRequest | ExportLogsServiceRequest,
) -> dict[str, Any]:
    """The OTLP/JSON form of a request: lowerCamelCase keys, hex ids, integer enums."""
    obj = json_format.MessageToDict(request, use_integers_for_enums=True)
    return cast(dict[str, Any], _ids_to_hex(obj))
