"""Real OTLP from the real OpenTelemetry SDK, for tests: spans recorded by an SDK
``TracerProvider`` and encoded by the SDK's own OTLP encoder (the bytes an exporter sends)."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer


def record(build: Callable[[Tracer], Any], resource: Mapping[str, Any] | None = None) -> list[Any]:
    """Run ``build(tracer)`` on a fresh SDK provider; returns the finished ``ReadableSpan``s."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create(dict(resource or {"service.name": "test-agent"}))
    )
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    build(provider.get_tracer("tests.support.sdk"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def trace_request(build: Callable[[Tracer], Any], resource: Mapping[str, Any] | None = None) -> Any:
    """An ``ExportTraceServiceRequest`` of the spans ``build(tracer)`` records."""
    return encode_spans(record(build, resource))


def agent_turn(
    tracer: Tracer, question: str = "hi", answer: str = "hello", attributes: Mapping[str, Any] = {}
) -> None:
    """A small GenAI semconv agent turn: invoke_agent > chat + execute_tool."""
    with tracer.start_as_current_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent", **attributes}
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 10,
                "gen_ai.usage.output_tokens": 5,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "parts": [{"type": "text", "content": question}]}],
                    ensure_ascii=False,
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}],
                    ensure_ascii=False,
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool search",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "search",
                "gen_ai.tool.call.arguments": '{"q": "x"}',
                "gen_ai.tool.call.result": '{"hits": 1}',
            },
        ):
            pass


def logs_request(emit: Callable[[Any], Any], resource: Mapping[str, Any] | None = None) -> Any:
    """An ``ExportLogsServiceRequest`` of the records ``emit(logger)`` emits on a fresh SDK
    ``LoggerProvider`` (encoded by the SDK's own OTLP encoder)."""
    from opentelemetry.sdk._logs import LoggerProvider
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor

    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider(
        resource=Resource.create(dict(resource or {"service.name": "evaluator"}))
    )
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    emit(provider.get_logger("tests.support.sdk", "1.0"))
    provider.shutdown()
    return encode_logs(list(exporter.get_finished_logs()))


__all__ = ["agent_turn", "encode_logs", "logs_request", "record", "trace_request"]
