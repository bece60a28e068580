"""uvicorn's HTTP/1.1 protocol with the limits a server facing untrusted clients needs, for
``tracegrade collect``'s OTLP/HTTP port and ``tracegrade ui``: uvicorn (with httptools)
keeps no bound on a request's headers, no time limit on them, and its connection limit
answers 503 without Retry-After.

- at most :attr:`LimitedProtocol.max_connections` connections; one more gets 503 +
  Retry-After and is closed;
- a request's headers (request line included) must be complete within
  :attr:`LimitedProtocol.header_timeout_s` of the connection opening or of the previous
  response, else the connection is closed (idle and slow-loris clients);
- they may be at most :attr:`LimitedProtocol.max_header_bytes` long: past that the request
  is answered 431 and the connection closed, before any application code (authentication
  included) runs, so a client sending endless headers holds at most that plus one read.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

MAX_HEADER_BYTES = 64 * 1024
"""Bytes of one request's line and headers (nginx allows 4 x 8 KiB by default, Node 16 KiB;
browsers' cookies and OTLP exporters' headers stay far below)."""


class LimitedProtocol(HttpToolsProtocol):
    """See the module docstring; subclasses set the three limits."""

    max_connections = 1024
    header_timeout_s = 10.0
    max_header_bytes = MAX_HEADER_BYTES

    _header_timer: asyncio.TimerHandle | None = None
    _awaiting_headers = True
    """Between a message's start (or the connection's) and its headers' end."""
    _header_bytes = 0
    """Bytes received while awaiting headers (whole reads: at most one read more than sent)."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.max_connections:
            transport.write(_TOO_MANY_CONNECTIONS)
            transport.close()
            return
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        if self.transport.is_closing():
            return  # refused below: nothing more is parsed
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
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)


_TOO_MANY_CONNECTIONS = (
    b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n"
)
_HEADERS_TOO_LARGE = (
    b"HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain\r\n"
    b"Content-Length: 31\r\nConnection: close\r\n\r\nrequest headers are too large\r\n"
)
