"""A scripted OpenAI-compatible server for tests: it plays the model (agent or judge).

A test double on 127.0.0.1 (ephemeral port, daemon thread), speaking the Chat Completions
wire format that the official ``openai`` client uses (``POST /v1/chat/completions``,
non-streaming). What it answers is decided by a *script*: a callable that receives the
parsed request body and returns a :class:`Reply`, or a list of replies served in order.

Replies::

    text("the answer")                          # assistant message
    tool_calls(("search_products", {"q": "x"}))  # assistant message with tool calls
    json_reply({"score": 0.8, ...})             # assistant message whose content is JSON
    error(429, retry_after=0)                   # an HTTP error with an OpenAI error body
    raw("{not json")                            # a 200 whose body is this text
    delayed(5.0, text("late"))                  # sleep first (for client timeouts)

Every request is recorded in ``server.requests`` (parsed bodies, in arrival order).

Usage::

    with ScriptedOpenAI([text("hi")]) as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Reply:
    """One scripted answer. ``body`` None means a normal completion built from ``message``."""

    status: int = 200
    message: dict[str, Any] | None = None
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    usage: tuple[int, int] = (25, 12)


def text(content: str, *, usage: tuple[int, int] = (25, 12)) -> Reply:
    """An assistant message with this content."""
    return Reply(message={"role": "assistant", "content": content}, usage=usage)


def json_reply(data: Any) -> Reply:
    """An assistant message whose content is ``data`` as JSON (e.g. a judge verdict)."""
    return text(json.dumps(data))


def tool_calls(*calls: tuple[str, dict[str, Any]], content: str | None = None) -> Reply:
    """An assistant message calling these tools: ``(name, arguments)`` pairs."""
    stamp = time.monotonic_ns()
    return Reply(
        message={
            "role": "assistant",
            "content": content,
            "tool_calls": [
                {
                    "id": f"call_{stamp}_{i}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for i, (name, args) in enumerate(calls)
            ],
        }
    )


def error(
    status: int, message: str = "scripted error", *, retry_after: float | None = None
) -> Reply:
    """An HTTP error with an OpenAI-style error body (``retry_after`` sets ``Retry-After``)."""
    headers = {} if retry_after is None else {"retry-after": str(retry_after)}
    body = json.dumps({"error": {"message": message, "type": "scripted", "code": status}})
    return Reply(status=status, body=body, headers=headers)


def raw(body: str, status: int = 200) -> Reply:
    """A response whose body is exactly ``body``."""
    return Reply(status=status, body=body)


def delayed(seconds: float, reply: Reply) -> Reply:
    """``reply`` after sleeping ``seconds``."""
    return Reply(reply.status, reply.message, reply.body, reply.headers, seconds, reply.usage)


Script = Callable[[dict[str, Any]], Reply] | Sequence[Reply]


def _completion(reply: Reply, model: str) -> str:
    prompt, completion = reply.usage
    finish = "tool_calls" if (reply.message or {}).get("tool_calls") else "stop"
    return json.dumps(
        {
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": reply.message, "finish_reason": finish}],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            },
        }
    )


class ScriptedOpenAI:
    """The server (see the module docstring). ``script`` is a callable or a list of replies;
    a list that runs out answers 410 with ``x-should-retry: false``."""

    def __init__(self, script: Script, host: str = "127.0.0.1", port: int = 0):
        self.script = script
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer((host, port), self._handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """Base URL for the openai client (``http://127.0.0.1:PORT/v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ScriptedOpenAI:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="scripted-openai",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> ScriptedOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _next(self, body: dict[str, Any]) -> Reply:
        with self._lock:
            index = len(self.requests)
            self.requests.append(body)
        if callable(self.script):
            return self.script(body)
        if index < len(self.script):
            return self.script[index]
        return Reply(
            status=410,
            body=json.dumps({"error": {"message": "script exhausted"}}),
            headers={"x-should-retry": "false"},
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else every reply waits out a delayed ACK (~40 ms)

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    body = {}
                reply = server._next(body)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                payload = (
                    reply.body
                    if reply.body is not None
                    else _completion(reply, body.get("model", "scripted"))
                )
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout tests)

        return Handler
