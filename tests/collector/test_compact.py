"""Empty top-level entries cut from OTLP protobuf bytes before decoding (collector.compact)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.collector import compact
from tracegrade.collector.compact import TooManyEntries, drop_empty_entries

EMPTY = b"\x0a\x00"


def test_a_body_without_empty_entries_is_returned_as_is():
    body = trace_request(agent_turn).SerializeToString()
    assert drop_empty_entries(body) is body


def test_empty_entries_anywhere_at_the_top_are_dropped_and_the_rest_kept_byte_for_byte():
    first, second = (trace_request(agent_turn).SerializeToString() for _ in range(2))
    body = EMPTY * 3 + first + EMPTY + second + EMPTY * 5
    compacted = drop_empty_entries(body)
    assert compacted == first + second
    decoded = ExportTraceServiceRequest.FromString(body)
    assert [group for group in decoded.resource_spans if group.ByteSize()] == list(
        ExportTraceServiceRequest.FromString(compacted).resource_spans
    )


def test_empty_nested_messages_are_not_touched():
    request = trace_request(agent_turn)
    request.resource_spans[0].scope_spans.add()  # an empty ScopeSpans inside a real entry
    body = request.SerializeToString()
    assert drop_empty_entries(EMPTY + body) == body


@pytest.mark.parametrize("body", [EMPTY + b"\x0a\x05ab", EMPTY + b"\x0a", EMPTY + b"\x0f\x01"])
def test_a_malformed_body_is_left_for_the_decoder_to_reject(body):
    assert drop_empty_entries(body) is body


def test_more_non_empty_entries_than_the_limit_are_refused(monkeypatch):
    monkeypatch.setattr(compact, "MAX_ENTRIES", 3)
    tiny = b"\x0a\x03\x1a\x01a"  # a ResourceSpans holding only a schema URL
    assert drop_empty_entries(EMPTY + tiny * 3) == tiny * 3
    with pytest.raises(TooManyEntries, match="more than 3 resource entries"):
        drop_empty_entries(tiny * 4)
