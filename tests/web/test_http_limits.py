"""``tracegrade ui`` against hostile connections: oversized headers get 431 before any page
code (the login check included) runs; headers that never finish are cut off; the server then
still answers others. The limits are :mod:`tracegrade._util.http_guard`'s."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import uvicorn
from starlette.applications import Starlette
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


@contextmanager
def _served() -> Iterator[int]:
    app = Starlette(routes=[Route("/", lambda request: PlainTextResponse("ok"))])
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, http=_Quick, log_level="warning", lifespan="off"))
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
