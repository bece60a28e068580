"""A tiny shop agent for the runner's tests: the official ``openai`` client in a tool loop,
with hand-made GenAI semconv spans (``invoke_agent``, ``chat``, ``execute_tool``).

Three ways to run it, as ``tracegrade run`` does:

- in process: :func:`answer` (str or conversation) and :func:`answer_async`;
- as a command (``python -m tests.runner.shop_agent``, wrapped by ``shop_agent.sh``): reads
  the user message (or a JSON conversation) on stdin, configures the SDK from the standard
  ``OTEL_*`` variables, prints the reply;
- as a service (``--serve PORT``): ``POST /`` with ``{"message": ...}`` or ``{"messages":
  [...]}``, continuing the caller's W3C ``traceparent``.

Inputs that start with ``CRASH``, ``HANG``, ``EXIT3`` or ``RAISE`` make the command abort, sleep
forever, print to stderr and exit 3, or die of an uncaught exception (before any heavy import,
so those cases are quick). The model
is whatever ``OPENAI_BASE_URL`` serves (the tests' ``ShopModel``). In process the agent uses
the ``openai`` client; the command and the service speak the same Chat Completions wire
format with ``httpx`` (:class:`_HttpxChat`), because importing ``openai`` costs 2-3 s per
process on the test machines.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Any

CATALOGUE = {
    "sony wh-1000xm5": {"product": "Sony WH-1000XM5", "price": 279.99, "stock": 12},
    "bose qc ultra": {"product": "Bose QuietComfort Ultra", "price": 299.0, "stock": 3},
}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_price",
            "description": "Price and stock of a product",
            "parameters": {
                "type": "object",
                "properties": {"product": {"type": "string"}},
                "required": ["product"],
            },
        },
    }
]


def _conversation(message: str | Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if isinstance(message, str):
        return [{"role": "user", "content": message}]
    return [{"role": m["role"], "content": m["content"]} for m in message]


def _tool(tracer: Any, call: Any) -> str:
    args = json.loads(call.function.arguments)
    with tracer.start_as_current_span(
        f"execute_tool {call.function.name}",
        attributes={
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.function.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.call.arguments": call.function.arguments,
        },
    ) as span:
        wanted = str(args.get("product", "")).lower()
        item = next((v for k, v in CATALOGUE.items() if wanted in (k, v["product"].lower())), None)
        result = json.dumps(item or {"error": "unknown product"})
        span.set_attribute("gen_ai.tool.call.result", result)
        return result


def _chat(tracer: Any, client: Any, messages: list[dict[str, Any]]) -> Any:
    with tracer.start_as_current_span(
        "chat scripted",
        attributes={
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "scripted",
            "gen_ai.input.messages": json.dumps(messages),
        },
    ) as span:
        response = client.chat.completions.create(model="scripted", messages=messages, tools=TOOLS)
        reply = response.choices[0].message
        out = {
            "role": "assistant",
            "content": reply.content,
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in reply.tool_calls or []
            ],
        }
        span.set_attributes(
            {
                "gen_ai.output.messages": json.dumps([out]),
                "gen_ai.response.finish_reasons": [response.choices[0].finish_reason],
                "gen_ai.usage.input_tokens": response.usage.prompt_tokens,
                "gen_ai.usage.output_tokens": response.usage.completion_tokens,
            }
        )
        return reply, out


class _HttpxChat:
    """``client.chat.completions.create`` over httpx, answering attribute objects shaped like
    the ``openai`` client's (the subset this agent reads)."""

    def __init__(self) -> None:
        import httpx

        self.http = httpx.Client(
            base_url=os.environ["OPENAI_BASE_URL"],
            timeout=30,
            headers={"Authorization": f"Bearer {os.environ.get('OPENAI_API_KEY', '')}"},
        )
        self.chat = self.completions = self

    def create(self, **body: Any) -> Any:
        from types import SimpleNamespace

        response = self.http.post("/chat/completions", json=body)
        response.raise_for_status()
        data = json.loads(
            response.text, object_hook=lambda d: SimpleNamespace(**{"tool_calls": None, **d})
        )
        return data

    def __enter__(self) -> _HttpxChat:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()


def _client() -> Any:
    if os.environ.get("SHOP_AGENT_CLIENT") == "httpx":
        return _HttpxChat()
    from openai import OpenAI

    return OpenAI(max_retries=0)


def answer(message: str | Sequence[Mapping[str, Any]]) -> str:
    """The agent's reply to a message or conversation (spans on the global tracer provider)."""
    from opentelemetry import trace

    tracer = trace.get_tracer("tests.runner.shop_agent")
    messages = _conversation(message)
    with (
        tracer.start_as_current_span(
            "invoke_agent shop",
            attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
        ),
        _client() as client,
    ):
        for _ in range(5):
            reply, out = _chat(tracer, client, messages)
            if not reply.tool_calls:
                return reply.content or ""
            messages.append(out)
            messages.extend(
                {"role": "tool", "tool_call_id": c.id, "content": _tool(tracer, c)}
                for c in reply.tool_calls
            )
    raise RuntimeError("no answer after 5 model calls")


async def answer_async(message: str) -> str:
    """The same agent, async (the client call runs in a thread)."""
    import asyncio

    return await asyncio.to_thread(answer, message)


def _misbehave(text: str) -> None:
    if text.startswith("CRASH"):
        os.abort()
    if text.startswith("HANG"):
        time.sleep(3600)
    if text.startswith("EXIT3"):
        print("shop agent: cannot reach the catalogue", file=sys.stderr)
        sys.exit(3)
    if text.startswith("RAISE"):
        _look_up_the_catalogue()


def _look_up_the_catalogue() -> None:
    """Fails with an uncaught exception: a traceback of several frames on stderr."""
    raise LookupError("catalogue index missing for 'sony'")


def _configure() -> Any:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    if os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL") == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    provider = TracerProvider(resource=Resource.create({"service.name": "shop-agent"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)
    return provider


def _serve(port: int) -> None:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from opentelemetry import propagate, trace

    tracer = trace.get_tracer("tests.runner.shop_agent.service")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with tracer.start_as_current_span(
                "POST /", context=propagate.extract(dict(self.headers)), kind=trace.SpanKind.SERVER
            ):
                reply = answer(body["messages"] if "messages" in body else body["message"])
            data = json.dumps({"reply": reply}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"listening {server.server_address[1]}", flush=True)
    server.serve_forever()


def main() -> None:
    """Command or service entry point (see the module docstring)."""
    os.environ.setdefault("SHOP_AGENT_CLIENT", "httpx")
    if sys.argv[1:2] == ["--serve"]:
        provider = _configure()
        try:
            _serve(int(sys.argv[2]))
        finally:
            provider.shutdown()
        return
    text = sys.stdin.read()
    _misbehave(text)
    message = json.loads(text) if text.lstrip().startswith("[") else text
    provider = _configure()
    try:
        print(answer(message))
    finally:
        provider.shutdown()


if __name__ == "__main__":
    main()
