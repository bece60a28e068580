"""OTLP/JSON decoded straight to spans (tracegrade.otlp.jsonfast) equals the json_format path,
and anything outside its subset is refused so the caller takes that path."""

from __future__ import annotations

import base64
import copy

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.sdk import agent_turn, record
from tracegrade.otlp.codec import (
    logs_from_request,
    parse_logs_json,
    parse_traces_json,
    request_to_json,
    spans_from_request,
)
from tracegrade.otlp.jsonfast import Unsupported, logs_from_json, spans_from_json

from .test_codec import otlp_json


def sdk_request_json():
    return request_to_json(encode_spans(record(lambda tracer: agent_turn(tracer, "où?"))))


def test_sdk_spans_decode_exactly_as_through_protobuf():
    obj = sdk_request_json()
    assert spans_from_json(obj) == spans_from_request(parse_traces_json(obj))


def test_every_attribute_type_but_bytes_decodes_as_through_protobuf():
    obj = otlp_json()
    attributes = obj["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"]
    attributes[:] = [a for a in attributes if "bytesValue" not in a["value"]]
    attributes.append({"key": "x.big", "value": {"intValue": str(2**63 - 1)}})
    attributes.append({"key": "x.neg", "value": {"intValue": -3}})
    attributes.append({"key": "x.empty", "value": {}})
    assert spans_from_json(obj) == spans_from_request(parse_traces_json(obj))


def _span(obj):
    return obj["resourceSpans"][0]["scopeSpans"][0]["spans"][0]


@pytest.mark.parametrize(
    "change",
    [
        lambda s: s.update(kind="SPAN_KIND_CLIENT"),  # enum by name
        lambda s: s.update(traceId=base64.b64encode(bytes(16)).decode()),  # base64 id
        lambda s: s.update(trace_id=s.pop("traceId")),  # snake_case key
        lambda s: s.update(startTimeUnixNano=1.5e18),  # float time
        lambda s: s.update(name=None),  # null
        lambda s: s.update(surprise=1),  # unknown field
        lambda s: s["attributes"].append({"key": "b", "value": {"bytesValue": "aGk="}}),
        lambda s: s.update(links=[{"traceId": "00" * 16, "spanId": "00" * 8}]),
        lambda s: s.update(events=[5]),  # not an object (was an AttributeError)
        lambda s: s["attributes"].append({"key": "a", "value": {"stringValue": "x"}, "x": 1}),
        lambda s: s["attributes"].append({"key": "a", "value": {"stringValue": "x", "y": 1}}),
        lambda s: s["attributes"].append({"key": 1, "value": {"stringValue": "x"}}),
        lambda s: s["attributes"].append({"key": "a", "value": {"stringValue": 1}}),
        lambda s: s["attributes"].append({"key": "a", "value": {"noValue": "x"}}),
        lambda s: s.update(status={"code": "STATUS_CODE_OK"}),
        lambda s: s.update(droppedLinksCount=-1),
    ],
)
def test_anything_outside_the_canonical_subset_is_refused(change):
    obj = copy.deepcopy(otlp_json())
    change(_span(obj))
    with pytest.raises(Unsupported):
        spans_from_json(obj)


def test_log_records_decode_as_through_protobuf():
    obj = {
        "resourceLogs": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]
                },
                "scopeLogs": [
                    {
                        "scope": {"name": "s"},
                        "logRecords": [
                            {
                                "timeUnixNano": "5",
                                "traceId": "ab" * 16,
                                "spanId": "CD" * 8,
                                "body": {"kvlistValue": {"values": [{"key": "k", "value": {}}]}},
                                "attributes": [
                                    {"key": "event.name", "value": {"stringValue": "gen_ai.choice"}}
                                ],
                            },
                            {"observedTimeUnixNano": 7, "severityNumber": 9, "body": {}},
                        ],
                    }
                ],
            }
        ]
    }
    assert logs_from_json(obj) == logs_from_request(parse_logs_json(obj))
