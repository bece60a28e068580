"""Traces for ``dataset build`` tests, recorded by the real OpenTelemetry SDK (GenAI semconv)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.trace import Status, StatusCode

from tests.support.sdk import trace_request


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def turn(
    question: str,
    answer: str,
    tools: Sequence[tuple[str, dict[str, Any], str, str | None]] = (),
    *,
    resource: Mapping[str, Any] | None = None,
    root: Mapping[str, Any] | None = None,
    history: Sequence[tuple[str, str]] = (),
) -> Any:
    """One agent turn as an OTLP request: ``invoke_agent`` > a chat call, then each tool
    ``(name, arguments, result, error or None)``; ``root`` attributes on the agent span;
    ``history`` the earlier turns' ``(role, content)`` the chat call replays."""

    def build(tracer):
        with tracer.start_as_current_span(
            "invoke_agent shop",
            attributes={"gen_ai.operation.name": "invoke_agent", **(root or {})},
        ):
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": 100,
                    "gen_ai.usage.output_tokens": 20,
                    "gen_ai.input.messages": json.dumps(
                        [*(_text(r, c) for r, c in history), _text("user", question)]
                    ),
                    "gen_ai.output.messages": json.dumps([_text("assistant", answer)]),
                },
            ):
                pass
            for name, arguments, result, error in tools:
                with tracer.start_as_current_span(
                    f"execute_tool {name}",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": name,
                        "gen_ai.tool.call.arguments": json.dumps(arguments),
                        "gen_ai.tool.call.result": result,
                    },
                ) as span:
                    if error:
                        span.set_status(Status(StatusCode.ERROR, error))
                        span.set_attribute("error.type", error)

    return trace_request(
        build, {"service.name": "shop", "service.version": "2.1", **(resource or {})}
    )


def trace_id(request: Any) -> str:
    return request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
