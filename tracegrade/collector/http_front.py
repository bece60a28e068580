"""OTLP/HTTP front end (Starlette on uvicorn): ``POST /v1/traces``, ``/v1/logs``,
``/v1/metrics`` and ``GET /healthz``.

Per the OTLP/HTTP specification: bodies are ``application/x-protobuf`` or
``application/json`` (else 415), optionally ``Content-Encoding: gzip`` (or ``deflate``,
which the Python exporter offers); the response uses
the request's content type; errors carry a ``google.rpc.Status`` body; 429 and 503 carry
``Retry-After``. The size limit applies to the body as received and again to the
decompressed body, before decoding (413). The export itself runs in a worker thread, so the
event loop keeps serving while a request waits for its commit.
"""

from __future__ import annotations

import math
import socket
import threading
import zlib
from collections.abc import Callable
from typing import Any

import uvicorn
from google.protobuf import json_format
from google.rpc import code_pb2, status_pb2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from tracegrade.collector.address import bare_host
from tracegrade.collector.admission import Encoding, Signal
from tracegrade.collector.service import ExportService, Outcome

CONTENT_TYPES: dict[str, Encoding] = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
MAX_CONNECTIONS = 64
"""Concurrent HTTP connections and requests served; uvicorn answers 503 beyond."""
_STATUS = {
    "ok": 200,
    "invalid": 400,
    "unauthorized": 401,
    "too_large": 413,
    "throttled": 429,
    "unavailable": 503,
}
_CODES = {
    "invalid": code_pb2.INVALID_ARGUMENT,
    "unauthorized": code_pb2.UNAUTHENTICATED,
    "too_large": code_pb2.RESOURCE_EXHAUSTED,
    "throttled": code_pb2.RESOURCE_EXHAUSTED,
    "unavailable": code_pb2.UNAVAILABLE,
    "unsupported": code_pb2.INVALID_ARGUMENT,
}


class BodyError(Exception):
    """The body cannot be read: ``kind`` is an :class:`Outcome` kind (invalid, too_large)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def _render(message: Any, encoding: Encoding) -> tuple[bytes, str]:
    if encoding == "json":
        return json_format.MessageToJson(message, indent=None).encode(), "application/json"
    return message.SerializeToString(), "application/x-protobuf"


def _error(
    kind: str, message: str, encoding: Encoding, status: int, retry_after_s: float | None = None
) -> Response:
    body, media_type = _render(status_pb2.Status(code=_CODES[kind], message=message), encoding)
    headers = (
        {} if retry_after_s is None else {"Retry-After": str(max(1, math.ceil(retry_after_s)))}
    )
    return Response(body, status_code=status, media_type=media_type, headers=headers)


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, gunzipped when ``Content-Encoding: gzip``.

    Raises:
        BodyError: over ``limit`` bytes (before or after decompression), an unknown content
            encoding, or gzip data that is corrupt or truncated.
    """
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BodyError("too_large", f"request body of {declared} bytes exceeds {limit}")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise BodyError("too_large", f"request body exceeds {limit} bytes")
        chunks.append(chunk)
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("", "identity"):
        return body
    if encoding not in _WBITS:
        raise BodyError(
            "invalid", f"unsupported Content-Encoding {encoding!r} (gzip, deflate or identity)"
        )
    return inflate(body, limit, encoding)


_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
"""zlib window bits per Content-Encoding: gzip framing, or zlib framing (HTTP's deflate)."""


def inflate(body: bytes, limit: int, encoding: str = "gzip") -> bytes:
    """Decompress a gzip or deflate body, refusing more than ``limit`` bytes of output. A
    gzip body may hold several members (RFC 1952); anything else after the end of the
    compressed data is an error, as in any other corrupt body.

    Raises:
        BodyError: corrupt or truncated data, trailing bytes, or output over ``limit``.
    """
    parts: list[bytes] = []
    size, rest = 0, body
    while True:
        inflater = zlib.decompressobj(_WBITS[encoding])
        try:
            data = inflater.decompress(rest, limit + 1 - size)
        except zlib.error as exc:
            raise BodyError("invalid", f"corrupt {encoding} body: {exc}") from exc
        size += len(data)
        if size > limit:
            raise BodyError("too_large", f"decompressed body exceeds {limit} bytes")
        if not inflater.eof:
            raise BodyError("invalid", f"truncated {encoding} body")
        parts.append(data)
        rest = inflater.unused_data
        if not rest:
            return b"".join(parts)
        if encoding != "gzip" or not rest.startswith(_GZIP_MAGIC):
            raise BodyError("invalid", f"corrupt {encoding} body: {len(rest)} bytes after its end")


_GZIP_MAGIC = b"\x1f\x8b"


def _endpoint(service: ExportService, signal: Signal) -> Callable[[Request], Any]:
    async def export(request: Request) -> Response:
        media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        encoding = CONTENT_TYPES.get(media_type)
        if encoding is None:
            return _error(
                "unsupported",
                f"unsupported Content-Type {media_type!r}; use "
                "application/x-protobuf or application/json",
                "protobuf",
                415,
            )
        if not service.authorized(request.headers.get("authorization")):
            response = _error("unauthorized", "missing or wrong bearer token", encoding, 401)
            response.headers["WWW-Authenticate"] = 'Bearer realm="tracegrade"'
            return response
        try:
            body = await read_body(request, service.max_request_bytes)
        except BodyError as exc:
            return _error(exc.kind, str(exc), encoding, _STATUS[exc.kind])
        except ClientDisconnect:
            return Response(status_code=400)
        outcome: Outcome = await run_in_threadpool(
            service.export, signal, body, encoding, request.headers.get("authorization")
        )
        if outcome.kind != "ok":
            return _error(
                outcome.kind,
                outcome.message,
                encoding,
                _STATUS[outcome.kind],
                outcome.retry_after_s,
            )
        content, response_type = _render(outcome.response, encoding)
        return Response(content, media_type=response_type)

    return export


def http_app(service: ExportService, health: Callable[[], dict[str, Any]]) -> Starlette:
    """The Starlette application: the three OTLP paths and ``/healthz`` (``health()`` as JSON)."""

    async def healthz(_request: Request) -> Response:
        return JSONResponse(health())

    routes = [
        Route(f"/v1/{signal}", _endpoint(service, signal), methods=["POST"])
        for signal in ("traces", "logs", "metrics")
    ]
    return Starlette(routes=[*routes, Route("/healthz", healthz, methods=["GET"])])


class HttpServer:
    """uvicorn serving :func:`http_app` in a background thread, on a socket bound up front
    (so ``port`` 0 resolves to a known free port before serving starts).

    Raises:
        OSError: the address cannot be bound.
    """

    def __init__(self, app: Starlette, host: str, port: int):
        try:
            host = bare_host(host)
        except ValueError as exc:
            raise OSError(str(exc)) from exc
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.socket = socket.create_server((host, port), family=family, reuse_port=False)
        self.port = self.socket.getsockname()[1]
        # limit_concurrency bounds the requests being read at once (each up to the size limit),
        # beyond which uvicorn answers 503: memory stays bounded before the receive queue too.
        config = uvicorn.Config(
            app,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=5,
            limit_concurrency=MAX_CONNECTIONS,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run,
            kwargs={"sockets": [self.socket]},
            name="tracegrade-http",
            daemon=True,
        )

    def start(self) -> None:
        """Serve in the background; returns once uvicorn accepts connections."""
        self.thread.start()
        while not self.server.started and self.thread.is_alive():
            threading.Event().wait(0.01)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Finish in-flight requests for up to ``timeout_s``, then close every connection."""
        self.server.should_exit = True
        self.thread.join(timeout=timeout_s)
        if self.thread.is_alive():
            self.server.force_exit = True
            self.thread.join(timeout=2.0)
        self.socket.close()
