"""uvicorn's HTTP/1.1 protocol with the limits a server facing untrusted clients needs, for
``tracegrade collect``'s OTLP/HTTP port and ``tracegrade ui``: uvicorn (with httptools)
keeps no bound on a request's headers, no time limit on them, and its connection limit
answers 503 without Retry-After.

- at most :attr:`LimitedProtocol.max_connections` connections. When one more arrives, one
  is closed to make room by the rule of :mod:`tracegrade._util.fair_share`, read from the
  server's :class:`~tracegrade._util.fair_share.HeldConnections` (each peer address's
  connections in the order they last received a byte, as the OTLP/gRPC front keeps them, so
  a decision looks at each peer's quietest, not at every connection): the idlest
  connection (no byte received for :attr:`LimitedProtocol.evictable_after_s` or more, and not
  waiting for its answer) of the peer address holding the most of them; when none is that
  idle, one between requests of a peer address holding more than its fair share of the cap
  (when the newcomer's holds less). Idle and silent clients cannot shut out an active one.
  Only when none may be closed does the new one get 503 + Retry-After and close;
- a request's body must keep arriving: a pause over :attr:`LimitedProtocol.body_idle_timeout_s`
  or a body not complete within :attr:`LimitedProtocol.body_timeout_s` of its headers is
  answered 408 (or, once an answer has started, the connection closed), whatever the route
  (a silent body on ``POST /login`` or ``/v1/feedback`` held its connection 40 s);
- the requests of one route still receiving their bodies hold at most
  :attr:`LimitedProtocol.route_share` of the connections: past it 503 + Retry-After;
- a request's headers (request line included) must be complete within
  :attr:`LimitedProtocol.header_timeout_s` of the connection opening or of the previous
  response, else the connection is closed (idle and slow-loris clients);
- they may be at most :attr:`LimitedProtocol.max_header_bytes` long: past that the request
  is answered 431 and the connection closed, before any application code (authentication
  included) runs, so a client sending endless headers holds at most that plus one read.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from tracegrade._util.fair_share import HeldConnections

MAX_HEADER_BYTES = 64 * 1024
"""Bytes of one request's line and headers (nginx allows 4 x 8 KiB by default, Node 16 KiB;
browsers' cookies and OTLP exporters' headers stay far below)."""


class LimitedProtocol(HttpToolsProtocol):
    """See the module docstring; subclasses set the three limits."""

    max_connections = 1024
    header_timeout_s = 10.0
    max_header_bytes = MAX_HEADER_BYTES
    body_idle_timeout_s = 10.0
    body_timeout_s = 60.0
    evictable_after_s = 1.0
    """A connection idle this long may be closed to make room for a new one."""
    route_share = 0.5
    """Fraction of :attr:`max_connections` one route's unfinished bodies may hold."""

    _header_timer: asyncio.TimerHandle | None = None
    _body_timer: asyncio.TimerHandle | None = None
    _body_deadline = 0.0
    _last_received = 0.0
    """``loop.time()`` of the connection's opening or its last byte received."""
    _answering = False
    """A request was received whole and its answer is not complete: not idle, not evictable."""
    _receiving_path: str | None = None
    """The path of the request whose body is being received, else None."""
    _awaiting_headers = True
    """Between a message's start (or the connection's) and its headers' end."""
    _header_bytes = 0
    """Bytes received while awaiting headers (whole reads: at most one read more than sent)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._last_received = self.loop.time()
        if len(self.connections) > self.max_connections:
            idlest = self._idlest()
            if idlest is None:
                transport.write(_TOO_MANY_CONNECTIONS)
                transport.close()
                return
            self.connections.discard(idlest)  # uvicorn discards it again when it is lost
            self.held.remove(idlest)
            idlest.transport.close()
        self.held.add(self)
        self._arm_header_timer()

    @property
    def held(self) -> HeldConnections[LimitedProtocol]:
        """This server's guarded connections (one ledger per uvicorn server), each peer
        address's in the order they last received a byte."""
        held = _HELD.get(self.server_state)
        if held is None:
            held = _HELD[self.server_state] = HeldConnections()
        return held

    def _idlest(self) -> LimitedProtocol | None:
        """The connection to close for this new one (:mod:`~.fair_share`'s rule), or None."""
        return self.held.to_close(
            self.peer_address,
            now=self.loop.time(),
            idle_after_s=self.evictable_after_s,
            cap=self.max_connections,
        )

    # what the fair share rule reads (:class:`~.fair_share.Held`)
    @property
    def peer_address(self) -> Any:
        return self.client[0] if self.client else None

    @property
    def last_received_at(self) -> float:
        return self._last_received

    @property
    def awaiting_answer(self) -> bool:
        return self._answering

    @property
    def mid_message(self) -> bool:
        partial_headers = self._awaiting_headers and self._header_bytes > 0
        return partial_headers or self._receiving_path is not None

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # refused below: nothing more is parsed
        self._last_received = self.loop.time()
        self.held.touch(self)
        if self._awaiting_headers:
            self._header_bytes += len(data)
        super().data_received(data)
        too_large = self._awaiting_headers and self._header_bytes > self.max_header_bytes
        if too_large and not self.transport.is_closing():
            self.transport.write(_HEADERS_TOO_LARGE)
            self.transport.close()

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._awaiting_headers = True

    def _arm_header_timer(self) -> None:
        self._disarm_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timeout)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timeout(self) -> None:
        if not self.transport.is_closing():
            self.transport.close()

    def on_headers_complete(self) -> None:
        self._disarm_header_timer()
        self._awaiting_headers = False
        self._header_bytes = 0
        path = self.url.split(b"?", 1)[0].decode("latin-1")
        if self._route_crowded(path):
            self.transport.write(_ROUTE_BUSY)
            self.transport.close()
            return
        self._receiving_path = path
        self._body_deadline = self.loop.time() + self.body_timeout_s
        self._arm_body_timer()
        super().on_headers_complete()

    def _route_crowded(self, path: str) -> bool:
        """Whether requests to ``path`` receiving their bodies hold their share already."""
        share = max(1, int(self.max_connections * self.route_share))
        receiving = sum(1 for other in self.held if other._receiving_path == path)
        return receiving >= share

    def on_body(self, body: bytes) -> None:
        if self.transport.is_closing():
            return  # refused or timed out: the rest of the read is not parsed
        super().on_body(body)
        self._arm_body_timer()

    def on_message_complete(self) -> None:
        if self.transport.is_closing():
            return
        self._disarm_body_timer()
        self._receiving_path = None
        self._answering = True
        super().on_message_complete()

    def _arm_body_timer(self) -> None:
        self._disarm_body_timer()
        remaining = self._body_deadline - self.loop.time()
        delay = max(0.0, min(self.body_idle_timeout_s, remaining))
        self._body_timer = self.loop.call_later(delay, self._body_timeout)

    def _disarm_body_timer(self) -> None:
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def _body_timeout(self) -> None:
        self._body_timer = None
        if self.transport.is_closing():
            return
        if self.cycle is not None and not self.cycle.response_started:
            self.cycle.response_started = self.cycle.response_complete = True
            self.transport.write(_BODY_TIMEOUT)
        self.transport.close()

    def on_response_complete(self) -> None:
        self._answering = False
        self._receiving_path = None
        self._disarm_body_timer()
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def handle_websocket_upgrade(self) -> None:
        self.held.remove(self)  # the connection is the WebSocket protocol's from now on
        super().handle_websocket_upgrade()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        self._disarm_body_timer()
        self._receiving_path = None
        self.held.remove(self)
        super().connection_lost(exc)


_HELD: weakref.WeakKeyDictionary[ServerState, HeldConnections[LimitedProtocol]] = (
    weakref.WeakKeyDictionary()
)
"""Each uvicorn server's ledger (its :class:`~uvicorn.server.ServerState` is shared by its
connections)."""


_TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n"
)
_ROUTE_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 39\r\nConnection: close\r\n\r\ntoo many requests sending their bodies\n"
)
_BODY_TIMEOUT = (
    b"HTTP/1.1 408 Request Timeout\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 32\r\nConnection: close\r\n\r\nthe request body did not arrive\n"
)
_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 31\r\nConnection: close\r\n\r\nrequest headers are too large\r\n"
)
