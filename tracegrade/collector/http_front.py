"""OTLP/HTTP front end (Starlette on uvicorn): ``POST /v1/traces``, ``/v1/logs``,
``/v1/metrics``, ``GET /healthz``, and ``POST /v1/feedback`` (end-user feedback as JSON:
:mod:`.feedback_api`).

Per the OTLP/HTTP specification: bodies are ``application/x-protobuf`` or
``application/json`` (else 415), optionally ``Content-Encoding: gzip`` (or ``deflate``,
which the Python exporter offers); the response uses
the request's content type; errors carry a ``google.rpc.Status`` body; 429 and 503 carry
``Retry-After``. The size limit applies to the body as received and again to the
decompressed body, before decoding (413). The export itself runs in a worker thread, so the
event loop keeps serving while a request waits for its commit.
"""

from __future__ import annotations

import asyncio
import functools
import math
import socket
import threading
import time
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

from tracegrade._util.http_guard import LimitedProtocol
from tracegrade.collector.address import bare_host, check_free
from tracegrade.collector.admission import Encoding, Signal
from tracegrade.collector.feedback_api import feedback_endpoint
from tracegrade.collector.feedback_limits import FeedbackLimits
from tracegrade.collector.memory import MemoryBudget, admission_footprint
from tracegrade.collector.service import ExportService, admits_inline, settle

CONTENT_TYPES: dict[str, Encoding] = {
    "application/x-protobuf": "protobuf",
    "application/protobuf": "protobuf",
    "application/json": "json",
}
MAX_CONNECTIONS = 1024
"""Open connections; a connection beyond is answered 503 with Retry-After and closed. Well
above any request limit: idle or slow connections cost a socket, not a slot."""
HEADER_TIMEOUT_S = 10.0
"""A connection must complete a request's headers within this long of opening (or of its
previous response), else it is closed: idle and slow-header (slow-loris) clients go away."""
MAX_HEADER_BYTES = 64 * 1024
"""Longest request line and headers; past it 431 and the connection closed, before the bearer
token is checked (unbounded, 8 clients of 200 MiB headers took the process to 1.7 GB)."""
BODY_IDLE_TIMEOUT_S = 5.0
"""Longest pause between two pieces of a request body before the request is refused (408)."""
BODY_TIMEOUT_S = 30.0
"""Longest time to receive a whole request body (408 beyond)."""
RETRY_AFTER_S = 1.0
ANSWER_WITHIN_S = 8.0
"""The deadline given to a request from when its headers arrived: OTLP/HTTP carries none, and
the OpenTelemetry SDKs' export timeout is 10 s by default (``OTEL_EXPORTER_OTLP_TIMEOUT``),
counted from the send, so the time its body took to arrive counts too. A request that cannot
leave the receive queue by then, less :data:`~.ingest.ANSWER_MARGIN_S` for its commit, is
refused (429 + Retry-After) rather than stored (see :attr:`.admission.Admitted.answer_by`)."""
_STATUS = {
    "ok": 200,
    "invalid": 400,
    "unauthorized": 401,
    "too_large": 413,
    "throttled": 429,
    "unavailable": 503,
    "timeout": 408,
}
_CODES = {
    "invalid": code_pb2.INVALID_ARGUMENT,
    "unauthorized": code_pb2.UNAUTHENTICATED,
    "too_large": code_pb2.RESOURCE_EXHAUSTED,
    "throttled": code_pb2.RESOURCE_EXHAUSTED,
    "unavailable": code_pb2.UNAVAILABLE,
    "unsupported": code_pb2.INVALID_ARGUMENT,
    "timeout": code_pb2.DEADLINE_EXCEEDED,
}


class BodyError(Exception):
    """The body cannot be read: ``kind`` is an :class:`Outcome` kind (invalid, too_large,
    throttled) or ``timeout``; ``retry_after_s`` when the client should retry later."""

    def __init__(self, kind: str, message: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after_s = retry_after_s


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


async def read_body(request: Request, limit: int, memory: MemoryBudget | None = None) -> bytes:
    """The request body, gunzipped when ``Content-Encoding: gzip``; its bytes count against
    ``memory`` while it is read (:class:`ReadBody` keeps them counted until a block ends).

    Raises:
        BodyError: over ``limit`` bytes (before or after decompression), an unknown content
            encoding, gzip data that is corrupt or truncated, a body too slow to arrive
            (:data:`BODY_IDLE_TIMEOUT_S`, :data:`BODY_TIMEOUT_S`), or no memory left.
    """
    async with ReadBody(request, limit, memory) as body:
        return body


class ReadBody:
    """``async with ReadBody(request, limit, memory) as body``: the body as
    :func:`read_body` gives it, its received bytes reserved from ``memory`` until the block
    ends (so the bound covers a request from its first byte to its answer)."""

    def __init__(self, request: Request, limit: int, memory: MemoryBudget | None):
        self.request, self.limit, self.memory = request, limit, memory
        self.reserved = 0
        self.declared: int | None = None
        """The Content-Length, reserved before reading (None: chunked, reserved as read)."""

    async def __aenter__(self) -> bytes:
        declared = self.request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > self.limit:
            raise BodyError("too_large", f"request body of {declared} bytes exceeds {self.limit}")
        if declared and declared.isdigit():  # refuse before reading what cannot fit
            self.declared = int(declared)
            self._reserve(self.declared)
        try:
            async with asyncio.timeout(BODY_TIMEOUT_S):
                body = await self._receive()
        except TimeoutError:
            await self.__aexit__()
            raise BodyError(
                "timeout", f"the request body did not arrive within {BODY_TIMEOUT_S:g} s"
            ) from None
        except BaseException:
            await self.__aexit__()  # not called when __aenter__ raises
            raise
        encoding = self.request.headers.get("content-encoding", "identity").strip().lower()
        if encoding in ("", "identity"):
            return body
        try:
            if encoding not in _WBITS:
                raise BodyError(
                    "invalid",
                    f"unsupported Content-Encoding {encoding!r} (gzip, deflate or identity)",
                )
            return inflate(body, self.limit, encoding)
        except BodyError:
            await self.__aexit__()
            raise

    async def _receive(self) -> bytes:
        """The body's bytes. With a declared length they are copied, chunk by chunk, into
        one buffer of that size (one body in memory, not its chunks and then their join)."""
        chunks: list[bytes] = []
        buffer = None if self.declared is None else bytearray(self.declared)
        size = 0
        stream = aiter(self.request.stream())
        while True:
            try:
                async with asyncio.timeout(BODY_IDLE_TIMEOUT_S):
                    chunk = await anext(stream)
            except StopAsyncIteration:
                return _joined(buffer, size, chunks)
            except TimeoutError:
                raise BodyError(
                    "timeout", f"the request body paused for over {BODY_IDLE_TIMEOUT_S:g} s"
                ) from None
            if buffer is not None and size + len(chunk) <= len(buffer):
                buffer[size : size + len(chunk)] = chunk
                size += len(chunk)
                continue
            size += len(chunk)
            if size > self.limit or buffer is not None:  # more than declared: not HTTP/1.1
                raise BodyError("too_large", f"request body exceeds {self.limit} bytes")
            self._reserve(len(chunk))
            chunks.append(chunk)

    def _reserve(self, size: int) -> None:
        if self.memory is None:
            return
        admit = not self.reserved  # this request's first bytes: its whole footprint checked
        # the declared length, else the largest a body may be
        expected = self.limit if self.declared is None else size
        footprint = admission_footprint(expected) if admit else None
        if not self.memory.reserve(size, admit=admit, footprint=footprint):
            raise BodyError(
                "throttled", "the receiver is at its memory bound; retry later", RETRY_AFTER_S
            )
        self.reserved += size

    async def __aexit__(self, *exc: object) -> None:
        self.give_back()

    def give_back(self) -> None:
        """Release what the body reserved (at the end of the block, or once the body is no
        longer held)."""
        if self.memory is not None:
            self.memory.release(self.reserved)
        self.reserved = 0


def _joined(buffer: bytearray | None, size: int, chunks: list[bytes]) -> bytes:
    """The body :meth:`ReadBody._receive` collected: its buffer (cut to what arrived), or its
    chunks joined."""
    if buffer is None:
        return b"".join(chunks)
    del buffer[size:]
    return buffer  # type: ignore[return-value]  # bytes-like: decoders take either


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
        answer_by = time.monotonic() + ANSWER_WITHIN_S
        reader = ReadBody(request, service.max_request_bytes, service.memory)
        try:
            async with reader as body:
                start = functools.partial(
                    service.start,
                    signal,
                    body,
                    encoding,
                    request.headers.get("authorization"),
                    answer_by,
                )
                if admits_inline(body, encoding):
                    started = start(inline=True)
                else:
                    started = await run_in_threadpool(start)
                del start
                # Once admitted the request holds its rows, not its body (or it was refused):
                # the body's charge goes back now, not when the commit is answered.
                del body
                reader.give_back()
                outcome = await settle(started)
        except BodyError as exc:
            response = _error(exc.kind, str(exc), encoding, _STATUS[exc.kind], exc.retry_after_s)
            if exc.kind == "timeout":
                response.headers["Connection"] = "close"
            return response
        except ClientDisconnect:
            return Response(status_code=400)
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


def http_app(
    service: ExportService,
    health: Callable[[], dict[str, Any]],
    feedback_limits: FeedbackLimits | None = None,
) -> Starlette:
    """The Starlette application: the three OTLP paths, ``/v1/feedback`` (within
    ``feedback_limits``) and ``/healthz``: ``health()`` as JSON
    for a request that passes the bearer-token check (any, without a token), else the bare
    liveness answer ``{"status": "ok"}`` (the counters, ports and store stay private)."""

    async def healthz(request: Request) -> Response:
        if service.token is not None and not service.authorized(
            request.headers.get("authorization")
        ):
            return JSONResponse({"status": "ok"})
        return JSONResponse(health())

    routes = [
        Route(f"/v1/{signal}", _endpoint(service, signal), methods=["POST"])
        for signal in ("traces", "logs", "metrics")
    ]
    feedback = feedback_endpoint(service, feedback_limits)
    routes.append(Route("/v1/feedback", feedback, methods=["POST"]))
    return Starlette(routes=[*routes, Route("/healthz", healthz, methods=["GET"])])


class GuardedProtocol(LimitedProtocol):
    """:class:`~tracegrade._util.http_guard.LimitedProtocol` with this module's limits:
    :data:`MAX_CONNECTIONS`, :data:`HEADER_TIMEOUT_S`, :data:`MAX_HEADER_BYTES` (431 past
    them, before the bearer token is checked), and a body deadline a little past
    :data:`BODY_IDLE_TIMEOUT_S` and :data:`BODY_TIMEOUT_S` (the export routes answer their own
    OTLP 408 first; the deadline covers every route, ``/v1/feedback`` included)."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.max_connections = MAX_CONNECTIONS
        self.header_timeout_s = HEADER_TIMEOUT_S
        self.max_header_bytes = MAX_HEADER_BYTES
        self.body_idle_timeout_s = BODY_IDLE_TIMEOUT_S + 1.0
        self.body_timeout_s = BODY_TIMEOUT_S + 2.0


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
        check_free(host, port, "OTLP/HTTP port")
        self.socket = socket.create_server((host, port), family=family, reuse_port=False)
        self.port = self.socket.getsockname()[1]
        # Memory is bounded by the receiver's MemoryBudget (bodies are charged as they
        # arrive), connections and slow clients by GuardedProtocol, not by uvicorn's
        # limit_concurrency (which counted idle connections and answered without Retry-After).
        config = uvicorn.Config(
            app,
            http=GuardedProtocol,
            log_level="warning",
            access_log=False,
            lifespan="off",
            timeout_graceful_shutdown=5,
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
