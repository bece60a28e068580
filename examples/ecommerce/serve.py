"""HTTP service: ``python -m examples.ecommerce.serve --port N [--host 127.0.0.1]``.

``POST /chat`` (or ``/``) with a JSON body ``{"message": "..."}`` or ``{"messages": [{"role",
"content"}, ...]}`` answers ``{"reply": "..."}``; a bad body answers 400 ``{"error": ...}``, a
failed agent 502 ``{"error": ...}``. ``GET /health`` answers ``{"status": "ok"}``. With
``--threads PATH`` (a SQLite file) or ``--threads memory`` the service keeps each conversation
itself (:mod:`examples.ecommerce.threads`): the body is ``{"message": "...",
"conversation_id": "..."}`` and only a SQLite thread survives a restart of the service.

Built on the standard library's ``ThreadingHTTPServer`` (one thread per request): the example
needs one JSON endpoint, and a web framework would add dependencies for nothing.

Tracing joins the caller's trace: the W3C ``traceparent`` and ``baggage`` headers are
extracted with the globally configured propagators (``opentelemetry.propagate.extract``;
``OTEL_PROPAGATORS``, tracecontext and baggage by default), so the agent's spans become
children of the caller's span, and ``BaggageSpanProcessor`` copies every ``tracegrade.*``
baggage entry (e.g. ``tracegrade.case_id``) onto each span. The tracer provider is configured
from the standard environment (:mod:`examples.ecommerce.telemetry`); spans are batched, so set
``OTEL_BSP_SCHEDULE_DELAY`` (milliseconds) low when a caller waits for them. The service prints
``listening on http://HOST:PORT`` on stdout once it accepts requests (useful with ``--port 0``).
"""

from __future__ import annotations

import json
import signal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import click
from opentelemetry import context, propagate
from opentelemetry.processor.baggage import BaggageSpanProcessor

from examples.ecommerce.agent import answer
from examples.ecommerce.telemetry import configure_tracing
from examples.ecommerce.threads import ThreadStore, open_threads, reply_in_thread

BAGGAGE_PREFIX = "tracegrade."
_MAX_BODY_BYTES = 1_000_000


def _reply(body: Any, threads: ThreadStore | None) -> str:
    """The agent's reply to a request body (in its thread when the service keeps them).

    Raises:
        ValueError: a bad body (see :func:`_user_input`), or no ``conversation_id`` when the
            service keeps the threads.
    """
    user_input = _user_input(body)
    if threads is None:
        return answer(user_input)
    conversation_id = body.get("conversation_id")
    if not isinstance(conversation_id, str) or not isinstance(user_input, str):
        raise ValueError('this service keeps the threads: send {"message", "conversation_id"}')
    return reply_in_thread(threads, conversation_id, user_input)


def _user_input(body: Any) -> str | list:
    """The message or conversation of a request body.

    Raises:
        ValueError: the body is not ``{"message": str}`` or ``{"messages": [...]}``.
    """
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    if isinstance(body, dict) and isinstance(body.get("messages"), list):
        return body["messages"]
    raise ValueError(
        'the body must be {"message": "..."} or {"messages": [{"role": ..., "content": ...}]}'
    )


class ChatHandler(BaseHTTPRequestHandler):
    """One request: parse, join the caller's trace, run the agent, answer JSON."""

    protocol_version = "HTTP/1.1"
    threads: ThreadStore | None = None
    """The conversations, when the service keeps them (``--threads``)."""
    disable_nagle_algorithm = True  # headers and body are separate writes: don't wait for ACKs

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/health":
            self._send(200, {"status": "ok"})
        else:
            self._send(404, {"error": f"no route GET {self.path}; use POST /chat"})

    def do_POST(self) -> None:
        if self.path.rstrip("/") not in ("", "/chat"):
            self._send(404, {"error": f"no route POST {self.path}; use POST /chat"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY_BYTES:
            self._send(413, {"error": f"body over {_MAX_BODY_BYTES} bytes"})
            return
        try:
            body = json.loads(self.rfile.read(length) or b"null")
        except ValueError as exc:  # json.JSONDecodeError
            self._send(400, {"error": str(exc)})
            return
        carrier = {key.lower(): value for key, value in self.headers.items()}
        token = context.attach(propagate.extract(carrier))
        try:
            reply = _reply(body, self.threads)
        except ValueError as exc:
            self._send(400, {"error": str(exc)})
        except Exception as exc:  # the agent failed; the caller gets the reason
            self._send(502, {"error": f"{type(exc).__name__}: {exc}"})
        else:
            self._send(200, {"reply": reply})
        finally:
            context.detach(token)


def make_server(
    host: str = "127.0.0.1", port: int = 0, threads: ThreadStore | None = None
) -> ThreadingHTTPServer:
    """The HTTP server (not started; ``port`` 0 picks a free one), keeping the conversations
    in ``threads`` when given."""
    handler = type("Handler", (ChatHandler,), {"threads": threads})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(0)  # unwinds serve_forever, so the finally block flushes the spans


@click.command()
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option(
    "--port",
    default=8080,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="0 picks a free port.",
)
@click.option(
    "--threads",
    metavar="PATH|memory",
    help="Keep each conversation by its conversation_id: in this SQLite file, or in memory.",
)
def main(host: str, port: int, threads: str | None) -> None:
    """Serve the example shop assistant over HTTP."""
    try:
        provider = configure_tracing(
            [BaggageSpanProcessor(lambda key: key.startswith(BAGGAGE_PREFIX))]
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    server = make_server(host, port, open_threads(threads) if threads else None)
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    click.echo(f"listening on http://{server.server_address[0]}:{server.server_address[1]}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
        provider.shutdown()


if __name__ == "__main__":
    main()
