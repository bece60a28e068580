"""Security: the bearer token on both protocols, redaction of secret attributes before
storage (spans, events, links, resources, scopes, log records), and loopback-only binding
by default."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.trace import Link, SpanContext, TraceFlags

from tests.support.receiver import (
    HTTP,
    JSON,
    GrpcClient,
    counts,
    http_export,
    http_status,
    running,
    stored_logs,
    stored_requests,
    stored_spans,
)
from tests.support.sdk import agent_turn, record, trace_request
from tests.support.sdk_pipelines import (
    PROTOCOLS,
    export_logs,
    export_traces,
    log_exporter,
    span_exporter,
)
from tracegrade.collector.admission import REDACTED
from tracegrade.collector.receiver import Receiver, ReceiverConfig
from tracegrade.otlp.codec import (
    decode_any_value,
    decode_attributes,
    request_to_json,
)
from tracegrade.store.traces import Store

TOKEN = "s3cret-token"
GOOD = {"authorization": f"Bearer {TOKEN}"}
WRONG_CREDENTIALS = [
    {},
    {"authorization": "Bearer wrong"},
    {"authorization": TOKEN},
    {"authorization": f"Bearer {TOKEN}x"},
    {"authorization": f"Basic {TOKEN}"},
]

SECRETS = {  # key -> a value that must never reach the store
    "authorization": "Bearer sk-live-AAAA1111",
    "http.request.header.authorization": ["Bearer sk-live-BBBB2222"],
    "openai.api_key": "sk-proj-CCCC3333",
    "http.request.header.cookie": ["session=DDDD4444"],
    "Authorization": "Bearer sk-live-EEEE5555",
    "x-api-key": "FFFF6666",
    "http.response.header.set-cookie": ["id=GGGG7777"],
}
KEPT = {  # near misses and ordinary attributes, stored as sent
    "gen_ai.request.model": "gpt-4o",
    "authorization_mode": "oauth",
    "cookie_count": 2,
    "http.request.header.accept": ["application/json"],
    "api_key_present": True,
    "author": "me",
}


@pytest.fixture(scope="module")
def secured(tmp_path_factory):
    db = tmp_path_factory.mktemp("secured") / "secured.db"
    with (
        running(db, token=TOKEN, max_request_bytes=2**20) as receiver,
        GrpcClient(receiver.grpc_port) as client,
    ):
        yield receiver, client, db


# --- bearer token -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "headers", WRONG_CREDENTIALS, ids=["none", "wrong", "no-scheme", "longer", "basic"]
)
@pytest.mark.parametrize("signal", ["traces", "logs", "metrics"])
def test_http_without_the_right_bearer_token_is_401(secured, signal, headers):
    receiver, _, db = secured
    before = counts(db)
    response = http_export(
        receiver, signal, trace_request(agent_turn).SerializeToString(), headers=headers
    )
    assert response.status_code == 401
    assert http_status(response).code == code_pb2.UNAUTHENTICATED
    assert counts(db) == before


@pytest.mark.parametrize(
    "headers", WRONG_CREDENTIALS, ids=["none", "wrong", "no-scheme", "longer", "basic"]
)
@pytest.mark.parametrize("signal", ["traces", "logs", "metrics"])
def test_grpc_without_the_right_bearer_token_is_unauthenticated(secured, signal, headers):
    _, client, db = secured
    before = counts(db)
    with pytest.raises(grpc.RpcError) as caught:
        client.export(
            signal, trace_request(agent_turn).SerializeToString(), metadata=headers.items()
        )
    assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
    assert counts(db) == before


def test_the_token_is_checked_before_the_body_is_read(secured):
    receiver, _, _ = secured
    assert http_export(receiver, "traces", b"\x00" * (2 * 2**20)).status_code == 401  # not 413


def test_the_right_token_is_accepted_on_both_protocols(secured):
    receiver, client, db = secured
    first, second = trace_request(agent_turn), trace_request(agent_turn)
    client.export("traces", first.SerializeToString(), metadata=GOOD.items())
    assert (
        http_export(receiver, "traces", second.SerializeToString(), headers=GOOD).status_code == 200
    )
    assert (
        http_export(
            receiver,
            "traces",
            json.dumps(request_to_json(second)).encode(),
            content_type=JSON,
            headers=GOOD,
        ).status_code
        == 200
    )
    stored = stored_spans(db)
    assert all(
        s.trace_id.hex() in {k[0] for k in stored}
        for s in (
            *first.resource_spans[0].scope_spans[0].spans,
            *second.resource_spans[0].scope_spans[0].spans,
        )
    )


def test_healthz_answers_liveness_without_the_token_and_counters_only_with_it(secured):
    receiver, _, _ = secured
    assert HTTP.get(f"{receiver.http_endpoint}/healthz").json() == {"status": "ok"}
    wrong = HTTP.get(f"{receiver.http_endpoint}/healthz", headers={"authorization": "Bearer x"})
    assert wrong.json() == {"status": "ok"}
    full = HTTP.get(f"{receiver.http_endpoint}/healthz", headers=GOOD).json()
    assert full["status"] == "ok" and "stored" in full and "store" in full


def test_healthz_and_the_readiness_line_mask_every_form_of_store_password(tmp_path):
    config = ReceiverConfig(
        grpc_port=0, http_port=0, db="postgresql://u@127.0.0.1:9/db?password=Hunter2pw"
    )
    receiver = Receiver(config)
    health, line = receiver.health(), receiver.readiness_line()
    assert "Hunter2pw" not in json.dumps(health) and "password=***" in health["store"]
    assert "Hunter2pw" not in line


def test_http_401_names_the_bearer_scheme(secured):
    receiver, _, _ = secured
    response = http_export(receiver, "traces", b"")
    assert response.status_code == 401 and response.headers.get("www-authenticate", "").startswith(
        "Bearer"
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sdk_exporters_with_the_token_header_succeed_and_without_it_fail_fast(tmp_path, protocol):
    db = tmp_path / "token.db"
    spans = record(agent_turn)
    with running(db, token=TOKEN) as receiver:
        exporter = span_exporter(protocol, receiver, headers=GOOD)
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        logs = export_logs(
            log_exporter(protocol, receiver, headers=GOOD),
            lambda logger, _: logger.emit(body="with token"),
        )
        anonymous = span_exporter(protocol, receiver)
        started = time.monotonic()
        assert anonymous.export(record(agent_turn)) is SpanExportResult.FAILURE
        assert time.monotonic() - started < 3  # 401 / UNAUTHENTICATED are not retried
        anonymous.shutdown()
        anonymous_logs = log_exporter(protocol, receiver)
        assert anonymous_logs.export(logs) is LogRecordExportResult.FAILURE
        anonymous_logs.shutdown()
    assert counts(db) == {"traces": 1, "spans": 3, "log_records": 1}


# --- redaction ----------------------------------------------------------------------------------


def _secret_trace(tracer) -> None:
    remote = SpanContext(trace_id=0x1234, span_id=0x5678, is_remote=True, trace_flags=TraceFlags(1))
    with tracer.start_as_current_span(
        "invoke_agent", attributes={**SECRETS, **KEPT}, links=[Link(remote, SECRETS)]
    ) as span:
        span.add_event("request", {**SECRETS, **KEPT})


def _check_redacted(attributes: dict) -> None:
    for key in SECRETS:
        assert attributes[key] == REDACTED, key
    for key, value in KEPT.items():
        assert attributes[key] == (tuple(value) if isinstance(value, list) else value), key


def _assert_no_secret_on_disk(db: Path) -> None:
    raw = b"".join(p.read_bytes() for p in db.parent.glob(db.name + "*"))
    for value in SECRETS.values():
        for text in [value] if isinstance(value, str) else value:
            assert text.encode() not in raw, text


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_secret_attributes_are_redacted_everywhere_before_storage(tmp_path, protocol):
    db = tmp_path / "redact.db"
    resource = {"service.name": "shop", **SECRETS, **KEPT}
    with running(db) as receiver:
        export_traces(span_exporter(protocol, receiver), _secret_trace, resource)
        export_logs(
            log_exporter(protocol, receiver),
            lambda logger, _: logger.emit(body="login", attributes={**SECRETS, **KEPT}),
            resource,
        )

    (span,) = stored_spans(db).values()
    _check_redacted(decode_attributes(span.attributes))
    _check_redacted(decode_attributes(span.events[0].attributes))
    assert {k: decode_any_value(kv.value) for kv in span.links[0].attributes for k in [kv.key]} == {
        k: REDACTED for k in SECRETS
    }
    (record_,) = stored_logs(db)
    _check_redacted(decode_attributes(record_.attributes))
    with Store(db) as store:  # the resources of the spans and of the log records
        resources = [
            Resource.FromString(bytes(r))
            for (r,) in store.db.execute("SELECT resource FROM resources")
        ]
    assert resources
    for stored_resource in resources:
        _check_redacted(decode_attributes(stored_resource.attributes))
    _assert_no_secret_on_disk(db)


def test_scope_attributes_are_redacted(tmp_path):
    db = tmp_path / "scope.db"
    request = trace_request(agent_turn)
    request.resource_spans[0].scope_spans[0].scope.attributes.add(
        key="openai.api_key"
    ).value.string_value = "sk-zzz"
    with running(db) as receiver, GrpcClient(receiver.grpc_port) as client:
        client.export("traces", request.SerializeToString())
    traces, _ = stored_requests(db)
    assert decode_attributes(traces.resource_spans[0].scope_spans[0].scope.attributes) == {
        "openai.api_key": REDACTED
    }


def test_custom_patterns_replace_the_defaults_and_an_empty_list_keeps_everything(tmp_path):
    request = trace_request(
        lambda t: agent_turn(t, attributes={"tenant.secret": "x1", "authorization": "Bearer y2"})
    )
    with running(tmp_path / "custom.db", redact=("*.secret",)) as receiver:
        assert http_export(receiver, "traces", request.SerializeToString()).status_code == 200
    with running(tmp_path / "none.db", redact=()) as receiver:
        assert http_export(receiver, "traces", request.SerializeToString()).status_code == 200
    root = next(s for s in stored_spans(tmp_path / "custom.db").values() if not s.parent_span_id)
    assert {
        k: v
        for k, v in decode_attributes(root.attributes).items()
        if k in ("tenant.secret", "authorization")
    } == {"tenant.secret": REDACTED, "authorization": "Bearer y2"}
    root = next(s for s in stored_spans(tmp_path / "none.db").values() if not s.parent_span_id)
    assert decode_attributes(root.attributes)["tenant.secret"] == "x1"


def test_a_json_escaped_secret_key_is_still_redacted(tmp_path):
    request = request_to_json(trace_request(agent_turn))
    request["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["attributes"] = [
        {"key": "authorization", "value": {"stringValue": "Bearer sk-escaped"}}
    ]
    body = json.dumps(request).replace('"authorization"', '"authorizatio\\u006e"').encode()
    with running(tmp_path / "escape.db") as receiver:
        assert http_export(receiver, "traces", body, content_type=JSON).status_code == 200
    values = [
        decode_attributes(s.attributes).get("authorization")
        for s in stored_spans(tmp_path / "escape.db").values()
    ]
    assert "Bearer sk-escaped" not in values and REDACTED in values


# --- binding ------------------------------------------------------------------------------------


def _non_loopback_address() -> str | None:
    """This machine's address on its outgoing interface (a UDP connect sends no packet)."""
    for target in ("203.0.113.1", "10.255.255.254", "198.51.100.1"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.connect((target, 9))
            except OSError:
                continue
            address = probe.getsockname()[0]
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


def test_the_receiver_binds_loopback_only_by_default(tmp_path):
    assert ReceiverConfig().host == "127.0.0.1"
    address = _non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback IPv4 address")
    with running(tmp_path / "bind.db") as receiver:
        assert receiver.config.host == "127.0.0.1"
        for port in (receiver.grpc_port, receiver.http_port):
            with pytest.raises(ConnectionRefusedError):
                socket.create_connection((address, port), timeout=2).close()
            socket.create_connection(("127.0.0.1", port), timeout=2).close()
