"""Empty top-level entries cut from OTLP protobuf bytes before decoding (collector.compact)."""

from __future__ import annotations

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.collector import compact
from tracegrade.collector.admission import admit
from tracegrade.collector.compact import TooManyEntries, drop_empty_entries, scope_slices

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


def test_scope_slices_are_the_bytes_of_each_decoded_scope_in_order():
    request = trace_request(agent_turn)
    request.resource_spans.add().CopyFrom(trace_request(agent_turn).resource_spans[0])
    request.resource_spans[1].scope_spans.add().scope.name = "second scope"
    slices = scope_slices(request.SerializeToString())
    assert [len(scopes) for scopes in slices] == [1, 2]
    for group, scopes in zip(request.resource_spans, slices, strict=True):
        for scoped, raw in zip(group.scope_spans, scopes, strict=True):
            assert bytes(raw) == scoped.SerializeToString()


def test_scope_slices_of_a_malformed_body_are_none():
    body = trace_request(agent_turn).SerializeToString()
    assert scope_slices(body[:-3]) is None


def test_admitted_spans_are_stored_as_the_scope_bytes_received():
    """Not serialised again: a scope with fields in an unusual order keeps its bytes."""
    request = trace_request(agent_turn)
    scoped = request.resource_spans[0].scope_spans[0]
    spans = b"".join(b"\x12" + _varint(s.ByteSize()) + s.SerializeToString() for s in scoped.spans)
    scope = b"\x0a" + _varint(scoped.scope.ByteSize()) + scoped.scope.SerializeToString()
    reordered = spans + scope  # spans before the scope field: valid, not canonical
    group = request.resource_spans[0]
    resource = b"\x0a" + _varint(group.resource.ByteSize()) + group.resource.SerializeToString()
    entry = resource + b"\x12" + _varint(len(reordered)) + reordered
    body = b"\x0a" + _varint(len(entry)) + entry
    admitted = admit("traces", body, "protobuf")
    ((_, _, ((_, _, chunks),)),) = admitted.prepared.groups
    assert chunks[0][3] == reordered != scoped.SerializeToString()


def _varint(value: int) -> bytes:
    out = b""
    while True:
        byte, value = value & 0x7F, value >> 7
        out += bytes([byte | (0x80 if value else 0)])
        if not value:
            return out


def _entries_decoded(request, scopes: str, items: str) -> int:
    groups = request.resource_spans if scopes == "scope_spans" else request.resource_logs
    return sum(
        1 + len(getattr(g, scopes)) + sum(len(getattr(s, items)) for s in getattr(g, scopes))
        for g in groups
    )


def test_items_are_counted_from_the_bytes_as_decoding_finds_them():
    """Resources, scopes and spans / log records, counted without decoding, equal what the
    decoded request holds; long spans (multi-byte lengths) and other fields are stepped over."""
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

    request = trace_request(agent_turn)
    request.resource_spans.add().CopyFrom(trace_request(agent_turn).resource_spans[0])
    request.resource_spans[1].scope_spans.add().scope.name = "second scope"
    big = request.resource_spans[1].scope_spans[0].spans[0]
    big.attributes.add(key="long").value.string_value = "x" * 3_000_000  # a 4-byte length
    body = request.SerializeToString()
    assert compact.count_items(body, 10**9) == _entries_decoded(request, "scope_spans", "spans")
    assert compact.count_items(body, 3) > 3  # stops once past the cap
    logs = ExportLogsServiceRequest()
    for n in range(3):
        logs.resource_logs.add().scope_logs.add().log_records.add().body.string_value = str(n)
    logs.resource_logs[0].scope_logs[0].log_records.add().severity_text = "WARN"
    expected = _entries_decoded(logs, "scope_logs", "log_records")
    assert compact.count_items(logs.SerializeToString(), 10**9) == expected == 10


def test_tiny_items_are_counted_at_a_step_each():
    """The amplification case: millions of 5-byte spans in one scope."""
    spans = b"\x12\x03\x0a\x01\x41" * 100_000
    scope = b"\x12" + _varint(len(spans)) + spans
    body = b"\x0a" + _varint(len(scope)) + scope
    request = ExportTraceServiceRequest.FromString(body)
    assert compact.count_items(body, 10**9) == _entries_decoded(request, "scope_spans", "spans")


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))
