"""Re-record the real tau-bench Traceloop traces in OpenLLMetry's legacy flattened format.

``datasets/tau-bench-otlp/traceloop`` was recorded by traceloop-sdk 0.62 (content in
``gen_ai.input.messages``). Before March 2026 the OpenAI instrumentation wrote the same
requests as flattened attributes instead (span-conventions.md section 4): at span start
``llm.request.type`` and the request attributes, then per request message
``gen_ai.prompt.{i}.role`` / ``.content`` / ``.tool_call_id`` / ``.tool_calls.{j}.{id,name,
arguments}``, then the tool definitions ``llm.request.functions.{i}.*``, then on the response
``gen_ai.response.model``, ``gen_ai.usage.prompt_tokens`` / ``completion_tokens`` and
``gen_ai.completion.{i}.*``. This module sets them in that order on spans of the real
OpenTelemetry SDK with its default limits (128 attributes; when full, the *oldest* attribute is
dropped), and returns what the SDK's OTLP encoder sends, decoded by tracegrade's codec.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from opentelemetry import trace as otel_trace
from opentelemetry.trace import Span as OtelSpan
from opentelemetry.trace import Tracer

from tests.support.sdk import encode_spans, record
from tracegrade.otlp.codec import spans_from_request
from tracegrade.otlp.files import read_file
from tracegrade.spans import Span

TRACELOOP = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "traceloop"


def _openai_messages(parts_messages: list[Mapping[str, Any]]) -> Iterator[dict[str, Any]]:
    """GenAI parts messages -> the OpenAI chat messages the agent sent."""
    for message in parts_messages:
        parts = message.get("parts") or []
        texts = [p.get("content") for p in parts if p.get("type", "text") == "text"]
        calls = [p for p in parts if p.get("type") == "tool_call"]
        responses = [p for p in parts if p.get("type") == "tool_call_response"]
        for response in responses:
            yield {
                "role": "tool",
                "tool_call_id": response.get("id"),
                "content": response["response"],
            }
        if responses:
            continue
        out: dict[str, Any] = {"role": message["role"], "content": "".join(t or "" for t in texts)}
        if calls:
            out["tool_calls"] = [
                {"id": c.get("id"), "name": c["name"], "arguments": json.dumps(c["arguments"])}
                for c in calls
            ]
        yield out


def _set_messages(span: OtelSpan, prefix: str, messages: list[dict[str, Any]]) -> None:
    for i, message in enumerate(messages):
        base = f"{prefix}.{i}"
        span.set_attribute(f"{base}.role", message["role"])
        if message.get("content"):
            span.set_attribute(f"{base}.content", message["content"])
        if message.get("finish_reason"):
            span.set_attribute(f"{base}.finish_reason", message["finish_reason"])
        if message.get("tool_call_id"):
            span.set_attribute(f"{base}.tool_call_id", message["tool_call_id"])
        for j, call in enumerate(message.get("tool_calls") or ()):
            for key in ("id", "name", "arguments"):
                span.set_attribute(f"{base}.tool_calls.{j}.{key}", call[key])


def _chat(tracer: Tracer, source: Span, context: Any) -> None:
    attrs = source.attributes
    span = tracer.start_span(
        "openai.chat",
        context=context,
        kind=otel_trace.SpanKind.CLIENT,
        start_time=source.start_unix_nano,
        attributes={
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": attrs["gen_ai.request.model"],
            "gen_ai.request.temperature": attrs["gen_ai.request.temperature"],
            "llm.is_streaming": False,
        },
    )
    _set_messages(
        span, "gen_ai.prompt", list(_openai_messages(json.loads(attrs["gen_ai.input.messages"])))
    )
    for i, tool in enumerate(json.loads(attrs["gen_ai.tool.definitions"])):
        span.set_attribute(f"llm.request.functions.{i}.name", tool["name"])
        span.set_attribute(f"llm.request.functions.{i}.description", tool["description"])
        span.set_attribute(f"llm.request.functions.{i}.parameters", json.dumps(tool["parameters"]))
    span.set_attribute("gen_ai.response.model", attrs["gen_ai.response.model"])
    span.set_attribute("gen_ai.usage.prompt_tokens", attrs["gen_ai.usage.input_tokens"])
    span.set_attribute("gen_ai.usage.completion_tokens", attrs["gen_ai.usage.output_tokens"])
    span.set_attribute("llm.usage.total_tokens", attrs["gen_ai.usage.total_tokens"])
    outputs = list(_openai_messages(json.loads(attrs["gen_ai.output.messages"])))
    finish = {"tool_call": "tool_calls"}.get(*[attrs["gen_ai.response.finish_reasons"][0]] * 2)
    _set_messages(span, "gen_ai.completion", [{**m, "finish_reason": finish} for m in outputs])
    span.end(end_time=source.end_unix_nano)


def _replay(tracer: Tracer, spans: list[Span]) -> None:
    """Re-record one trace: every span, parents before children, same times."""
    created: dict[str, OtelSpan] = {}
    for source in sorted(spans, key=lambda s: (s.start_unix_nano, -s.end_unix_nano)):
        parent = created.get(source.parent_span_id or "")
        context = otel_trace.set_span_in_context(parent) if parent else None
        if "gen_ai.input.messages" in source.attributes:
            _chat(tracer, source, context)
            continue
        span = tracer.start_span(
            source.name,
            context=context,
            start_time=source.start_unix_nano,
            attributes=dict(source.attributes),
        )
        created[source.span_id] = span
    for source in sorted(spans, key=lambda s: s.end_unix_nano):
        if source.span_id in created:
            created[source.span_id].end(end_time=source.end_unix_nano)


def legacy_traces(limit: int | None = None) -> list[Span]:
    """The tau-bench Traceloop traces (the first ``limit``) as legacy flattened spans."""
    by_trace: dict[str, list[Span]] = {}
    for span in read_file(TRACELOOP / "traces.jsonl.gz").spans():
        by_trace.setdefault(span.trace_id, []).append(span)
    traces = list(by_trace.values())[:limit]
    finished = record(lambda tracer: [_replay(tracer, t) for t in traces])
    return spans_from_request(encode_spans(finished))
