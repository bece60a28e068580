"""A minimal agent command for benchmarks/command_overhead.py: reads the user message on
stdin, records a GenAI semconv turn (``invoke_agent`` > ``chat`` + ``execute_tool``) with the
OpenTelemetry SDK, exports it over OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (resource
attributes from ``OTEL_RESOURCE_ATTRIBUTES``), prints the answer and exits; the SDK flushes
at shutdown, then exits at once. No model: the agent's own time is process start, imports
and the export."""

from __future__ import annotations

import json
import os
import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


def main() -> None:
    question = sys.stdin.read().strip()
    answer = f"The order {question.split()[-1]} ships tomorrow."
    provider = TracerProvider(resource=Resource.create({"service.name": "echo-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    tracer = provider.get_tracer("benchmarks.echo_agent")
    with (
        tracer.start_as_current_span(
            "invoke_agent echo", attributes={"gen_ai.operation.name": "invoke_agent"}
        ),
        tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": _messages("user", question),
                "gen_ai.output.messages": _messages("assistant", answer),
            },
        ),
    ):
        pass
    print(answer, flush=True)
    provider.shutdown()  # exports synchronously; the receiver acknowledges after commit
    os._exit(0)  # no interpreter teardown: the process ends right after its last export


if __name__ == "__main__":
    main()
