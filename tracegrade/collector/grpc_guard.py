"""The OTLP/gRPC port's connection guard: a TCP front on the event loop that accepts the
exporters' connections and passes their bytes through, unchanged, to the ``grpc.aio``
server listening on a private address (a Unix socket in a directory only this user can
enter; 127.0.0.1 on a free port where Unix sockets are missing).

Why a front: grpc core's own connection cap (``grpc.max_allowed_incoming_connections``)
closes the *new* connection at the cap, so 1,100 idle connections re-opened as they were
closed kept well-behaved exporters out (``UNAVAILABLE``, issue 40), and grpcio neither says
which connections are idle nor closes one on request. The front holds at most
``max_connections``; when one more arrives, the rule of :mod:`tracegrade._util.fair_share`
(the one the OTLP/HTTP port uses) picks one to close: of the peer addresses holding an idle
connection, the one holding the most connections loses its idlest; else one with no call
open of a peer address holding more than its fair share. Only when none may be closed is
the new connection closed.

"Idle" for gRPC: nothing received from the client for ``idle_after_s`` and no call open.
Calls are followed from the HTTP/2 frame headers passing through (RFC 9113 section 4.1;
frames are not decoded): a client ``HEADERS`` frame on a new stream opens a call; a server
``HEADERS`` or ``DATA`` frame with ``END_STREAM`` (the trailers) or a ``RST_STREAM`` from
either side closes it. A call is open from its first frame to its answer's end, whether the
client is still sending or waiting: such a connection is never closed to make room.

A connection that sends nothing within ``handshake_timeout_s`` is closed (its link to the
server is opened at its first byte, so a silent one costs one descriptor); the server's
own handshake and idle timeouts apply through the front. The server sees every connection
as coming from the front: nothing in the gRPC path reads the client's address
(``context.peer()``) and fair share is decided here, by the real one. The receiver serves
plaintext gRPC (TLS, where wanted, is a proxy's in front of it), so the frame headers can be
read as they pass; were the server to do TLS itself, the bytes would still pass unchanged
but calls could no longer be followed.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Coroutine, Hashable
from typing import Any

from tracegrade._util.fair_share import HeldConnections

try:
    import resource
except ImportError:  # Windows: no descriptor limit to raise
    resource = None  # type: ignore[assignment]

PREFACE_BYTES = 24
"""The client connection preface ``PRI * HTTP/2.0...`` before the first frame (RFC 9113 3.4)."""
FRAME_HEADER_BYTES = 9
_DATA, _HEADERS, _RST_STREAM = 0x0, 0x1, 0x3
_END_STREAM = 0x1
ACCEPTS_PER_WAKE = 64
"""Connections accepted per turn of the event loop (the calls in flight get their turn)."""
ACCEPT_RETRY_S = 0.1
"""Pause before accepting again when the process is out of descriptors."""
_OUT_OF_RESOURCES = {errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM}
FLUSH_TIMEOUT_S = 1.0
"""How long a closed connection may take to flush what the server sent (then it is reset)."""
FDS_PER_CONNECTION = 3
"""Descriptors one connection costs the process: the client's, and both ends of its link."""


class FrameHeaders:
    """Reads the headers of the HTTP/2 frames in a byte stream passed in pieces, skipping
    their payloads; calls ``on_frame(type, flags, stream_id)`` once per frame."""

    def __init__(self, on_frame: Callable[[int, int, int], None], skip: int = 0):
        self.on_frame = on_frame
        self.skip = skip
        """Bytes still to pass over (a payload, or the preface)."""
        self.head = b""
        """A frame header's first bytes, when a piece ended inside it."""

    def feed(self, data: bytes) -> None:
        at, end = 0, len(data)
        while at < end:
            if self.skip:
                step = min(self.skip, end - at)
                self.skip -= step
                at += step
                continue
            wanted = FRAME_HEADER_BYTES - len(self.head)
            self.head += data[at : at + wanted]
            at += wanted
            if len(self.head) < FRAME_HEADER_BYTES:
                return
            head, self.head = self.head, b""
            self.skip = int.from_bytes(head[:3], "big")
            self.on_frame(head[3], head[4], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF)


class _Link(asyncio.Protocol):
    """The server side of one client connection: what the server sends goes to the client."""

    def __init__(self, client: _Client):
        self.client = client
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.client.from_server(data)

    def pause_writing(self) -> None:
        if self.client.transport is not None:
            self.client.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.client.transport is not None and not self.client.closed:
            self.client.transport.resume_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self.client.close()


class _Client(asyncio.Protocol):
    """One exporter's connection: its bytes go to the server through a :class:`_Link`, opened
    at its first byte. What :mod:`~tracegrade._util.fair_share` reads of it:
    ``peer_address``, ``last_received_at``, ``awaiting_answer``, ``mid_message``."""

    transport: asyncio.Transport | None = None
    mid_message = False  # a call is open from its first frame: awaiting_answer covers it

    def __init__(self, guard: GrpcGuard, peer_address: Hashable):
        self.guard = guard
        self.loop = guard.loop
        self.peer_address = peer_address
        self.last_received_at = self.loop.time()
        self.link: _Link | None = None
        self.waiting: list[bytes] = []
        """What the client sent while its link was being opened."""
        self.open_calls: set[int] = set()
        self.last_stream = 0
        self.from_client_frames = FrameHeaders(self._client_frame, skip=PREFACE_BYTES)
        self.from_server_frames = FrameHeaders(self._server_frame)
        self.silence: asyncio.TimerHandle | None = None
        self.closed = False

    @property
    def awaiting_answer(self) -> bool:
        return bool(self.open_calls)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        if self.closed:  # closed to make room before its transport was made
            transport.abort()
            return
        self.silence = self.loop.call_later(self.guard.handshake_timeout_s, self.close)

    def data_received(self, data: bytes) -> None:
        assert self.transport is not None
        if self.closed:
            return
        self.last_received_at = self.loop.time()
        self.guard.held.touch(self)
        self.from_client_frames.feed(data)
        if self.link is not None and self.link.transport is not None:
            self.link.transport.write(data)
            return
        self.waiting.append(data)
        if self.link is None:
            if self.silence is not None:
                self.silence.cancel()
            self.link = _Link(self)
            self.transport.pause_reading()  # one read at most waits for the link
            self.guard.connect(self.link)

    def linked(self) -> None:
        """The link to the server is open: what waited goes through."""
        assert self.link is not None and self.link.transport is not None
        if self.closed or self.transport is None:
            self.link.transport.close()
            return
        self.link.transport.writelines(self.waiting)
        self.waiting = []
        self.transport.resume_reading()

    def from_server(self, data: bytes) -> None:
        self.from_server_frames.feed(data)
        if not self.closed and self.transport is not None:
            self.transport.write(data)

    def _client_frame(self, kind: int, _flags: int, stream: int) -> None:
        if kind == _HEADERS and stream > self.last_stream:
            self.last_stream = stream
            self.open_calls.add(stream)
        elif kind == _RST_STREAM:
            self.open_calls.discard(stream)

    def _server_frame(self, kind: int, flags: int, stream: int) -> None:
        ends = kind in (_HEADERS, _DATA) and flags & _END_STREAM
        if ends or kind == _RST_STREAM:
            self.open_calls.discard(stream)

    def pause_writing(self) -> None:
        if self.link is not None and self.link.transport is not None:
            self.link.transport.pause_reading()  # the server waits for the client to read

    def resume_writing(self) -> None:
        if self.link is not None and self.link.transport is not None:
            self.link.transport.resume_reading()

    def close(self) -> None:
        """Close the connection and its link. What the server sent is flushed to the client
        first, for :data:`FLUSH_TIMEOUT_S` at most (a client that reads nothing would hold
        it open)."""
        if self.closed:
            return
        self.closed = True
        self.guard.held.remove(self)
        if self.silence is not None:
            self.silence.cancel()
        if self.transport is not None:
            self.transport.close()
            if self.transport.get_write_buffer_size():
                self.loop.call_later(FLUSH_TIMEOUT_S, self.transport.abort)
        if self.link is not None and self.link.transport is not None:
            self.link.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.close()


class GrpcGuard:
    """The front of the module docstring on ``loop``, listening on ``sock`` and passing
    connections to ``upstream`` (``("unix", path)`` or ``("tcp", (host, port))``)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        upstream: tuple[str, Any],
        *,
        max_connections: int,
        idle_after_s: float,
        handshake_timeout_s: float,
    ):
        self.loop = loop
        self.upstream = upstream
        self.max_connections = max_connections
        self.idle_after_s = idle_after_s
        self.handshake_timeout_s = handshake_timeout_s
        self.held: HeldConnections[_Client] = HeldConnections()
        self.listening: socket.socket | None = None
        self.tasks: set[asyncio.Task[None]] = set()
        self.closed = 0
        """Connections closed to make room for a new one."""
        self.refused = 0
        """New connections closed at the cap, none being closable."""

    def serve(self, sock: socket.socket) -> None:
        """Accept connections on the bound ``sock`` (made non-blocking, listening here)."""
        # asyncio's server listens with a backlog of 100 (connections past it wait for the
        # client's SYN to be sent again, 1 s and 3 s later) and accepts up to that many per
        # wake-up, making a transport and a task for each, refused ones too (20,000 idle
        # connections offered at once kept exports waiting 5 s): here a refused connection
        # is closed as it is accepted, at most ACCEPTS_PER_WAKE a turn of the loop.
        sock.setblocking(False)
        sock.listen(socket.SOMAXCONN)
        self.listening = sock
        self.loop.add_reader(sock.fileno(), self._accept)

    def _accept(self) -> None:
        assert self.listening is not None
        for _ in range(ACCEPTS_PER_WAKE):
            try:
                conn, address = self.listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_RESOURCES:  # descriptors: try again a little later
                    self.loop.remove_reader(self.listening.fileno())
                    self.loop.call_later(ACCEPT_RETRY_S, self._resume_accepting)
                return
            peer = address[0] if isinstance(address, tuple) else None
            if not self._room_for(peer):
                self.refused += 1
                conn.close()
                continue
            self._hold(conn, peer)

    def _resume_accepting(self) -> None:
        if self.listening is not None:
            self.loop.add_reader(self.listening.fileno(), self._accept)

    def _room_for(self, peer: Hashable) -> bool:
        """Whether a connection from ``peer`` may be held: under the cap, or once the fair
        share rule closed one."""
        if len(self.held) < self.max_connections:
            return True
        victim = self.held.to_close(
            peer, now=self.loop.time(), idle_after_s=self.idle_after_s, cap=self.max_connections
        )
        if victim is None:
            return False
        self.closed += 1
        victim.close()
        return True

    def _hold(self, conn: socket.socket, peer: Hashable) -> None:
        conn.setblocking(False)
        if conn.family in (socket.AF_INET, socket.AF_INET6):
            # asyncio sets it only on sockets made with proto IPPROTO_TCP: without it,
            # Nagle's algorithm held each answer ~40 ms for the client's delayed ACK
            with contextlib.suppress(OSError):  # already reset by the client
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        client = _Client(self, peer)
        self.held.add(client)

        async def start() -> None:
            try:
                await self.loop.connect_accepted_socket(lambda: client, conn)
            except OSError:
                client.close()
                conn.close()

        self._run(start())

    def connect(self, link: _Link) -> None:
        """Open ``link`` to the server; its client is closed when that fails."""

        async def connect() -> None:
            try:
                kind, address = self.upstream
                if kind == "unix":
                    await self.loop.create_unix_connection(lambda: link, address)
                else:
                    await self.loop.create_connection(lambda: link, *address)
            except OSError:
                link.client.close()
                return
            link.client.linked()

        self._run(connect())

    def _run(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task, referenced until done (the loop holds tasks weakly)."""
        task = self.loop.create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def stop_accepting(self) -> None:
        if self.listening is not None:
            self.loop.remove_reader(self.listening.fileno())
            self.listening.close()
            self.listening = None

    def close_all(self) -> None:
        for client in self.held:
            client.close()


class PrivateAddress:
    """Where the gRPC server listens behind the guard: a Unix socket in a fresh directory
    readable by this user only (so no other local user reaches the server past the guard),
    or 127.0.0.1 on a free port where Unix sockets are missing. :meth:`remove` deletes it."""

    def __init__(self) -> None:
        self.directory: str | None = None
        if hasattr(socket, "AF_UNIX"):
            self.directory = tempfile.mkdtemp(prefix="tracegrade-grpc-")  # mode 0700
            self.path = os.path.join(self.directory, "grpc.sock")

    def grpc_address(self) -> str:
        """What to bind the gRPC server to (``unix:...``, or ``127.0.0.1:0``)."""
        return f"unix:{self.path}" if self.directory else "127.0.0.1:0"

    def upstream(self, bound_port: int) -> tuple[str, Any]:
        """Where the guard connects, given the port gRPC bound."""
        return ("unix", self.path) if self.directory else ("tcp", ("127.0.0.1", bound_port))

    def remove(self) -> None:
        if self.directory:
            shutil.rmtree(self.directory, ignore_errors=True)


def descriptors_for(max_connections: int, reserve: int = 512) -> None:
    """Raise this process's soft limit on open descriptors (up to its hard limit) so that
    ``max_connections`` guarded connections fit (:data:`FDS_PER_CONNECTION` each) with
    ``reserve`` to spare; many systems start processes at 1,024."""
    if resource is None:
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max_connections * FDS_PER_CONNECTION + reserve
    if soft != resource.RLIM_INFINITY and soft < wanted:
        target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
