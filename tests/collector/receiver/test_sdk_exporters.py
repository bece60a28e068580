"""The official OpenTelemetry SDK exporters (gRPC and HTTP, plain and gzip) sending traces,
logs and metrics to a running receiver: every span and log record arrives intact, metrics
are acknowledged and not stored."""

from __future__ import annotations

import json

import pytest
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.resources import Resource

from tests.support.receiver import (
    JSON,
    GrpcClient,
    canonical,
    counts,
    http_export,
    http_response,
    request_logs,
    request_spans,
    running,
    stored_logs,
    stored_requests,
    stored_spans,
)
from tests.support.sdk_pipelines import (
    PROTOCOLS,
    RESOURCE,
    SentHeaders,
    agent_run,
    emit_records,
    export_logs,
    export_traces,
    log_exporter,
    metric_exporter,
    span_exporter,
)
from tracegrade.otlp.codec import (
    decode_any_value,
    decode_attributes,
    request_to_json,
)


def _hex_ids(span) -> tuple[str, str]:
    return format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")


def _plain(value):
    return tuple(value) if isinstance(value, (list, tuple)) else value


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sdk_span_exporter_delivers_every_span_intact(tmp_path, protocol, gzip):
    db = tmp_path / "spans.db"
    session = SentHeaders()
    extra = {"session": session.session} if protocol == "http" else {}
    with running(db) as receiver:
        exporter = span_exporter(protocol, receiver, gzip=gzip, **extra)
        sent = export_traces(exporter, agent_run, RESOURCE)

    assert len(sent) == 42
    stored = stored_spans(db)
    assert stored == request_spans(encode_spans(sent))  # byte-for-byte the messages the SDK encoded
    for span in sent:
        got = stored[_hex_ids(span)]
        assert got.name == span.name
        assert got.parent_span_id.hex() == (
            format(span.parent.span_id, "016x") if span.parent else ""
        )
        assert decode_attributes(got.attributes) == {
            k: _plain(v) for k, v in span.attributes.items()
        }
        assert [(e.name, decode_attributes(e.attributes)) for e in got.events] == [
            (e.name, {k: _plain(v) for k, v in e.attributes.items()}) for e in span.events
        ]
        assert (got.start_time_unix_nano, got.end_time_unix_nano) == (
            span.start_time,
            span.end_time,
        )
    chat = next(s for s in stored.values() if s.name == "chat gpt-4o")
    assert chat.status.message == "429 from the model" and chat.events[0].name == "exception"
    assert chat.links[0].trace_id.hex() == "0af7651916cd43dd8448eb211c80319c"
    traces, _ = stored_requests(db)
    (group,) = traces.resource_spans
    assert {
        k: v for k, v in decode_attributes(group.resource.attributes).items() if k in RESOURCE
    } == RESOURCE
    assert {(s.scope.name, s.scope.version) for s in group.scope_spans} == {
        ("tests.collector.receiver", "1.2.3")
    }
    if protocol == "http":
        assert {h.get("Content-Encoding") for h in session.sent} == {"gzip" if gzip else None}


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sdk_log_exporter_delivers_every_record_intact(tmp_path, protocol, gzip):
    db = tmp_path / "logs.db"
    with running(db) as receiver:
        sent = export_logs(log_exporter(protocol, receiver, gzip=gzip), emit_records, RESOURCE)

    assert len(sent) == 34
    stored = stored_logs(db)
    assert canonical(stored) == canonical(request_logs(encode_logs(sent)))
    bodies = [decode_any_value(r.body) for r in stored]
    assert bodies[:4] == [
        "plain text ✓",
        {"role": "user", "content": "hi", "parts": (1, "two", {"three": 3.0})},
        b"\x00\x01raw",
        "outside a span",
    ]
    assert bodies[4:] == [f"line {i}" for i in range(30)]
    in_span = [r for r in stored if r.trace_id]
    assert (
        len(in_span) == 3
        and len({r.trace_id for r in in_span}) == 1
        and all(len(r.span_id) == 8 for r in in_span)
    )
    assert next(r for r in stored if r.event_name == "gen_ai.user.message").body == stored[1].body
    assert (
        next(r for r in stored if r.time_unix_nano == 1_700_000_000_123_456_789).severity_number
        == SeverityNumber.WARN.value
    )
    assert counts(db)["log_records"] == 34


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_simple_log_processor_exports_each_record_as_it_is_emitted(tmp_path, protocol):
    db = tmp_path / "logs.db"
    with running(db) as receiver:
        sent = export_logs(
            log_exporter(protocol, receiver),
            lambda logger, _: [
                logger.emit(body=f"record {i}", attributes={"i": i}) for i in range(3)
            ],
            batch=False,
        )
        assert receiver.stats.batches >= 3  # one request, one commit per record
    assert canonical(stored_logs(db)) == canonical(request_logs(encode_logs(sent)))


def test_otlp_json_of_sdk_spans_stores_the_same_messages_as_protobuf(tmp_path):
    sent = export_traces(_NullExporter(), agent_run, RESOURCE)
    request = encode_spans(sent)
    with running(tmp_path / "json.db") as receiver:
        response = http_export(
            receiver, "traces", json.dumps(request_to_json(request)).encode(), content_type=JSON
        )
    assert response.status_code == 200 and response.headers["content-type"] == JSON
    assert not http_response(response, "traces").HasField("partial_success")
    assert stored_spans(tmp_path / "json.db") == request_spans(request)


def _metrics_data():
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader], resource=Resource.create(RESOURCE))
    meter = provider.get_meter("tests.collector.receiver.metrics")
    meter.create_counter("gen_ai.requests").add(3, {"gen_ai.system": "openai"})
    meter.create_histogram("gen_ai.client.token.usage", unit="{token}").record(
        42, {"gen_ai.token.type": "input"}
    )
    data = reader.get_metrics_data()
    provider.shutdown()
    return data


@pytest.mark.parametrize("gzip", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sdk_metric_exporter_succeeds_and_nothing_is_stored(tmp_path, protocol, gzip):
    db = tmp_path / "metrics.db"
    with running(db) as receiver:
        exporter = metric_exporter(protocol, receiver, gzip=gzip)
        try:
            assert exporter.export(_metrics_data()) is MetricExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert receiver.stats.accepted_items == 0
    assert counts(db) == {"traces": 0, "spans": 0, "log_records": 0}


def test_metrics_export_answers_per_protocol_for_raw_requests(tmp_path):
    from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics

    body = encode_metrics(_metrics_data()).SerializeToString()
    with running(tmp_path / "m.db") as receiver, GrpcClient(receiver.grpc_port) as client:
        assert client.export("metrics", body).ByteSize() == 0
        assert http_export(receiver, "metrics", body).status_code == 200
        response = http_export(receiver, "metrics", b'{"resourceMetrics": []}', content_type=JSON)
        assert response.status_code == 200 and response.json() == {}
    assert counts(tmp_path / "m.db")["spans"] == 0


class _NullExporter:
    """An exporter that drops everything (only the in-memory copy is wanted)."""

    def export(self, spans):
        from opentelemetry.sdk.trace.export import SpanExportResult

        return SpanExportResult.SUCCESS

    def shutdown(self):
        pass

    def force_flush(self, timeout_millis=0):
        return True
