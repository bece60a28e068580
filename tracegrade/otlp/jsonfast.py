"""OTLP/JSON straight to :mod:`tracegrade.spans`, without the protobuf round trip.

:func:`tracegrade.otlp.codec.parse_traces_json` builds protobuf messages through
``json_format.ParseDict`` and :func:`~tracegrade.otlp.codec.spans_from_request` decodes them
again: most of the cost of reading a Collector file. This module reads the canonical OTLP/JSON
of the OpenTelemetry exporters (lowerCamelCase keys, hex ids, integer enums, 64-bit integers as
strings or numbers) directly from the dicts ``orjson`` returns.

Anything outside that subset (snake_case keys, enum names, base64 ids or bytes, unknown
fields, nulls, values of an unexpected type) raises :class:`Unsupported`; the caller then
takes the ``json_format`` path, which gives today's result or today's error. So for every
input the outcome equals ``spans_from_request(parse_traces_json(obj))``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.spans import LogRecord, Span, SpanEvent

__all__ = ["Unsupported", "logs_from_json", "spans_from_json"]

_U64 = 1 << 64
_I64 = 1 << 63
_SPAN_KEYS = frozenset(
    {
        "traceId",
        "spanId",
        "parentSpanId",
        "traceState",
        "name",
        "kind",
        "startTimeUnixNano",
        "endTimeUnixNano",
        "attributes",
        "droppedAttributesCount",
        "events",
        "droppedEventsCount",
        "links",
        "droppedLinksCount",
        "status",
        "flags",
    }
)
_LOG_KEYS = frozenset(
    {
        "timeUnixNano",
        "observedTimeUnixNano",
        "severityNumber",
        "severityText",
        "body",
        "attributes",
        "droppedAttributesCount",
        "flags",
        "traceId",
        "spanId",
        "eventName",
    }
)
_EVENT_KEYS = frozenset({"timeUnixNano", "name", "attributes", "droppedAttributesCount"})
_RESOURCE_KEYS = frozenset({"attributes", "droppedAttributesCount", "entityRefs"})
_SCOPE_KEYS = frozenset({"name", "version", "attributes", "droppedAttributesCount"})


class Unsupported(Exception):
    """The input is outside the subset read here; use the ``json_format`` path instead."""


def _check(obj: Any, allowed: frozenset[str]) -> Mapping[str, Any]:
    if type(obj) is not dict or not allowed.issuperset(obj) or None in obj.values():
        raise Unsupported
    return obj


def _str(obj: Mapping[str, Any], key: str) -> str:
    value = obj.get(key, "")
    if type(value) is not str:
        raise Unsupported
    return value


def _uint(obj: Mapping[str, Any], key: str, bound: int = _U64) -> int:
    """An unsigned integer field (number or decimal string, as json_format accepts)."""
    value = obj.get(key, 0)
    if type(value) is str and value.isdigit() and value.isascii():
        value = int(value)
    if type(value) is not int or not 0 <= value < bound:
        raise Unsupported
    return value


def _hex_id(obj: Mapping[str, Any], key: str, size: int) -> str:
    """A hex id of ``size`` bytes, lower-cased as the protobuf path writes it ('' if absent)."""
    value = _str(obj, key)
    if not value:
        return ""
    if len(value) != 2 * size:
        raise Unsupported
    try:
        return bytes.fromhex(value).hex()
    except ValueError:
        raise Unsupported from None


def _any(value: Any) -> Any:
    """Decode one AnyValue as :func:`tracegrade.otlp.codec.decode_any_value` does."""
    if type(value) is not dict or len(value) > 1:
        raise Unsupported
    if not value:
        return None
    ((kind, raw),) = value.items()
    if kind == "stringValue" and type(raw) is str:
        return raw
    if kind == "intValue":
        if type(raw) is str and raw.lstrip("-").isdigit() and raw.isascii():
            raw = int(raw)
        if type(raw) is int and -_I64 <= raw < _I64:
            return raw
    elif kind == "boolValue" and type(raw) is bool:
        return raw
    elif kind == "doubleValue" and type(raw) in (float, int):
        return float(raw)
    elif kind == "arrayValue" and type(raw) is dict and raw.keys() <= {"values"}:
        return tuple(_any(v) for v in _list(raw, "values"))
    elif kind == "kvlistValue" and type(raw) is dict and raw.keys() <= {"values"}:
        return _attributes(raw, "values")
    raise Unsupported


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if type(value) is not list:
        raise Unsupported
    return value


def _attributes(obj: Mapping[str, Any], key: str = "attributes") -> dict[str, Any]:
    out = {}
    for kv in _list(obj, key):
        if type(kv) is not dict or not kv.keys() <= {"key", "value"} or None in kv.values():
            raise Unsupported
        out[_str(kv, "key")] = _any(kv.get("value", {}))
    return out


def _span(raw: Any, resource: Mapping[str, Any], scope: tuple[str, str]) -> Span:
    obj = _check(raw, _SPAN_KEYS)
    status = _check(obj.get("status", {}), frozenset({"code", "message"}))
    events = tuple(
        SpanEvent(_str(e, "name"), _uint(_check(e, _EVENT_KEYS), "timeUnixNano"), _attributes(e))
        for e in _list(obj, "events")
    )
    if _list(obj, "links") or type(obj.get("kind", 0)) is not int:
        raise Unsupported  # links are validated by json_format; kinds may be names
    _str(obj, "traceState")
    _uint(obj, "flags", 1 << 32)
    _uint(obj, "droppedEventsCount", 1 << 32)
    _uint(obj, "droppedLinksCount", 1 << 32)
    if type(status.get("code", 0)) is not int:
        raise Unsupported
    return Span(
        trace_id=_hex_id(obj, "traceId", 16),
        span_id=_hex_id(obj, "spanId", 8),
        parent_span_id=_hex_id(obj, "parentSpanId", 8) or None,
        name=_str(obj, "name"),
        kind=_enum(obj.get("kind", 0)),
        start_unix_nano=_uint(obj, "startTimeUnixNano"),
        end_unix_nano=_uint(obj, "endTimeUnixNano"),
        status_code=_enum(status.get("code", 0)),
        status_message=_str(status, "message"),
        attributes=_attributes(obj),
        events=events,
        resource_attributes=resource,
        scope_name=scope[0],
        scope_version=scope[1],
        dropped_attributes_count=_uint(obj, "droppedAttributesCount", 1 << 32),
    )


def _enum(value: int) -> int:
    if not -(1 << 31) <= value < 1 << 31:
        raise Unsupported
    return value


def _resource(group: Mapping[str, Any]) -> dict[str, Any]:
    resource = _check(group.get("resource", {}), _RESOURCE_KEYS)
    if "entityRefs" in resource:
        raise Unsupported
    _uint(resource, "droppedAttributesCount", 1 << 32)
    _str(group, "schemaUrl")
    return _attributes(resource)


def _scope(group: Mapping[str, Any]) -> tuple[str, str]:
    scope = _check(group.get("scope", {}), _SCOPE_KEYS)
    _attributes(scope)
    _uint(scope, "droppedAttributesCount", 1 << 32)
    _str(group, "schemaUrl")
    return _str(scope, "name"), _str(scope, "version")


def spans_from_json(request: Any) -> list[Span]:
    """The spans of one OTLP/JSON ``ExportTraceServiceRequest`` dict, in payload order.

    Raises:
        Unsupported: the request is not in the canonical subset (see the module docstring).
    """
    spans: list[Span] = []
    for group in _list(_check(request, frozenset({"resourceSpans"})), "resourceSpans"):
        _check(group, frozenset({"resource", "scopeSpans", "schemaUrl"}))
        resource = _resource(group)
        for scoped in _list(group, "scopeSpans"):
            _check(scoped, frozenset({"scope", "spans", "schemaUrl"}))
            scope = _scope(scoped)
            spans.extend(_span(s, resource, scope) for s in _list(scoped, "spans"))
    return spans


def _log(raw: Any, resource: Mapping[str, Any], scope_name: str) -> LogRecord:
    obj = _check(raw, _LOG_KEYS)
    attributes = _attributes(obj)
    if type(obj.get("severityNumber", 0)) is not int:
        raise Unsupported
    _uint(obj, "flags", 1 << 32)
    _uint(obj, "droppedAttributesCount", 1 << 32)
    return LogRecord(
        trace_id=_hex_id(obj, "traceId", 16) or None,
        span_id=_hex_id(obj, "spanId", 8) or None,
        time_unix_nano=_uint(obj, "timeUnixNano"),
        observed_time_unix_nano=_uint(obj, "observedTimeUnixNano"),
        event_name=_str(obj, "eventName") or str(attributes.get("event.name") or ""),
        body=_any(obj["body"]) if "body" in obj else None,
        attributes=attributes,
        severity_number=_enum(obj.get("severityNumber", 0)),
        severity_text=_str(obj, "severityText"),
        resource_attributes=resource,
        scope_name=scope_name,
    )


def logs_from_json(request: Any) -> list[LogRecord]:
    """The log records of one OTLP/JSON ``ExportLogsServiceRequest`` dict, in payload order.

    Raises:
        Unsupported: as :func:`spans_from_json`.
    """
    records: list[LogRecord] = []
    for group in _list(_check(request, frozenset({"resourceLogs"})), "resourceLogs"):
        _check(group, frozenset({"resource", "scopeLogs", "schemaUrl"}))
        resource = _resource(group)
        for scoped in _list(group, "scopeLogs"):
            _check(scoped, frozenset({"scope", "logRecords", "schemaUrl"}))
            name = _scope(scoped)[0]
            records.extend(_log(r, resource, name) for r in _list(scoped, "logRecords"))
    return records
