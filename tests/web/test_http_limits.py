"""``tracegrade ui`` against hostile connections: oversized headers get 431 before any page
code (the login check included) runs; headers that never finish are cut off; the server then
still answers others. The limits are :mod:`tracegrade._util.http_guard`'s."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from tests.support.browser import ui_server
from tracegrade._util.http_guard import MAX_HEADER_BYTES, LimitedProtocol
from tracegrade.store import Store


def _closed_by_server(sock: socket.socket, timeout_s: float) -> bytes:
    sock.settimeout(timeout_s)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def test_the_ui_answers_431_to_oversized_headers_and_goes_on_serving(tmp_path: Path) -> None:
    Store(tmp_path / "s.db").close()  # `ui` only reads a store: it must exist
    with ui_server(["--db", str(tmp_path / "s.db"), "--token", "t0ken"]) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(
                b"GET /runs HTTP/1.1\r\nHost: 127.0.0.1\r\nCookie: "
                + b"a" * (MAX_HEADER_BYTES + 4096)
            )
            answer = _closed_by_server(sock, 5)
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
        with socket.create_connection((host, int(port)), timeout=10) as sock:
            sock.sendall(b"GET /login HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            assert _closed_by_server(sock, 5).startswith(b"HTTP/1.1 200 ")


class _Quick(LimitedProtocol):
    header_timeout_s = 0.5


class _Small(LimitedProtocol):
    """20 connections; bodies that pause 0.5 s time out; idle 0.3 s makes evictable."""

    max_connections = 20
    body_idle_timeout_s = 0.5
    body_timeout_s = 3.0
    evictable_after_s = 0.3


class _SmallUnshared(_Small):
    route_share = 1.0


async def _echo_length(request: Request) -> PlainTextResponse:
    return PlainTextResponse(str(len(await request.body())))


@contextmanager
def _served(protocol: type[LimitedProtocol] = _Quick) -> Iterator[int]:
    app = Starlette(
        routes=[
            Route("/", lambda request: PlainTextResponse("ok")),
            Route("/login", _echo_length, methods=["POST"]),
            Route("/other", _echo_length, methods=["POST"]),
        ]
    )
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, http=protocol, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(5)


@pytest.mark.parametrize("sent", [b"", b"GET / HTTP/1.1\r\nHost: x\r\n"])
def test_headers_that_never_finish_are_cut_off(sent: bytes) -> None:
    with _served() as port, socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(sent)
        started = time.monotonic()
        assert _closed_by_server(sock, 5) == b""
        assert time.monotonic() - started < 2


def _silent_body(port: int, path: str = "/login") -> socket.socket:
    """A connection that sent a POST's headers (a 100-byte body announced) and nothing else."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n".encode())
    return sock


def _post(port: int, path: str = "/login") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
            "Connection: close\r\n\r\nabc".encode()
        )
        return _closed_by_server(sock, 5)


def test_a_silent_body_is_answered_408_and_closed() -> None:
    with _served(_Small) as port, _silent_body(port) as sock:
        answer = _closed_by_server(sock, 5)
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]


def test_a_trickling_body_is_cut_off_at_the_whole_body_deadline() -> None:
    with _served(_Small) as port, _silent_body(port) as sock:
        started = time.monotonic()
        with contextlib.suppress(OSError):
            for _ in range(20):  # a byte every 0.2 s: never idle 0.5 s, never done in 3 s
                sock.sendall(b"a")
                time.sleep(0.2)
        answer = _closed_by_server(sock, 5)
    assert answer.startswith(b"HTTP/1.1 408 ") and time.monotonic() - started < 4.5


def test_silent_bodies_at_the_cap_make_room_for_a_request() -> None:
    """20 silent bodies hold every connection: the idlest is closed for a new one (uvicorn's
    limit, or the cap without eviction, answered 503 to everyone)."""
    with _served(_SmallUnshared) as port:
        held = []
        for n in range(20):
            held.append(_silent_body(port, "/login" if n % 2 else "/other"))
        time.sleep(0.35)  # evictable, not yet timed out
        try:
            assert _post(port).endswith(b"\r\n\r\n3")
        finally:
            for sock in held:
                sock.close()


def test_connections_too_fresh_to_evict_get_503_with_retry_after() -> None:
    with _served(_Small) as port:
        held = [socket.create_connection(("127.0.0.1", port), timeout=10) for _ in range(20)]
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as extra:
                answer = _closed_by_server(extra, 5)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1\r\n" in answer
        finally:
            for sock in held:
                sock.close()


def test_one_route_s_unfinished_bodies_hold_at_most_their_share() -> None:
    with _served(_Small) as port:
        held = [_silent_body(port) for _ in range(10)]
        try:
            time.sleep(0.1)
            answer = _post(port)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"Retry-After: 1" in answer
            assert _post(port, "/other").endswith(b"\r\n\r\n3")
        finally:
            for sock in held:
                sock.close()


class _Recorded(_Small):
    """:class:`_Small` whose connections are kept here (the test reads the server's ledger)."""

    opened: list[LimitedProtocol] = []  # noqa: RUF012 (one test's record)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.opened.append(self)


def _from(peer: str, port: int) -> socket.socket:
    sock = socket.socket()
    sock.bind((peer, 0))
    sock.connect(("127.0.0.1", port))
    return sock


def test_at_the_cap_the_ledger_closes_the_heaviest_peer_s_idlest_in_activity_order() -> None:
    """12 connections from 127.0.0.1, 8 from 127.0.0.2 fill the cap of 20; then 127.0.0.1's
    first connection sends a request: the server's ledger (each peer's connections in the
    order they last received a byte) puts it last, so a newcomer closes 127.0.0.1's second
    (its idlest now), not its first, nor 127.0.0.2's older ones."""
    _Recorded.opened.clear()
    with _served(_Recorded) as port:
        heavy = [_from("127.0.0.1", port) for _ in range(12)]
        light = [_from("127.0.0.2", port) for _ in range(8)]
        try:
            while len(_Recorded.opened) < 20:  # every one accepted (the server's thread)
                time.sleep(0.01)
            held = _Recorded.opened[0].held
            first, second = (sock.getsockname() for sock in heavy[:2])
            order = [connection.client for connection in held.by_peer["127.0.0.1"]]
            assert order[:2] == [first, second], order  # accepted in this order
            heavy[0].sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            heavy[0].settimeout(5)
            assert heavy[0].recv(65536).startswith(b"HTTP/1.1 200 ")
            order = [connection.client for connection in held.by_peer["127.0.0.1"]]
            assert order[0] == second and order[-1] == first, order
            assert len(held) == 20 and len(held.by_peer["127.0.0.2"]) == 8
            time.sleep(0.4)  # every one evictable (0.3 s)
            with _from("127.0.0.2", port) as newcomer:
                newcomer.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                assert _closed_by_server(newcomer, 5).startswith(b"HTTP/1.1 200 ")
            assert _closed_by_server(heavy[1], 5) == b""
            for sock in [heavy[0], *heavy[2:], *light]:
                sock.setblocking(False)
                with pytest.raises(BlockingIOError):
                    sock.recv(1)  # still open
        finally:
            for sock in heavy + light:
                sock.close()
