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

from collections.abc import Callable, Mapping
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


def _check(obj: Any, allowed: frozenset[str]) -> dict[str, Any]:
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
    value = obj.get(key, "")
    if type(value) is not str:
        raise Unsupported
    if not value:
        return ""
    if len(value) != 2 * size:
        raise Unsupported
    try:
        return bytes.fromhex(value).hex()
    except ValueError:
        raise Unsupported from None


def _int_value(raw: Any) -> int:
    if type(raw) is str and raw.lstrip("-").isdigit() and raw.isascii():
        raw = int(raw)
    if type(raw) is int and -_I64 <= raw < _I64:
        return raw
    raise Unsupported


def _bool_value(raw: Any) -> bool:
    if type(raw) is bool:
        return raw
    raise Unsupported


def _double_value(raw: Any) -> float:
    if type(raw) is float or type(raw) is int:
        return float(raw)
    raise Unsupported


def _array_value(raw: Any) -> tuple[Any, ...]:
    if type(raw) is not dict or not raw.keys() <= {"values"}:
        raise Unsupported
    return tuple(_any(v) for v in _list(raw, "values"))


def _kvlist_value(raw: Any) -> dict[str, Any]:
    if type(raw) is not dict or not raw.keys() <= {"values"}:
        raise Unsupported
    return _attributes(raw, "values")


def _string_value(raw: Any) -> str:
    if type(raw) is str:
        return raw
    raise Unsupported


_DECODE: dict[str, Callable[[Any], Any]] = {
    "stringValue": _string_value,
    "intValue": _int_value,
    "boolValue": _bool_value,
    "doubleValue": _double_value,
    "arrayValue": _array_value,
    "kvlistValue": _kvlist_value,
}
"""AnyValue kind -> decoder of its value (bytes are left to json_format: base64)."""


def _any(value: Any) -> Any:
    """Decode one AnyValue as :func:`tracegrade.otlp.codec.decode_any_value` does."""
    if type(value) is not dict or len(value) > 1:
        raise Unsupported
    if not value:
        return None
    ((kind, raw),) = value.items()
    decode = _DECODE.get(kind)
    if decode is None:
        raise Unsupported
    return decode(raw)


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if type(value) is not list:
        raise Unsupported
    return value


def _attributes(obj: Mapping[str, Any], key: str = "attributes") -> dict[str, Any]:
    """A list of KeyValue as a dict; a ``stringValue`` (most values) is read inline."""
    out = {}
    for kv in _list(obj, key):
        # Fast path: exactly {"key": str, "value": {"stringValue": str}}.
        if type(kv) is dict and len(kv) == 2:
            name, value = kv.get("key"), kv.get("value")
            if type(name) is str and type(value) is dict and len(value) == 1:
                raw = value.get("stringValue")
                if type(raw) is str:
                    out[name] = raw
                    continue
        if type(kv) is not dict or not kv.keys() <= {"key", "value"} or None in kv.values():
            raise Unsupported
        out[_str(kv, "key")] = _any(kv.get("value", {}))
    return out


_STATUS_KEYS = frozenset({"code", "message"})
_SPAN_COUNTS = ("flags", "droppedEventsCount", "droppedLinksCount")
"""Span fields validated but not kept: unsigned 32-bit counts (``traceState`` aside)."""


def _event(raw: Any) -> SpanEvent:
    obj = _check(raw, _EVENT_KEYS)
    return SpanEvent(_str(obj, "name"), _uint(obj, "timeUnixNano"), _attributes(obj))


def _status(obj: Mapping[str, Any]) -> tuple[int, str]:
    """A span's status: (code, message); absent: (0, '')."""
    if "status" not in obj:
        return 0, ""
    status = _check(obj["status"], _STATUS_KEYS)
    code = status.get("code", 0)
    if type(code) is not int:
        raise Unsupported
    return _enum(code), _str(status, "message")


def _span(raw: Any, resource: Mapping[str, Any], scope: tuple[str, str]) -> Span:
    obj = _check(raw, _SPAN_KEYS)
    code, message = _status(obj)
    events = tuple(_event(e) for e in _list(obj, "events")) if "events" in obj else ()
    kind = obj.get("kind", 0)
    if "links" in obj and _list(obj, "links") or type(kind) is not int:
        raise Unsupported  # links are validated by json_format; kinds may be names
    if "traceState" in obj:
        _str(obj, "traceState")
    for key in _SPAN_COUNTS:
        if key in obj:
            _uint(obj, key, 1 << 32)
    return Span(
        _hex_id(obj, "traceId", 16),
        _hex_id(obj, "spanId", 8),
        _hex_id(obj, "parentSpanId", 8) or None,
        _str(obj, "name"),
        _enum(kind),
        _uint(obj, "startTimeUnixNano"),
        _uint(obj, "endTimeUnixNano"),
        code,
        message,
        _attributes(obj),
        events,
        resource,
        scope[0],
        scope[1],
        _uint(obj, "droppedAttributesCount", 1 << 32) if "droppedAttributesCount" in obj else 0,
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
