"""The OTLP/gRPC port at its connection cap (issue 40 item 1): ~1,100 idle connections,
re-opened as they were closed, held grpc core's cap of 1,024 and well-behaved exporters got
UNAVAILABLE. Now the port's guard (:mod:`tracegrade.collector.grpc_guard`) closes the idlest
connection of the peer address holding the most, or one of a peer address over its fair
share, and never one waiting for its answer. Attackers connect from other loopback addresses
(127.0.0.2, 127.0.0.3: Linux routes all of 127/8 to loopback); the cap is made small."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Iterator

import pytest

from tests.support.receiver import (
    GRPC_PREFACE,
    grpc_call_headers,
    hand_span,
    request_spans,
    running,
    spans_request,
    stored_spans,
)
from tests.support.sdk_pipelines import agent_run, export_traces, span_exporter
from tracegrade.collector import grpc_front
from tracegrade.collector.grpc_guard import FrameHeaders

CAP = 20


@pytest.fixture(autouse=True)
def small_cap(monkeypatch):
    monkeypatch.setattr(grpc_front, "MAX_CONNECTIONS", CAP)


def connect(port: int, source: str, *, preface: bool = True) -> socket.socket:
    """A connection to the gRPC ``port`` from the loopback address ``source`` that sends the
    HTTP/2 preface (and an empty SETTINGS frame), then nothing."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))
    if preface:
        sock.sendall(GRPC_PREFACE)
    return sock


def is_closed(sock: socket.socket) -> bool:
    """Whether the server closed ``sock`` (what it sent before is read and dropped)."""
    sock.setblocking(False)
    try:
        while True:
            if sock.recv(65536) == b"":
                return True
    except BlockingIOError:
        return False
    except OSError:
        return True
    finally:
        sock.setblocking(True)


class Attacker:
    """``count`` connections from ``source`` holding the port, each re-opened (every 0.05 s)
    once the server closes it, until :meth:`stop`: the attack of issue 40."""

    def __init__(self, port: int, source: str, count: int):
        self.port, self.source = port, source
        self.held = [connect(port, source) for _ in range(count)]
        self.reopened = 0
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._reopen, daemon=True)
        self.thread.start()

    def _reopen(self) -> None:
        while not self.stopped.wait(0.05):
            for n, sock in enumerate(self.held):
                if is_closed(sock):
                    sock.close()
                    with contextlib.suppress(OSError):
                        self.held[n] = connect(self.port, self.source)
                        self.reopened += 1

    def stop(self) -> None:
        self.stopped.set()
        self.thread.join(5)
        for sock in self.held:
            sock.close()


@contextlib.contextmanager
def attacking(port: int, source: str, count: int) -> Iterator[Attacker]:
    attacker = Attacker(port, source, count)
    try:
        yield attacker
    finally:
        attacker.stop()


def wait_until_idle(receiver, count: int) -> None:
    """Wait until the gRPC guard holds ``count`` connections, each idle long enough to be
    closed (:data:`~tracegrade.collector.grpc_front.EVICTABLE_AFTER_S`), however late a loaded
    machine read their bytes."""
    guard = receiver._grpc.guard
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        cutoff = guard.loop.time() - grpc_front.EVICTABLE_AFTER_S - 0.05
        held = list(guard.held)
        if len(held) == count and all(c.last_received_at <= cutoff for c in held):
            return
        time.sleep(0.05)
    raise AssertionError(f"{len(held)} connections held, not {count} idle ones")


def sdk_export(receiver) -> set:
    """Spans exported by the SDK's OTLP/gRPC exporter (a fresh channel, from 127.0.0.1, 8 s
    timeout with its own retries); returns their keys."""
    sent = export_traces(span_exporter("grpc", receiver, timeout_s=8.0), agent_run)
    return {(f"{s.context.trace_id:032x}", f"{s.context.span_id:016x}") for s in sent}


def test_an_exporter_is_served_while_another_address_holds_every_connection(tmp_path):
    """127.0.0.2 holds all 20 connections, fresh (not idle), and re-opens what is closed: a
    new exporter from 127.0.0.1 still exports, one of 127.0.0.2's being over its share
    (grpc core's own cap closed the newcomer: the export failed after its retries)."""
    with (
        running(tmp_path / "store.db") as receiver,
        attacking(receiver.grpc_port, "127.0.0.2", CAP) as attacker,
    ):
        exported = sdk_export(receiver)
        deadline = time.monotonic() + 2
        while not attacker.reopened and time.monotonic() < deadline:
            time.sleep(0.05)
        assert attacker.reopened >= 1  # one of its connections made room for the exporter
    assert exported and exported <= set(stored_spans(tmp_path / "store.db"))


def test_idle_connections_of_the_heaviest_peer_are_closed_first(tmp_path):
    """8 idle connections of 127.0.0.3 (the idlest) and 12 of 127.0.0.2 fill the cap: a new
    exporter's connection closes 127.0.0.2's idlest one, none of 127.0.0.3's."""
    with running(tmp_path / "store.db") as receiver:
        few = [connect(receiver.grpc_port, "127.0.0.3") for _ in range(8)]
        time.sleep(0.1)
        many = [connect(receiver.grpc_port, "127.0.0.2") for _ in range(12)]
        try:
            wait_until_idle(receiver, CAP)
            exported = sdk_export(receiver)
            assert [is_closed(sock) for sock in few] == [False] * 8
            closed = [is_closed(sock) for sock in many]
            assert closed[0] and sum(closed) == 1, closed
        finally:
            for sock in few + many:
                sock.close()
    assert exported <= set(stored_spans(tmp_path / "store.db"))


def _answer_ends(sock: socket.socket, stream: int, timeout_s: float) -> bool:
    """Whether the server ends ``stream`` (trailers: HEADERS with END_STREAM) within
    ``timeout_s``; frames are read with the guard's own frame reader."""
    ended = threading.Event()

    def on_frame(kind: int, flags: int, stream_id: int) -> None:
        if kind == 0x1 and flags & 0x1 and stream_id == stream:
            ended.set()

    frames = FrameHeaders(on_frame)
    sock.settimeout(timeout_s)
    deadline = time.monotonic() + timeout_s
    while not ended.is_set() and time.monotonic() < deadline:
        data = sock.recv(65536)
        if not data:
            break
        frames.feed(data)
    return ended.is_set()


def test_a_connection_waiting_for_its_answer_is_never_closed_to_make_room(tmp_path):
    """127.0.0.2's idlest connection has a call open (its message not yet sent), its 19 others
    are idle: 20 newcomers from 127.0.0.1 close the 19 idle ones, never the calling one, which
    then sends its message and gets its answer."""
    request = spans_request(hand_span("waiting", os.urandom(16), os.urandom(8)))
    body = request.SerializeToString()
    with running(tmp_path / "store.db") as receiver:
        port = receiver.grpc_port
        calling = connect(port, "127.0.0.2")
        calling.sendall(grpc_call_headers(1))
        idle = [connect(port, "127.0.0.2") for _ in range(CAP - 1)]
        newcomers: list[socket.socket] = []
        try:
            time.sleep(0.2)  # the call's HEADERS read before idleness is waited for
            wait_until_idle(receiver, CAP)
            newcomers = [connect(port, "127.0.0.1") for _ in range(CAP)]
            time.sleep(0.3)
            assert all(is_closed(sock) for sock in idle)
            assert sum(not is_closed(sock) for sock in newcomers) >= CAP - 1
            assert not is_closed(calling)
            message = b"\x00" + len(body).to_bytes(4, "big") + body
            frame = len(message).to_bytes(3, "big") + b"\x00\x01" + (1).to_bytes(4, "big")
            calling.sendall(frame + message)
            assert _answer_ends(calling, 1, 5.0)
        finally:
            for sock in [calling, *idle, *newcomers]:
                sock.close()
    assert set(request_spans(request)) <= set(stored_spans(tmp_path / "store.db"))


def test_silent_connections_are_closed_after_the_handshake_timeout(tmp_path, monkeypatch):
    """A connection that never sends a byte holds no link to the server and is closed at
    :data:`~tracegrade.collector.grpc_front.HANDSHAKE_TIMEOUT_S`."""
    monkeypatch.setattr(grpc_front, "HANDSHAKE_TIMEOUT_S", 0.5)
    with (
        running(tmp_path / "store.db") as receiver,
        connect(receiver.grpc_port, "127.0.0.2", preface=False) as silent,
    ):
        silent.settimeout(5)
        started = time.monotonic()
        assert silent.recv(10) == b""
        assert time.monotonic() - started < 3


@pytest.mark.parametrize("piece", [1, 5, 9, 4096])
def test_frame_headers_are_read_whatever_the_pieces(piece):
    """The guard follows calls from frame headers however the bytes arrive: cut inside a
    header, inside a payload, or whole."""
    frames = (
        GRPC_PREFACE
        + grpc_call_headers(1)
        + (3).to_bytes(3, "big") + b"\x00\x01" + (1).to_bytes(4, "big") + b"abc"
        + (4).to_bytes(3, "big") + b"\x03\x00" + (3).to_bytes(4, "big") + b"\x00" * 4
    )  # fmt: skip
    seen: list[tuple[int, int, int]] = []
    reader = FrameHeaders(lambda *header: seen.append(header), skip=24)
    for at in range(0, len(frames), piece):
        reader.feed(frames[at : at + piece])
    assert seen == [(0x4, 0x0, 0), (0x1, 0x4, 1), (0x0, 0x1, 1), (0x3, 0x0, 3)]
