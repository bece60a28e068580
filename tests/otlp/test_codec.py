"""OTLP decoding: protobuf and OTLP/JSON through opentelemetry-proto, hex ids, AnyValue."""

from __future__ import annotations

import json

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracegrade.errors import OtlpDecodeError
from tracegrade.otlp.codec import (
    any_value,
    decode_any_value,
    logs_from_request,
    parse_logs_json,
    parse_traces_json,
    parse_traces_protobuf,
    request_to_json,
    spans_from_request,
)

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"


def otlp_json(**span_overrides):
    span = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "parentSpanId": "",
        "name": "chat gpt-4o",
        "kind": 3,
        "startTimeUnixNano": "1544712660000000000",
        "endTimeUnixNano": "1544712661000000000",
        "attributes": [
            {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
            {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
            {
                "key": "gen_ai.response.finish_reasons",
                "value": {"arrayValue": {"values": [{"stringValue": "stop"}]}},
            },
            {
                "key": "x.map",
                "value": {"kvlistValue": {"values": [{"key": "a", "value": {"doubleValue": 1.5}}]}},
            },
            {"key": "x.bytes", "value": {"bytesValue": "aGk="}},
            {"key": "x.bool", "value": {"boolValue": True}},
        ],
        "status": {"code": 2, "message": "boom"},
        "events": [
            {
                "name": "exception",
                "timeUnixNano": "1544712660500000000",
                "attributes": [{"key": "exception.type", "value": {"stringValue": "ValueError"}}],
            }
        ],
    }
    span.update(span_overrides)
    return {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "agent"}}]
                },
                "scopeSpans": [
                    {"scope": {"name": "openai_v2", "version": "2.4b0"}, "spans": [span]}
                ],
            }
        ]
    }


def test_json_decodes_hex_ids_values_status_events_and_resource():
    (span,) = spans_from_request(parse_traces_json(json.dumps(otlp_json())))
    assert (span.trace_id, span.span_id, span.parent_span_id) == (TRACE_ID, SPAN_ID, None)
    assert span.attributes == {
        "gen_ai.operation.name": "chat",
        "gen_ai.usage.input_tokens": 12,
        "gen_ai.response.finish_reasons": ("stop",),
        "x.map": {"a": 1.5},
        "x.bytes": b"hi",
        "x.bool": True,
    }
    assert (span.kind, span.status_code, span.status_message, span.duration_ms) == (
        3,
        2,
        "boom",
        1000.0,
    )
    assert span.events[0].name == "exception" and span.events[0].attributes == {
        "exception.type": "ValueError"
    }
    assert span.resource_attributes == {"service.name": "agent"}
    assert (span.scope_name, span.scope_version) == ("openai_v2", "2.4b0")


def test_snake_case_keys_and_numeric_int64_are_accepted():
    payload = otlp_json(startTimeUnixNano=1544712660000000000)
    payload["resource_spans"] = payload.pop("resourceSpans")
    (span,) = spans_from_request(parse_traces_json(payload))
    assert span.start_unix_nano == 1544712660000000000


def test_base64_ids_are_accepted_leniently():
    import base64

    b64 = base64.b64encode(bytes.fromhex(TRACE_ID)).decode()
    (span,) = spans_from_request(parse_traces_json(otlp_json(traceId=b64)))
    assert span.trace_id == TRACE_ID


@pytest.mark.parametrize("bad_id", ["xyz", "abcd", 12])
def test_bad_ids_are_rejected_with_the_field(bad_id):
    with pytest.raises(OtlpDecodeError, match="spanId"):
        parse_traces_json(otlp_json(spanId=bad_id))


def test_unknown_attribute_value_type_is_a_protocol_error():
    payload = otlp_json()
    payload["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"].append(
        {"key": "weird", "value": {"decimalValue": "1.0"}}
    )
    with pytest.raises(OtlpDecodeError, match="decimalValue"):
        parse_traces_json(payload)


def test_protobuf_round_trip_through_json():
    request = parse_traces_json(otlp_json())
    again = parse_traces_protobuf(request.SerializeToString())
    assert again == request
    assert parse_traces_json(request_to_json(again)) == request
    assert (
        request_to_json(again)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
        == TRACE_ID
    )


def test_truncated_protobuf_is_rejected():
    data = parse_traces_json(otlp_json()).SerializeToString()
    with pytest.raises(OtlpDecodeError, match="ExportTraceServiceRequest"):
        parse_traces_protobuf(data[:-7])


def test_logs_json_event_name_from_field_or_attribute():
    payload = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "logRecords": [
                            {
                                "traceId": TRACE_ID,
                                "spanId": SPAN_ID,
                                "eventName": "gen_ai.choice",
                                "timeUnixNano": "5",
                                "body": {
                                    "kvlistValue": {
                                        "values": [{"key": "index", "value": {"intValue": "0"}}]
                                    }
                                },
                            },
                            {
                                "traceId": TRACE_ID,
                                "spanId": SPAN_ID,
                                "observedTimeUnixNano": "6",
                                "attributes": [
                                    {
                                        "key": "event.name",
                                        "value": {"stringValue": "gen_ai.user.message"},
                                    }
                                ],
                            },
                        ]
                    }
                ]
            }
        ]
    }
    first, second = logs_from_request(parse_logs_json(payload))
    assert (first.event_name, first.body, first.span_id) == ("gen_ai.choice", {"index": 0}, SPAN_ID)
    assert (second.event_name, second.sort_time, second.body) == ("gen_ai.user.message", 6, None)


@pytest.mark.parametrize("value", ["s", True, 3, 2.5, b"\x00", ["a", 1], {"k": {"n": [1, 2]}}])
def test_any_value_round_trip(value):
    expected = tuple(value) if isinstance(value, list) else value
    if isinstance(value, dict):
        expected = {"k": {"n": (1, 2)}}
    assert decode_any_value(any_value(value)) == expected


def test_empty_request_decodes_to_nothing():
    assert spans_from_request(ExportTraceServiceRequest()) == []
