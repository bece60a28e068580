"""Bad input on both protocols: malformed protobuf and JSON, wrong content type, invalid ids,
oversize bodies (including a gzip bomb), truncated gzip. Each gets the protocol's error with
a message; afterwards nothing already stored has changed (every row, byte for byte) and the
receiver still stores valid requests on both protocols."""

from __future__ import annotations

import gzip
import json
import os
from dataclasses import dataclass, field

import grpc
import pytest
from google.rpc import code_pb2
from grpc_status import rpc_status

from tests.support.collect_process import CollectProcess
from tests.support.receiver import (
    HTTP,
    JSON,
    PROTOBUF,
    GrpcClient,
    hand_log,
    hand_span,
    http_export,
    http_response,
    http_status,
    logs_request,
    request_spans,
    running,
    snapshot,
    spans_request,
    stored_logs,
    stored_spans,
)
from tests.support.sdk import agent_turn, trace_request
from tracegrade.otlp.codec import request_to_json

LIMIT = 64 * 1024
"""The receiver's max_request_bytes in this module."""
TRACE = bytes(range(1, 17))


@dataclass
class Live:
    receiver: object
    db: object
    grpc: GrpcClient
    added: set = field(default_factory=set)
    logs_added: bool = False


@pytest.fixture(scope="module")
def live_receiver(tmp_path_factory):
    db = tmp_path_factory.mktemp("bad-input") / "store.db"
    with running(db, max_request_bytes=LIMIT) as receiver, GrpcClient(receiver.grpc_port) as client:
        assert (
            http_export(
                receiver, "traces", trace_request(agent_turn).SerializeToString()
            ).status_code
            == 200
        )
        yield Live(receiver, db, client)


@pytest.fixture
def live(live_receiver):
    """The module's receiver, holding earlier data. After the test: every row stored before
    is unchanged, the only new spans are those the test put in ``live.added`` (nothing at all
    is new unless it set ``added`` or ``logs_added``), and the
    receiver still stores a valid request on each protocol."""
    live_receiver.added, live_receiver.logs_added = set(), False
    before, spans_before = snapshot(live_receiver.db), stored_spans(live_receiver.db)
    yield live_receiver
    after = snapshot(live_receiver.db)
    if not (live_receiver.added or live_receiver.logs_added):
        assert after == before
    for table, rows in before.items():
        assert set(rows) <= set(after[table]), f"rows of {table} changed"
    spans_after = stored_spans(live_receiver.db)
    assert {k: spans_after[k] for k in spans_before} == spans_before
    assert spans_after.keys() - spans_before.keys() == live_receiver.added
    probe = trace_request(agent_turn)
    live_receiver.grpc.export("traces", probe.SerializeToString())
    second = trace_request(agent_turn)
    assert (
        http_export(live_receiver.receiver, "traces", second.SerializeToString()).status_code == 200
    )
    assert request_spans(probe, second).keys() <= stored_spans(live_receiver.db).keys()


def grpc_error(live: Live, signal: str, body: bytes, **options) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as caught:
        live.grpc.export(signal, body, **options)
    return caught.value.code(), caught.value.details()


def mixed_request():
    """Three valid SDK spans plus five invalid ones (each a different OTLP rule)."""
    request = trace_request(agent_turn)
    request.resource_spans[0].scope_spans[0].spans.extend(
        [
            hand_span("short trace id", TRACE[:15], b"\x01" * 8),
            hand_span("zero trace id", bytes(16), b"\x02" * 8),
            hand_span("zero span id", TRACE, bytes(8)),
            hand_span("bad parent", TRACE, b"\x03" * 8, parent=b"\x01\x02\x03"),
            hand_span("time overflow", TRACE, b"\x04" * 8, end=2**64 - 1),
        ]
    )
    return request


# --- malformed bodies ---------------------------------------------------------------------------


@pytest.mark.parametrize("signal", ["traces", "logs"])
def test_malformed_protobuf_is_invalid_argument_on_grpc(live, signal):
    code, details = grpc_error(live, signal, b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert code is grpc.StatusCode.INVALID_ARGUMENT and "malformed OTLP protobuf" in details


@pytest.mark.parametrize("signal", ["traces", "logs", "metrics"])
def test_malformed_protobuf_is_400_with_a_status_body_on_http(live, signal):
    response = http_export(live.receiver, signal, b"\x0a\xff\xff\xff\xff\x0f garbage")
    assert response.status_code == 400 and response.headers["content-type"] == PROTOBUF
    status = http_status(response)
    assert status.code == code_pb2.INVALID_ARGUMENT and "malformed OTLP protobuf" in status.message


@pytest.mark.parametrize(
    "body, reason",
    [
        (b"{not json", "invalid JSON"),
        (b"\xff\xfe{}", "invalid JSON"),
        (b'[{"resourceSpans": []}]', "must be a JSON object"),
        (b'{"resourceSpans": {"scopeSpans": 1}}', "invalid OTLP/JSON"),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": 12}]}]}]}',
            "must be a hex string",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "abc"}]}]}]}',
            "not a 16- or 32-digit hex id",
        ),
        (
            b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"startTimeUnixNano": "-5"}]}]}]}',
            "invalid OTLP/JSON",
        ),
    ],
    ids=["syntax", "encoding", "array", "shape", "id-type", "id-length", "negative-time"],
)
def test_malformed_json_is_400_with_a_json_status_body(live, body, reason):
    response = http_export(live.receiver, "traces", body, content_type=JSON)
    assert response.status_code == 400 and response.headers["content-type"] == JSON
    status = http_status(response)
    assert status.code == code_pb2.INVALID_ARGUMENT and reason in status.message


def test_deeply_nested_json_is_400_not_a_server_error(tmp_path):
    # Against a separate `tracegrade collect`: a RecursionError inside C code can leave CPython
    # 3.11 in a state where later ast.parse calls (pytest's traceback formatting) fail.
    with CollectProcess(tmp_path / "deep.db") as collect:
        response = http_export(
            collect,
            "traces",
            b'{"resourceSpans": ' + b"[" * 50_000 + b"]" * 50_000 + b"}",
            content_type=JSON,
        )
        assert (
            http_export(
                collect, "traces", trace_request(agent_turn).SerializeToString()
            ).status_code
            == 200
        )
    assert response.status_code == 400


def test_metrics_json_that_is_not_an_object_is_400_not_a_server_error(live):
    assert http_export(live.receiver, "metrics", b"null", content_type=JSON).status_code == 400


def test_unknown_json_fields_are_ignored_as_the_otlp_spec_requires(live):
    request = request_to_json(trace_request(agent_turn))
    request["resourceSpans"][0]["futureField"] = {"x": 1}
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["newSpanField"] = 7
    response = http_export(live.receiver, "traces", json.dumps(request).encode(), content_type=JSON)
    assert response.status_code == 200
    live.added = {
        (s["traceId"], s["spanId"]) for s in request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    }


# --- content type and encoding ------------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/grpc", "", "application/x-www-form-urlencoded"]
)
def test_wrong_content_type_is_415(live, content_type):
    response = http_export(
        live.receiver,
        "traces",
        trace_request(agent_turn).SerializeToString(),
        content_type=content_type,
    )
    assert response.status_code == 415
    assert "unsupported Content-Type" in http_status(response).message


def test_content_type_parameters_and_case_are_accepted(live):
    request = trace_request(agent_turn)
    response = http_export(
        live.receiver,
        "traces",
        json.dumps(request_to_json(request)).encode(),
        content_type="Application/JSON; charset=utf-8",
    )
    assert response.status_code == 200
    live.added = set(request_spans(request))


def test_unsupported_content_encoding_is_400(live):
    response = http_export(
        live.receiver,
        "traces",
        trace_request(agent_turn).SerializeToString(),
        headers={"content-encoding": "br"},
    )
    assert (
        response.status_code == 400
        and "unsupported Content-Encoding" in http_status(response).message
    )


def test_wrong_method_and_unknown_path(live):
    assert HTTP.get(f"{live.receiver.http_endpoint}/v1/traces").status_code == 405
    assert (
        HTTP.post(
            f"{live.receiver.http_endpoint}/v1/profiles",
            content=b"",
            headers={"content-type": PROTOBUF},
        ).status_code
        == 404
    )


def test_unknown_grpc_method_is_unimplemented(live):
    call = live.grpc.channel.unary_unary(
        "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
        request_serializer=None,
        response_deserializer=None,
    )
    with pytest.raises(grpc.RpcError) as caught:
        call(b"", timeout=5)
    assert caught.value.code() is grpc.StatusCode.UNIMPLEMENTED


# --- invalid ids: partial success ---------------------------------------------------------------


def test_grpc_partial_success_stores_the_valid_spans_and_counts_the_rest(live):
    request = mixed_request()
    response = live.grpc.export("traces", request.SerializeToString())
    valid = {
        k
        for k, s in request_spans(request).items()
        if s.name in ("invoke_agent shop", "chat gpt-4o", "execute_tool search")
    }
    live.added = valid
    assert response.partial_success.rejected_spans == 5
    assert "invalid trace_id" in response.partial_success.error_message
    stored = stored_spans(live.db)
    assert {k: stored[k] for k in valid} == {k: request_spans(request)[k] for k in valid}


@pytest.mark.parametrize("content_type", [PROTOBUF, JSON])
def test_http_partial_success_stores_the_valid_spans_and_counts_the_rest(live, content_type):
    request = mixed_request()
    valid = {k for k, s in request_spans(request).items() if s.name[:1] in "ice"}
    if content_type == JSON:  # OTLP/JSON cannot carry a wrong-length hex id: keep the all-zero ones
        spans = request.resource_spans[0].scope_spans[0].spans
        keep = [s for s in spans if s.name not in ("short trace id", "bad parent")]
        del spans[:]
        spans.extend(keep)
        body = json.dumps(request_to_json(request)).encode()
    else:
        body = request.SerializeToString()
    response = http_export(live.receiver, "traces", body, content_type=content_type)
    live.added = valid
    assert response.status_code == 200 and response.headers["content-type"] == content_type
    partial = http_response(response, "traces").partial_success
    assert partial.rejected_spans == (5 if content_type == PROTOBUF else 3)
    assert "invalid" in partial.error_message
    assert valid <= stored_spans(live.db).keys()


def test_only_invalid_spans_store_nothing_and_say_why(live):
    request = spans_request(
        hand_span("zero", bytes(16), b"\x05" * 8), hand_span("short", TRACE, b"\x06" * 7)
    )
    response = live.grpc.export("traces", request.SerializeToString())
    assert response.partial_success.rejected_spans == 2
    assert response.partial_success.error_message.startswith("span 'zero': invalid trace_id")


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_log_records_with_invalid_ids_are_rejected_and_counted(live, protocol):
    request = logs_request(
        hand_log("kept", trace_id=os.urandom(16), span_id=os.urandom(8)),
        hand_log("kept without ids"),
        hand_log("bad trace id", trace_id=b"\x01" * 5),
        hand_log("bad span id", trace_id=os.urandom(16), span_id=b"\x01" * 3),
        hand_log("time overflow", time_unix_nano=2**64 - 1),
    )
    if protocol == "grpc":
        response = live.grpc.export("logs", request.SerializeToString())
    else:
        response = http_response(
            http_export(live.receiver, "logs", request.SerializeToString()), "logs"
        )
    assert response.partial_success.rejected_log_records == 3
    live.logs_added = True
    assert "log record" in response.partial_success.error_message
    bodies = [r.body.string_value for r in stored_logs(live.db)]
    assert (
        bodies.count("kept") >= 1 and "bad trace id" not in bodies and "time overflow" not in bodies
    )


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_an_empty_request_is_a_success_that_stores_nothing(live, protocol):
    if protocol == "grpc":
        assert live.grpc.export("traces", b"").ByteSize() == 0
    else:
        response = http_export(live.receiver, "logs", b"{}", content_type=JSON)
        assert response.status_code == 200 and response.json() == {}


# --- size limits --------------------------------------------------------------------------------


def test_oversize_body_is_413_on_http(live):
    response = http_export(live.receiver, "traces", b"\x00" * (LIMIT + 1))
    assert response.status_code == 413
    status = http_status(response)
    assert status.code == code_pb2.RESOURCE_EXHAUSTED and str(LIMIT) in status.message


def test_oversize_chunked_body_without_content_length_is_413(live):
    chunks = (b"\x00" * 8192 for _ in range(LIMIT // 8192 + 2))
    response = http_export(live.receiver, "traces", chunks)
    assert response.status_code == 413


def test_a_body_at_the_limit_is_decoded(live):
    request = spans_request(hand_span("x" * (LIMIT - 200), os.urandom(16), os.urandom(8)))
    body = request.SerializeToString()
    assert LIMIT - 100 < len(body) <= LIMIT
    assert http_export(live.receiver, "traces", body).status_code == 200
    live.added = set(request_spans(request))


def test_gzip_bomb_is_413_before_it_is_inflated_in_full(live):
    bomb = gzip.compress(b"\x00" * (64 * 2**20), compresslevel=9)
    assert len(bomb) < LIMIT
    response = http_export(live.receiver, "traces", bomb, headers={"content-encoding": "gzip"})
    assert (
        response.status_code == 413 and "decompressed body exceeds" in http_status(response).message
    )


def test_truncated_gzip_is_400(live):
    body = gzip.compress(trace_request(agent_turn).SerializeToString())
    response = http_export(
        live.receiver, "traces", body[:-12], headers={"content-encoding": "gzip"}
    )
    assert response.status_code == 400 and "truncated gzip" in http_status(response).message


def test_corrupt_gzip_is_400(live):
    body = trace_request(agent_turn).SerializeToString()
    response = http_export(live.receiver, "traces", body, headers={"content-encoding": "gzip"})
    assert response.status_code == 400 and "corrupt gzip" in http_status(response).message


def test_gzip_with_trailing_garbage_is_400(live):
    body = gzip.compress(trace_request(agent_turn).SerializeToString()) + b"trailing junk"
    response = http_export(live.receiver, "traces", body, headers={"content-encoding": "gzip"})
    assert response.status_code == 400
    assert "13 bytes after its end" in http_status(response).message


def test_a_gzip_body_of_two_members_is_one_body(live):
    request = spans_request(hand_span("two-members", os.urandom(16), os.urandom(8)))
    data = request.SerializeToString()
    body = gzip.compress(data[:10]) + gzip.compress(data[10:])
    response = http_export(live.receiver, "traces", body, headers={"content-encoding": "gzip"})
    assert response.status_code == 200
    live.added = set(request_spans(request))


def test_oversize_message_is_resource_exhausted_on_grpc(live):
    code, _ = grpc_error(live, "traces", b"\x00" * (LIMIT + 1))
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_grpc_gzip_message_inflating_past_the_limit_is_resource_exhausted(live):
    request = spans_request(hand_span("z" * (4 * LIMIT), os.urandom(16), os.urandom(8)))
    code, _ = grpc_error(
        live, "traces", request.SerializeToString(), compression=grpc.Compression.Gzip
    )
    assert code is grpc.StatusCode.RESOURCE_EXHAUSTED


def test_grpc_error_status_carries_a_google_rpc_status(live):
    with pytest.raises(grpc.RpcError) as caught:
        live.grpc.export("traces", b"\xff")
    status = rpc_status.from_call(caught.value)
    assert (
        status is not None
        and status.code == code_pb2.INVALID_ARGUMENT
        and "malformed" in status.message
    )


def test_deflate_bodies_are_accepted_as_the_python_exporter_may_send_them(live):
    import zlib

    request = trace_request(agent_turn)
    body = zlib.compress(request.SerializeToString())
    assert (
        http_export(
            live.receiver, "traces", body, headers={"content-encoding": "deflate"}
        ).status_code
        == 200
    )
    live.added = set(request_spans(request))


def test_an_unknown_content_encoding_is_400(live):
    response = http_export(live.receiver, "traces", b"x", headers={"content-encoding": "br"})
    assert (
        response.status_code == 400
        and "unsupported Content-Encoding" in http_status(response).message
    )
