"""The official OpenTelemetry SDK exporters pointed at a receiver, for tests.

``span_exporter`` / ``log_exporter`` / ``metric_exporter`` build the real OTLP exporters
(``opentelemetry-exporter-otlp-proto-grpc`` and ``-http``) for either protocol;
``export_traces`` and ``export_logs`` run an SDK provider whose batch processor sends
through such an exporter while an in-memory exporter keeps a copy of what was sent;
``agent_run`` and ``emit_records`` are workloads that use every span and log feature.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal

import grpc
import requests
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.grpc._log_exporter import (
    OTLPLogExporter as GrpcLogExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
    OTLPMetricExporter as GrpcMetricExporter,
)
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
    OTLPSpanExporter as GrpcSpanExporter,
)
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http._log_exporter import (
    OTLPLogExporter as HttpLogExporter,
)
from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
    OTLPMetricExporter as HttpMetricExporter,
)
from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
    OTLPSpanExporter as HttpSpanExporter,
)
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    InMemoryLogRecordExporter,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from tracegrade.collector.receiver import Receiver

Protocol = Literal["grpc", "http"]
PROTOCOLS: tuple[Protocol, ...] = ("grpc", "http")


class SentHeaders:
    """A ``requests`` session that remembers the headers of every request it sent (to see
    that the HTTP exporter really compressed)."""

    def __init__(self) -> None:
        self.session = requests.Session()
        self.sent: list[Mapping[str, str]] = []
        self.session.hooks["response"].append(
            lambda response, **_: self.sent.append(response.request.headers)
        )


def _options(
    protocol: Protocol,
    receiver: Receiver,
    signal: str,
    gzip: bool,
    headers: Mapping[str, str] | None,
    timeout_s: float,
) -> dict[str, Any]:
    if protocol == "grpc":
        return {
            "endpoint": receiver.grpc_endpoint,
            "insecure": True,
            "timeout": timeout_s,
            "headers": dict(headers or {}),
            "compression": grpc.Compression.Gzip if gzip else None,
        }
    return {
        "endpoint": f"{receiver.http_endpoint}/v1/{signal}",
        "timeout": timeout_s,
        "headers": dict(headers or {}),
        "compression": Compression.Gzip if gzip else Compression.NoCompression,
    }


def span_exporter(
    protocol: Protocol,
    receiver: Receiver,
    *,
    gzip: bool = False,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    **extra: Any,
) -> Any:
    """The SDK's ``OTLPSpanExporter`` for ``protocol``, sending to ``receiver``."""
    kind = GrpcSpanExporter if protocol == "grpc" else HttpSpanExporter
    return kind(**_options(protocol, receiver, "traces", gzip, headers, timeout_s), **extra)


def log_exporter(
    protocol: Protocol,
    receiver: Receiver,
    *,
    gzip: bool = False,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
    **extra: Any,
) -> Any:
    """The SDK's ``OTLPLogExporter`` for ``protocol``, sending to ``receiver``."""
    kind = GrpcLogExporter if protocol == "grpc" else HttpLogExporter
    return kind(**_options(protocol, receiver, "logs", gzip, headers, timeout_s), **extra)


def metric_exporter(
    protocol: Protocol,
    receiver: Receiver,
    *,
    gzip: bool = False,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 10.0,
) -> Any:
    """The SDK's ``OTLPMetricExporter`` for ``protocol``, sending to ``receiver``."""
    kind = GrpcMetricExporter if protocol == "grpc" else HttpMetricExporter
    return kind(**_options(protocol, receiver, "metrics", gzip, headers, timeout_s))


def export_traces(
    exporter: Any, build: Callable[[Any], Any], resource: Mapping[str, Any] | None = None
) -> list[Any]:
    """Run ``build(tracer)`` on an SDK ``TracerProvider`` exporting through ``exporter``
    (``BatchSpanProcessor``, 16 spans a request); flushes and shuts down; returns the finished
    spans as sent."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(dict(resource or {"service.name": "receiver-test"}))
    )
    provider.add_span_processor(
        BatchSpanProcessor(exporter, schedule_delay_millis=50, max_export_batch_size=16)
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        build(provider.get_tracer("tests.collector.receiver", "1.2.3"))
        assert provider.force_flush(10_000)
    finally:
        provider.shutdown()
    return list(memory.get_finished_spans())


def export_logs(
    exporter: Any,
    emit: Callable[[Any, Any], Any],
    resource: Mapping[str, Any] | None = None,
    *,
    batch: bool = True,
) -> list[Any]:
    """Run ``emit(logger, tracer)`` on an SDK ``LoggerProvider`` exporting through
    ``exporter`` (``BatchLogRecordProcessor`` with 16 records a request, or
    ``SimpleLogRecordProcessor`` when not ``batch``); the tracer only makes span contexts for the
    records. Returns the records as sent (``ReadableLogRecord``)."""
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(
        resource=Resource.create(dict(resource or {"service.name": "receiver-test"}))
    )
    processor = (
        BatchLogRecordProcessor(exporter, schedule_delay_millis=50, max_export_batch_size=16)
        if batch
        else SimpleLogRecordProcessor(exporter)
    )
    provider.add_log_record_processor(processor)
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    tracer_provider = TracerProvider()
    try:
        emit(
            provider.get_logger("tests.collector.receiver.logs", "4.5.6"),
            tracer_provider.get_tracer("logs"),
        )
        assert provider.force_flush(10_000)
    finally:
        provider.shutdown()
        tracer_provider.shutdown()
    return list(memory.get_finished_logs())


# --- workloads ---------------------------------------------------------------------------------


RESOURCE = {"service.name": "shop-agent", "deployment.environment": "ci", "host.cores": 2}
_REMOTE = SpanContext(
    trace_id=0x0AF7651916CD43DD8448EB211C80319C,
    span_id=0xB7AD6B7169203331,
    is_remote=True,
    trace_flags=TraceFlags(TraceFlags.SAMPLED),
)


def agent_run(tracer) -> None:
    """An agent turn exercising every span feature: kinds, attribute types, events, links,
    an error status with a recorded exception, non-ASCII text, and enough tool spans to
    span several export batches."""
    with tracer.start_as_current_span(
        "invoke_agent shop",
        kind=SpanKind.SERVER,
        attributes={
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "shop",
            "retries": 3,
            "temperature": 0.25,
            "streaming": True,
            "tags": ["a", "b"],
            "scores": [1.5, 2.5],
            "ids": [1, 2, 3],
            "flags": [True, False],
        },
    ) as root:
        root.add_event("gen_ai.user.message", {"content": "Où est ma commande ? ✓", "tokens": 7})
        with tracer.start_as_current_span(
            "chat gpt-4o",
            kind=SpanKind.CLIENT,
            links=[Link(_REMOTE, {"why": "retry"})],
            attributes={"gen_ai.request.model": "gpt-4o"},
        ) as chat:
            chat.record_exception(ValueError("rate limited"))
            chat.set_status(Status(StatusCode.ERROR, "429 from the model"))
        for i in range(40):
            with tracer.start_as_current_span(
                f"execute_tool step_{i}", attributes={"gen_ai.tool.name": f"t{i}", "step": i}
            ):
                pass


def emit_records(logger, tracer) -> None:
    """Log records of every body kind, inside and outside a span, with event names."""
    with tracer.start_as_current_span("turn"):
        logger.emit(
            body="plain text ✓",
            severity_number=SeverityNumber.INFO,
            severity_text="INFO",
            attributes={"k": "v", "n": 1, "ratio": 0.5, "ok": True, "tags": ["x", "y"]},
        )
        logger.emit(
            body={"role": "user", "content": "hi", "parts": [1, "two", {"three": 3.0}]},
            event_name="gen_ai.user.message",
            attributes={"gen_ai.system": "openai"},
        )
        logger.emit(body=b"\x00\x01raw", severity_number=SeverityNumber.DEBUG)
    logger.emit(
        body="outside a span",
        severity_number=SeverityNumber.WARN,
        timestamp=1_700_000_000_123_456_789,
    )
    for i in range(30):
        logger.emit(body=f"line {i}", attributes={"i": i})
