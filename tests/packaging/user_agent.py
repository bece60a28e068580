"""A user's own agent, outside any clone of tracegrade: no LLM client, its spans written by
hand with the OpenTelemetry SDK in the GenAI semantic conventions (latest: messages in
``gen_ai.input.messages`` / ``gen_ai.output.messages``). The question on stdin, the answer on
stdout. It exports OTLP/HTTP to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (what ``tracegrade run`` and
``tracegrade collect`` receive), or with ``AGENT_OTLP_FILE=PATH`` appends its spans to PATH
as OTLP/JSON lines (the Collector file exporter's format), for ``tracegrade score PATH``."""

from __future__ import annotations

import json
import os
import sys

from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)

WEATHER = {"Lima": "18°C and overcast", "Paris": "12°C and raining"}


class JsonLinesExporter(SpanExporter):
    """Each export as one OTLP/JSON ExportTraceServiceRequest line."""

    def __init__(self, path: str):
        self.path = path

    def export(self, spans):
        with open(self.path, "a", encoding="utf-8") as out:
            out.write(MessageToJson(encode_spans(spans), indent=None) + "\n")
        return SpanExportResult.SUCCESS


def messages(role: str, *parts: dict, finish: str | None = None) -> str:
    message = {"role": role, "parts": list(parts)}
    if finish:
        message["finish_reason"] = finish
    return json.dumps([message])


def chat(tracer, inputs: str, outputs: str) -> None:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 10,
        "gen_ai.input.messages": inputs,
        "gen_ai.output.messages": outputs,
    }
    with tracer.start_as_current_span("chat gpt-4o-mini", attributes=attributes):
        pass


def answer(tracer, question: str) -> str:
    city = question.rstrip("?").rsplit(" ", 1)[-1]
    user = {"type": "text", "content": question}
    call = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": city}}
    agent = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather"}
    with tracer.start_as_current_span("invoke_agent weather", attributes=agent):
        chat(tracer, messages("user", user), messages("assistant", call, finish="tool_call"))
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_weather",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"city": city}),
        }
        with tracer.start_as_current_span("execute_tool get_weather", attributes=tool) as span:
            result = WEATHER.get(city, "unknown")
            span.set_attribute("gen_ai.tool.call.result", result)
        text = f"It is {result} in {city}."
        history = [
            {"role": "user", "parts": [user]},
            {"role": "assistant", "parts": [call]},
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": "call_1", "response": result}],
            },
        ]
        chat(
            tracer,
            json.dumps(history),
            messages("assistant", {"type": "text", "content": text}, finish="stop"),
        )
    return text


def main() -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-agent"}))
    path = os.environ.get("AGENT_OTLP_FILE")
    if path:
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(path)))
    else:
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    try:
        print(answer(provider.get_tracer("weather-agent"), sys.stdin.read().strip()))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
