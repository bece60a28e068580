"""The receiver on IPv6 loopback: ``--host ::1`` and ``--host '[::1]'`` both bind both ports,
and OTLP exporters reach them at the bracketed address."""

from __future__ import annotations

import grpc
import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpExporter
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.support.collect_process import CollectProcess
from tests.support.receiver import running, stored_spans
from tests.support.sdk import agent_turn, record
from tracegrade.collector.address import bare_host, host_port


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_ipv6_loopback_serves_both_protocols_in_either_spelling(tmp_path, host):
    db = tmp_path / "store.db"
    with running(db, host=host) as receiver:
        assert receiver.grpc_endpoint.startswith("http://[::1]:")
        grpc_spans, http_spans = record(agent_turn), record(agent_turn)
        exporter = GrpcExporter(endpoint=receiver.grpc_endpoint, insecure=True, timeout=5)
        assert exporter.export(grpc_spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        exporter = HttpExporter(endpoint=f"{receiver.http_endpoint}/v1/traces", timeout=5)
        assert exporter.export(http_spans) is SpanExportResult.SUCCESS
        exporter.shutdown()
        assert httpx.get(f"{receiver.http_endpoint}/healthz").json()["stored"] == 6
    stored = {key for key in stored_spans(db)}
    sent = {
        (s.context.trace_id.to_bytes(16).hex(), s.context.span_id.to_bytes(8).hex())
        for s in grpc_spans + http_spans
    }
    assert stored == sent


def test_collect_on_ipv6_prints_the_bracketed_addresses(tmp_path):
    with CollectProcess(tmp_path / "store.db", "--host", "::1") as collect:
        assert collect.host == "[::1]"
        channel = grpc.insecure_channel(f"[::1]:{collect.grpc_port}")
        grpc.channel_ready_future(channel).result(timeout=5)
        channel.close()


@pytest.mark.parametrize(
    ("host", "bare", "joined"),
    [
        ("::1", "::1", "[::1]:4317"),
        ("[::1]", "::1", "[::1]:4317"),
        ("127.0.0.1", "127.0.0.1", "127.0.0.1:4317"),
        ("localhost", "localhost", "localhost:4317"),
    ],
)
def test_host_spellings(host, bare, joined):
    assert bare_host(host) == bare and host_port(host, 4317) == joined


@pytest.mark.parametrize("host", ["[localhost]", "[::1", "::1]"])
def test_brackets_around_anything_but_an_ipv6_address_are_refused(host):
    with pytest.raises(ValueError, match="not a bracketed IPv6 address"):
        bare_host(host)
