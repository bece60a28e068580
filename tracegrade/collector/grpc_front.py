"""OTLP/gRPC front end: ``TraceService/Export``, ``LogsService/Export`` and
``MetricsService/Export`` (opentelemetry-proto service names) on a grpcio server.

Requests reach the handlers as raw bytes (no deserializer), so the size limit applies before
decoding (grpcio's ``max_receive_message_length`` answers RESOURCE_EXHAUSTED) and decoding
happens once, in :mod:`.admission`. Status codes follow the OTLP/gRPC specification (see
:mod:`.service`); throttling carries a ``google.rpc.RetryInfo`` so exporters retry.

Under hostile load (a ``grpc.aio`` server, so a waiting call costs a coroutine, not a thread):
the port is a :class:`~.grpc_guard.GrpcGuard` in front of the server (which listens on a
private Unix socket); it holds at most :data:`MAX_CONNECTIONS` connections and, when one more
arrives, closes the idlest connection (nothing received for :data:`EVICTABLE_AFTER_S`, no
call open) of the peer address holding the most, else one without a call open of a peer
address over its fair share, so idle connections of one client never shut another out; a
connection must send its first byte within :data:`HANDSHAKE_TIMEOUT_S` and then complete
its HTTP/2 handshake within as long again, and is closed (GOAWAY, which exporters follow by
reconnecting) after :data:`IDLE_TIMEOUT_S` without a call, as OTLP/HTTP closes one that sends
no request; the bearer token is checked from the call's metadata by an interceptor before the
message is read; an authorised call must deliver its message within :data:`READ_TIMEOUT_S`; at most
:data:`MAX_READING` calls wait for their message and :data:`MAX_IN_FLIGHT` are exported at
once. Every refusal (too many calls, a stalled message, a full queue) is RESOURCE_EXHAUSTED
with RetryInfo, which the OpenTelemetry Collector's exporter needs in order to retry
(grpcio's own concurrency limit sends none). A call's own deadline (``grpc-timeout``) bounds
its wait in the receive queue too (:attr:`~.admission.Admitted.answer_by`): a request that
cannot be committed before its client stops waiting is refused the same way rather than
stored for a client that has gone (and resends it).
"""

from __future__ import annotations

import asyncio
import functools
import socket
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from tracegrade.collector.address import bare_host, check_free, host_port
from tracegrade.collector.admission import Signal
from tracegrade.collector.grpc_guard import GrpcGuard, PrivateAddress, descriptors_for
from tracegrade.collector.memory import admission_footprint
from tracegrade.collector.service import ExportService, Outcome, Pending, admits_inline, settle

SERVICES: dict[Signal, str] = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
}
_CODES = {
    "invalid": code_pb2.INVALID_ARGUMENT,
    "unauthorized": code_pb2.UNAUTHENTICATED,
    "too_large": code_pb2.RESOURCE_EXHAUSTED,
    "throttled": code_pb2.RESOURCE_EXHAUSTED,
    "unavailable": code_pb2.UNAVAILABLE,
}
DEFAULT_WORKERS = 16


MAX_IN_FLIGHT = DEFAULT_WORKERS * 4
"""Calls exported at once (their message read); beyond, RESOURCE_EXHAUSTED + RetryInfo."""
MAX_READING = 256
"""Authorised calls still delivering their message (each a coroutine); beyond, the same."""
READ_TIMEOUT_S = 5.0
"""How long an authorised call may take to deliver its request message once it started."""
STREAM_WINDOW_BYTES = 64 * 1024
"""What grpc core may hold of a call's message before its handler reads it: the HTTP/2
stream window, fixed at its initial 64 KiB (``grpc.http2.bdp_probe`` off)."""
READ_ROOM_WAIT_S = 0.05
"""How long a call waits for room to read its message before it is refused: reading a small
message takes well under a millisecond, so a burst of small calls queues briefly instead of
being refused (64 calls sent at once by one client had one refused on a loaded machine when
every call past the room was refused at once). Waiting calls are charged
:data:`STREAM_WINDOW_BYTES` each. Short, because waiting calls hold their stream's data in
grpc core: with 0.25 s, 160 overloading clients took the resident set 18-25 MiB past the
bound in two of three runs."""
REFUSAL_RETRY_S = 1.0
MAX_CONNECTIONS = 1024
"""Connections held at once by the :class:`~.grpc_guard.GrpcGuard`; one more makes it close
one (idle first, see :data:`EVICTABLE_AFTER_S`) or, none being closable, is closed (the
exporter retries). Unbounded, ~20,000 silent connections used up the process's file
descriptors and legitimate exports on both ports failed; with grpc core's cap alone (which
closes the newcomer), 1,100 idle connections re-opened as they were closed kept exporters
out."""
EVICTABLE_AFTER_S = 1.0
"""A connection with no call open and nothing received for this long may be closed to make
room for a new one (as on the OTLP/HTTP port)."""
MAX_STREAMS_PER_CONNECTION = 100
"""Calls one connection may have open at once (HTTP/2 ``SETTINGS_MAX_CONCURRENT_STREAMS``;
grpc core refuses a stream past it with ``REFUSED_STREAM``, before any handler runs): an
exporter has a few; unbounded, one connection opened 5,000 calls in a second and dropped
them, and the other exporters' calls failed while the server wound them up."""
HANDSHAKE_TIMEOUT_S = 5.0
"""A connection that has not completed the HTTP/2 handshake (preface and settings) within
this long is closed (grpc core's default kept a silent one ~60 s)."""
IDLE_TIMEOUT_S = 10.0
"""A connection without a call for this long is closed gracefully (GOAWAY): an exporter
reconnects on its next export, an idle attacker's connection goes away."""
READ_COPIES = 2
"""A call reading its message is charged this many messages of the largest size: gRPC holds
the message's buffers until they are copied into the ``bytes`` the handler reads (charging
one made the resident set pass the bound by ~100 MB under 160 clients of 4-15 MiB)."""


def _status(outcome: Outcome) -> grpc.Status:
    """``outcome`` as a gRPC status with a ``google.rpc.Status`` (and ``RetryInfo`` when it
    says when to retry) in ``grpc-status-details-bin``."""
    status = status_pb2.Status(code=_CODES[outcome.kind], message=outcome.message)
    if outcome.retry_after_s is not None:
        seconds = int(outcome.retry_after_s)
        detail = AnyMessage()
        detail.Pack(
            error_details_pb2.RetryInfo(
                retry_delay=Duration(
                    seconds=seconds, nanos=int((outcome.retry_after_s - seconds) * 1e9)
                )
            )
        )
        status.details.append(detail)
    return rpc_status.to_status(status)


async def _abort(context: grpc.aio.ServicerContext, outcome: Outcome) -> None:
    status = _status(outcome)
    await context.abort(status.code, status.details, status.trailing_metadata)


class _Calls:
    """What the handlers share: the export service, the worker threads that run exports, and
    the counts of calls reading and exporting (touched only on the event loop's thread)."""

    def __init__(self, service: ExportService, workers: int, max_in_flight: int):
        self.service = service
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tracegrade-grpc")
        self.max_in_flight = max_in_flight
        self.reading = self.waiting = self.in_flight = 0
        self.room_waiters: set[asyncio.Future[None]] = set()
        """Calls waiting for room to read (:meth:`_room_to_read`), each woken by a future.
        Not an ``asyncio.Condition``: cancelling thousands of calls waiting on one (a
        connection that opened 5,000 calls and dropped them) left its lock unreleased
        ("Lock is not acquired") and every later call waited on it until its deadline."""

    async def export(self, signal: Signal, context: grpc.aio.ServicerContext) -> Any:
        """One authorised call: its response, or aborted with the :meth:`outcome`'s status.

        Aborting raises through the handler, and the exception's traceback keeps the frames
        it passes alive until the cyclic garbage collector runs (which counts objects, not
        bytes): so the abort happens here, in a frame that never held the request. (Aborting
        where the body was a local kept refused 15 MiB bodies alive: a bare grpc.aio server
        reading 6 calls at once reached 1.4 GB of RSS under 160 clients, 0.3 GB without.)"""
        outcome = await self.outcome(signal, context)
        if outcome.kind != "ok":
            await _abort(context, outcome)
        return outcome.response

    async def outcome(self, signal: Signal, context: grpc.aio.ServicerContext) -> Outcome:
        """Read the message within :data:`READ_TIMEOUT_S`, export it (:meth:`_start`);
        refused at once when :data:`MAX_READING` calls are reading or ``max_in_flight``
        exporting, and after :data:`READ_ROOM_WAIT_S` when the memory bound has no room for
        :data:`READ_COPIES` messages of the largest size (gRPC receives a message whole
        before the handler sees its size, so a read holds that much of the bound until the
        message is in; then its real size)."""
        if self.reading + self.waiting >= MAX_READING:
            return _throttled(f"{self.reading} calls are sending their message")
        memory, charge = self.service.memory, self.service.max_request_bytes * READ_COPIES
        if not await self._room_to_read(charge):
            return _throttled("no memory left to receive another message")
        self.reading += 1
        try:
            body = await self._read(context)
        finally:
            self.reading -= 1
            memory.release(charge)
            self._wake_one()
        if isinstance(body, Outcome):
            return body
        if self.in_flight >= self.max_in_flight or not memory.reserve(len(body), admit=False):
            return _throttled("too many export calls or no memory left")
        self.in_flight += 1
        size = len(body)
        try:
            job = self._start(signal, body, context)
        except BaseException:
            self.in_flight -= 1
            memory.release(size)
            raise
        # Once admitted the request holds its rows, not the message (or it was refused): the
        # message's charge goes back then, not when the commit is answered.
        del body
        job.add_done_callback(lambda _: memory.release(size))
        try:
            return await _settle_job(job)
        finally:
            self.in_flight -= 1

    def _wake_one(self) -> None:
        """Wake a call waiting for room to read, if any (a read ended)."""
        while self.room_waiters:
            woken = self.room_waiters.pop()
            if not woken.done():
                woken.set_result(None)
                return

    def _reserve_read(self, charge: int) -> bool:
        """Reserve ``charge`` bytes to read a message: beyond the first read, reads hold at
        most half the bound (so stalled gRPC calls never starve OTLP/HTTP)."""
        memory = self.service.memory
        if self.reading and (self.reading + 1) * charge > memory.limit_bytes // 2:
            return False
        footprint = admission_footprint(self.service.max_request_bytes)
        return memory.reserve(charge, footprint=footprint)

    async def _room_to_read(self, charge: int) -> bool:
        """Whether ``charge`` was reserved within :data:`READ_ROOM_WAIT_S`: tried again
        when a read ends and once more at the end (for room given back by OTLP/HTTP). A
        waiting call is charged :data:`STREAM_WINDOW_BYTES` meanwhile (refused at once
        without them)."""
        if self._reserve_read(charge):
            return True
        memory = self.service.memory
        if not memory.reserve(STREAM_WINDOW_BYTES, admit=False):
            return False
        deadline = time.monotonic() + READ_ROOM_WAIT_S
        self.waiting += 1
        try:
            while not self._reserve_read(charge):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                self.room_waiters.add(woken)
                try:
                    await asyncio.wait({woken}, timeout=remaining)
                finally:
                    self.room_waiters.discard(woken)
            return True
        finally:
            self.waiting -= 1
            memory.release(STREAM_WINDOW_BYTES)

    def _start(
        self, signal: Signal, body: bytes, context: grpc.aio.ServicerContext
    ) -> Future[Outcome | Pending]:
        """:meth:`ExportService.start` of the message with the call's authorization and
        deadline: in a worker thread, or done here when the message is small enough to be
        admitted on the event loop (:func:`~.service.admits_inline`)."""
        metadata = dict(context.invocation_metadata() or ())
        remaining = context.time_remaining()  # the client's deadline (grpc-timeout)
        answer_by = None if remaining is None else time.monotonic() + remaining
        start = functools.partial(
            self.service.start, signal, body, "protobuf", metadata.get("authorization"), answer_by
        )
        if not admits_inline(body, "protobuf"):
            return self.pool.submit(start)
        job: Future[Outcome | Pending] = Future()
        try:
            job.set_result(start(inline=True))
        except Exception as exc:  # as the pool would hand it over
            job.set_exception(exc)
        return job

    @staticmethod
    async def _read(context: grpc.aio.ServicerContext) -> bytes | Outcome:
        try:
            body = await asyncio.wait_for(context.read(), READ_TIMEOUT_S)
        except TimeoutError:
            return _throttled(f"the request message did not arrive within {READ_TIMEOUT_S:g} s")
        if body is grpc.aio.EOF:
            return Outcome("invalid", message="the call carried no request")
        return bytes(body)


async def _settle_job(job: Future[Outcome | Pending]) -> Outcome:
    """The outcome of ``job`` (:meth:`ExportService.start` in a worker). When the call is
    cancelled first (its client gave up or went away), the export still finishes and its
    memory charge is given back once committed: without this, every abandoned call kept its
    charge and the bound shrank for good (measured: 124-347 MiB of 384 still charged with no
    call left after 160 overloading clients)."""
    try:
        # admitted inline, the job is done already: no hand-off through the loop
        started = job.result() if job.done() else await asyncio.shield(asyncio.wrap_future(job))
        return await settle(started)
    except asyncio.CancelledError:
        job.add_done_callback(_answer_abandoned)
        raise


def _answer_abandoned(job: Future[Outcome | Pending]) -> None:
    if job.cancelled() or job.exception() is not None:
        return
    started = job.result()
    if isinstance(started, Pending):
        started.future.add_done_callback(lambda _: started.outcome())


def _throttled(why: str) -> Outcome:
    return Outcome("throttled", message=f"{why}; retry later", retry_after_s=REFUSAL_RETRY_S)


def _handler(calls: _Calls, signal: Signal) -> grpc.RpcMethodHandler:
    # Registered as client-streaming (the wire format of a unary call is the same), so the
    # handler runs when the call arrives and reads the message itself, with a time limit.
    async def export(_requests: Any, context: grpc.aio.ServicerContext) -> Any:
        return await calls.export(signal, context)

    return grpc.stream_unary_rpc_method_handler(
        export,
        request_deserializer=None,
        response_serializer=lambda message: message.SerializeToString(),
    )


class _Authenticate(grpc.aio.ServerInterceptor):  # type: ignore[misc]  # grpc ships no types
    """Checks the bearer token from the call's metadata before any message is read: a call
    without it is answered UNAUTHENTICATED at once, holding nothing."""

    def __init__(self, service: ExportService):
        self.service = service

        async def refuse(_requests: Any, context: grpc.aio.ServicerContext) -> None:
            await _abort(context, Outcome("unauthorized", message="missing or wrong bearer token"))

        self.refusal = grpc.stream_unary_rpc_method_handler(refuse)

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        metadata = dict(details.invocation_metadata or ())
        if self.service.authorized(metadata.get("authorization")):
            return await continuation(details)
        return self.refusal


class GrpcServer:
    """A ``grpc.aio`` server for the three OTLP services on its own event loop thread; the
    exports themselves run in ``workers`` threads. Stalled or unauthenticated calls cost a
    coroutine, not a thread, and every refusal carries ``RetryInfo``."""

    def __init__(self, service: ExportService, *, workers: int = DEFAULT_WORKERS):
        self.calls = _Calls(service, workers, max(MAX_IN_FLIGHT, workers))
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(
            target=self.loop.run_forever, name="tracegrade-grpc-loop", daemon=True
        )
        self.server: grpc.aio.Server | None = None
        self.guard: GrpcGuard | None = None
        self.private = PrivateAddress()

    def start(self, host: str, port: int) -> int:
        """Bind and serve; returns the bound port.

        Raises:
            OSError: the address cannot be bound.
        """
        self.thread.start()
        try:
            return asyncio.run_coroutine_threadsafe(self._start(host, port), self.loop).result()
        except BaseException:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.private.remove()
            raise

    async def _start(self, host: str, port: int) -> int:
        service = self.calls.service
        self.server = grpc.aio.server(
            interceptors=[_Authenticate(service)],
            options=[
                ("grpc.max_receive_message_length", service.max_request_bytes),
                ("grpc.so_reuseport", 0),
                # No bandwidth-delay probing: HTTP/2 stream windows stay at their initial
                # 64 KiB, so a call holds that much until its handler reads the message (with
                # probing, 160 clients of 15 MiB messages made grpc core hold 2.5 GB).
                ("grpc.http2.bdp_probe", 0),
                # the guard holds MAX_CONNECTIONS; this is a backstop (closes lag a little)
                ("grpc.max_allowed_incoming_connections", 2 * MAX_CONNECTIONS),
                ("grpc.max_concurrent_streams", MAX_STREAMS_PER_CONNECTION),
                ("grpc.server_handshake_timeout_ms", int(HANDSHAKE_TIMEOUT_S * 1000)),
                ("grpc.max_connection_idle_ms", int(IDLE_TIMEOUT_S * 1000)),
            ],
        )
        self.server.add_generic_rpc_handlers(
            [
                grpc.method_handlers_generic_handler(name, {"Export": _handler(self.calls, signal)})
                for signal, name in SERVICES.items()
            ]
        )
        sock = _listen(host, port)
        try:
            bound = self.server.add_insecure_port(self.private.grpc_address())
            if bound == 0:
                raise OSError("cannot bind the gRPC server's private address")
            descriptors_for(MAX_CONNECTIONS)
            self.guard = GrpcGuard(
                self.loop,
                self.private.upstream(bound),
                max_connections=MAX_CONNECTIONS,
                idle_after_s=EVICTABLE_AFTER_S,
                handshake_timeout_s=HANDSHAKE_TIMEOUT_S,
            )
            await self.server.start()
            self.guard.serve(sock)
        except BaseException:
            sock.close()
            raise
        return int(sock.getsockname()[1])

    def stop(self, grace_s: float | None) -> threading.Event:
        """Stop taking calls, let those in flight finish within ``grace_s``; the returned
        event is set once stopped."""
        done = threading.Event()

        async def stop() -> None:
            if self.guard is not None:
                self.guard.stop_accepting()
            if self.server is not None:
                await self.server.stop(grace_s)
            if self.guard is not None:
                self.guard.close_all()
            self.private.remove()
            done.set()
            self.loop.stop()

        asyncio.run_coroutine_threadsafe(stop(), self.loop)
        self.calls.pool.shutdown(wait=False)
        return done


def _listen(host: str, port: int) -> socket.socket:
    """The public port's listening socket, bound as OTLP/HTTP's is.

    Raises:
        OSError: the address cannot be bound (in use: named with the fix).
    """
    try:
        bare = bare_host(host)
    except ValueError as exc:
        raise OSError(str(exc)) from exc
    check_free(host, port, "gRPC port")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    try:
        return socket.create_server((bare, port), family=family, reuse_port=False)
    except OSError as exc:
        raise OSError(f"cannot bind the gRPC port {host_port(bare, port)}: {exc}") from exc


def grpc_server(
    service: ExportService, host: str, port: int, *, workers: int = DEFAULT_WORKERS
) -> tuple[GrpcServer, int]:
    """A started :class:`GrpcServer` for the three OTLP services; returns it and its bound
    port (``port`` 0 picks a free one).

    Raises:
        OSError: the address cannot be bound.
    """
    server = GrpcServer(service, workers=workers)
    return server, server.start(host, port)
