"""Hostile clients against a running receiver, each bounded in time: slow-loris senders on both
protocols, idle connections, unauthenticated stalled gRPC calls, a body of millions of empty
entries, NUL characters on PostgreSQL. After each, an authorised client is still served
within a few seconds and nothing acknowledged is lost."""

from __future__ import annotations

import contextlib
import os
import resource
import socket
import threading
import time

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tests.support.receiver import (
    GRPC_METHODS,
    JSON,
    PROTOBUF,
    GrpcClient,
    WriteHook,
    abandon_grpc_streams,
    hand_span,
    http_export,
    http_response,
    request_spans,
    running,
    spans_request,
    stored_spans,
)
from tracegrade.collector import grpc_front, http_front
from tracegrade.collector.grpc_front import MAX_IN_FLIGHT, READ_TIMEOUT_S
from tracegrade.store.traces import Store

SERVED_WITHIN_S = 5.0
"""How fast an authorised client must be served while the attack goes on."""


def assert_served(
    receiver, stored: set, *, metadata=(), headers=None, protocols=("grpc", "http")
) -> None:
    """An authorised export on each protocol succeeds within SERVED_WITHIN_S; adds its spans
    to ``stored`` (what must be in the store at the end)."""
    for protocol in protocols:
        request = spans_request(hand_span(f"served-{protocol}", os.urandom(16), os.urandom(8)))
        started = time.monotonic()
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                client.export(
                    "traces",
                    request.SerializeToString(),
                    metadata=metadata,
                    timeout_s=SERVED_WITHIN_S,
                )
        else:
            response = http_export(receiver, "traces", request.SerializeToString(), headers=headers)
            assert response.status_code == 200, response.text
        assert time.monotonic() - started < SERVED_WITHIN_S
        stored |= set(request_spans(request))


# --- gRPC: stalled calls, unauthenticated callers, the concurrency limit -----------------------

TOKEN = "s3cret-token"
AUTHORISED = (("authorization", f"Bearer {TOKEN}"),)


class StalledCalls:
    """``count`` gRPC export calls that send their metadata and then never their message
    (until :meth:`release`): a slow-loris client."""

    def __init__(self, port: int, count: int, metadata=()):
        self.released = threading.Event()
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        stream = self.channel.stream_unary(
            GRPC_METHODS["traces"],
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        self.calls = [
            stream.future(self._never(), metadata=metadata, timeout=30) for _ in range(count)
        ]

    def _never(self):
        self.released.wait(30)
        yield from ()

    def codes(self, timeout_s: float) -> list[grpc.StatusCode]:
        """Each call's status code, waiting at most ``timeout_s`` in all."""
        deadline = time.monotonic() + timeout_s
        return [call.exception(max(0.0, deadline - time.monotonic())).code() for call in self.calls]

    def release(self) -> None:
        self.released.set()
        self.channel.close()


def retry_delay_s(error: grpc.RpcError) -> float:
    """The RetryInfo delay of a gRPC error (fails when it carries none)."""
    status = rpc_status.from_call(error)
    assert status is not None, "no grpc-status-details-bin"
    retry = error_details_pb2.RetryInfo()
    assert any(detail.Unpack(retry) for detail in status.details), "no RetryInfo"
    return retry.retry_delay.ToTimedelta().total_seconds()


def test_unauthenticated_stalled_grpc_calls_are_refused_before_their_message(tmp_path):
    stored: set = set()
    with running(tmp_path / "store.db", token=TOKEN) as receiver:
        stalled = StalledCalls(receiver.grpc_port, 80)
        try:
            assert_served(
                receiver,
                stored,
                metadata=AUTHORISED,
                headers={"authorization": f"Bearer {TOKEN}"},
            )
            assert set(stalled.codes(SERVED_WITHIN_S)) == {grpc.StatusCode.UNAUTHENTICATED}
        finally:
            stalled.release()
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_authorised_stalled_grpc_calls_are_refused_or_cut_off_with_retry_info(tmp_path):
    """80 authorised calls that never send their message: those past the memory for
    receiving are refused at once, the rest cut off after READ_TIMEOUT_S, all with RetryInfo.
    Meanwhile OTLP/HTTP is served at once, and a gRPC exporter that honours RetryInfo (as the
    Collector's does) within READ_TIMEOUT_S plus its delay."""
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        stalled = StalledCalls(receiver.grpc_port, 80)
        try:
            time.sleep(0.5)  # every stalled call has started and waits for its message
            started = time.monotonic()
            request = spans_request(hand_span("retrying", os.urandom(16), os.urandom(8)))
            with GrpcClient(receiver.grpc_port) as client:
                while True:
                    try:
                        client.export("traces", request.SerializeToString())
                        break
                    except grpc.RpcError as error:
                        assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
                        time.sleep(retry_delay_s(error))
                        assert_served(receiver, stored, protocols=("http",))
            assert time.monotonic() - started < READ_TIMEOUT_S + 2.5
            stored |= set(request_spans(request))
            assert set(stalled.codes(READ_TIMEOUT_S + 5)) == {grpc.StatusCode.RESOURCE_EXHAUSTED}
            assert all(retry_delay_s(call.exception()) == 1.0 for call in stalled.calls)
        finally:
            stalled.release()
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_grpc_calls_past_the_concurrency_limit_are_refused_with_retry_info(tmp_path):
    """With the writer held, MAX_IN_FLIGHT calls wait for their commit; the next ones are
    refused at once with RetryInfo (grpcio's own limit answered without it); once the writer
    goes on, the waiting calls are acknowledged and stored. (1 MiB requests at most: each
    read is charged for the largest message, so with 16 MiB only six calls read at once, and
    CI once saw one of the 64 sent together refused for room to read.)"""
    held = threading.Event()

    def hold(store):
        return WriteHook(store, lambda: held.wait(20))

    sent, waiting = [], []
    with (
        running(tmp_path / "store.db", wrap_store=hold, max_request_bytes=2**20) as receiver,
        GrpcClient(receiver.grpc_port) as client,
    ):
        call = client.channel.unary_unary(
            GRPC_METHODS["traces"],
            request_serializer=None,
            response_deserializer=ExportTraceServiceResponse.FromString,
        )
        for n in range(MAX_IN_FLIGHT):
            request = spans_request(hand_span(f"wait-{n}", os.urandom(16), os.urandom(8)))
            sent.append(request)
            waiting.append(call.future(request.SerializeToString(), timeout=30))
        deadline = time.monotonic() + 10
        while receiver._grpc.calls.in_flight < MAX_IN_FLIGHT:  # each waits for its commit
            assert time.monotonic() < deadline, receiver.stats
            time.sleep(0.01)
        refused = spans_request(hand_span("refused", os.urandom(16), os.urandom(8)))
        try:
            with pytest.raises(grpc.RpcError) as error:
                client.export("traces", refused.SerializeToString(), timeout_s=SERVED_WITHIN_S)
            assert error.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
            assert retry_delay_s(error.value) == 1.0
        finally:
            held.set()
        for future in waiting:
            future.result(timeout=20)
    assert set(stored_spans(tmp_path / "store.db")) == set(request_spans(*sent))


# --- OTLP/HTTP: idle connections, slow headers, slow bodies, the connection limit ------------


def raw_connection(receiver) -> socket.socket:
    return socket.create_connection(("127.0.0.1", receiver.http_port), timeout=10)


def closed_by_server(sock: socket.socket, timeout_s: float) -> bytes:
    """What the server sent before closing ``sock`` (fails if it stays open past ``timeout_s``)."""
    sock.settimeout(timeout_s)
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def post_head(receiver, length: int) -> bytes:
    return (
        f"POST /v1/traces HTTP/1.1\r\nHost: 127.0.0.1:{receiver.http_port}\r\n"
        f"Content-Type: application/x-protobuf\r\nContent-Length: {length}\r\n\r\n"
    ).encode()


@pytest.fixture
def short_timeouts(monkeypatch):
    monkeypatch.setattr(http_front, "HEADER_TIMEOUT_S", 1.0)
    monkeypatch.setattr(http_front, "BODY_IDLE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(http_front, "BODY_TIMEOUT_S", 2.0)


def test_idle_connections_do_not_shut_others_out_and_are_closed(tmp_path, short_timeouts):
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        idle = [raw_connection(receiver) for _ in range(100)]
        try:
            assert_served(receiver, stored)
            started = time.monotonic()
            for sock in idle:
                assert closed_by_server(sock, 5) == b""
            assert time.monotonic() - started < 4
        finally:
            for sock in idle:
                sock.close()
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_slow_loris_headers_are_cut_off(tmp_path, short_timeouts):
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        slow = [raw_connection(receiver) for _ in range(20)]
        head = post_head(receiver, 10)
        try:
            for n in range(3):  # a byte every 0.4 s: never a whole header in time
                for sock in slow:
                    sock.sendall(head[n : n + 1])
                time.sleep(0.4)
            assert_served(receiver, stored)
            for sock in slow:
                assert closed_by_server(sock, 5) == b""
        finally:
            for sock in slow:
                sock.close()
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_slow_bodies_get_408_and_hold_no_one_up(tmp_path, short_timeouts):
    stored: set = set()
    body = spans_request(hand_span("slow", os.urandom(16), os.urandom(8))).SerializeToString()
    with running(tmp_path / "store.db") as receiver:
        trickling = [raw_connection(receiver) for _ in range(20)]
        stalled = raw_connection(receiver)
        try:
            stalled.sendall(post_head(receiver, len(body)) + body[:5])
            for sock in trickling:
                sock.sendall(post_head(receiver, len(body)))
            for n in range(6):  # one byte every 0.5 s: never idle 1 s, never done in 2 s
                for sock in trickling:
                    with contextlib.suppress(OSError):  # answered 408 and closed by now
                        sock.sendall(body[n : n + 1])
                time.sleep(0.5)
                if n == 1:
                    assert_served(receiver, stored)
            for sock in [stalled, *trickling]:
                answer = closed_by_server(sock, 5)
                assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        finally:
            for sock in [stalled, *trickling]:
                sock.close()
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_connections_past_the_limit_get_503_with_retry_after(tmp_path, monkeypatch):
    monkeypatch.setattr(http_front, "MAX_CONNECTIONS", 30)
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        held = [raw_connection(receiver) for _ in range(30)]
        try:
            extra = raw_connection(receiver)
            answer = closed_by_server(extra, 5)
            assert answer.startswith(b"HTTP/1.1 503 ") and b"\r\nRetry-After: 1\r\n" in answer
        finally:
            for sock in held:
                sock.close()
        time.sleep(0.2)  # the server sees the held connections close
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored


def test_silent_feedback_bodies_neither_starve_exports_nor_stay_open(tmp_path, monkeypatch):
    """Issue 40: 1,030 silent ``POST /v1/feedback`` bodies made the receiver answer 503 to
    exports and each stayed open 40 s. Now one route's unfinished bodies hold at most half
    the connections, idle ones make room at the cap, and each is answered 408 after the body
    deadline."""
    monkeypatch.setattr(http_front, "MAX_CONNECTIONS", 30)
    monkeypatch.setattr(http_front, "BODY_IDLE_TIMEOUT_S", 0.5)
    stored: set = set()
    head = b"POST /v1/feedback HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    with running(tmp_path / "store.db") as receiver:
        silent = [raw_connection(receiver) for _ in range(30)]
        try:
            for sock in silent:
                sock.sendall(head + b"Content-Length: 200\r\n\r\n{")
            assert_served(receiver, stored, protocols=("http",))
            answers = [closed_by_server(sock, 5) for sock in silent]
        finally:
            for sock in silent:
                sock.close()
        assert all(answer.split(b" ")[1] in (b"408", b"503") for answer in answers), answers
        assert sum(answer.startswith(b"HTTP/1.1 408 ") for answer in answers) >= 10
    assert set(stored_spans(tmp_path / "store.db")) == stored


def _export_retrying(client: GrpcClient, name: str) -> set:
    """One authorised gRPC export, retried on UNAVAILABLE / RESOURCE_EXHAUSTED as the SDK
    exporters do, within SERVED_WITHIN_S in all; returns its spans."""
    request = spans_request(hand_span(name, os.urandom(16), os.urandom(8)))
    deadline = time.monotonic() + SERVED_WITHIN_S
    retryable = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)
    while True:
        remaining = deadline - time.monotonic()
        try:
            client.export(
                "traces", request.SerializeToString(), metadata=AUTHORISED, timeout_s=remaining
            )
            return set(request_spans(request))
        except grpc.RpcError as error:
            if error.code() not in retryable or deadline - time.monotonic() < 0.3:
                raise
            time.sleep(0.2)


def test_exports_succeed_while_connections_open_thousands_of_calls_and_drop_them(tmp_path):
    """Issue 40: 5,000 authorised calls opened on one connection in a second, then the
    connection dropped: the calls' handlers, cancelled together, left the lock of the
    read-room condition unreleased and later exports answered DEADLINE_EXCEEDED (or were
    cancelled). A connection now holds at most MAX_STREAMS_PER_CONNECTION calls and waiting
    calls hold no lock."""
    stored: set = set()
    done = threading.Event()
    sent: list[int] = []

    def attack(port: int) -> None:
        for _ in range(3):
            sent.append(abandon_grpc_streams(port, 3000, TOKEN))
            time.sleep(0.5)
        done.set()

    with running(tmp_path / "store.db", token=TOKEN) as receiver:
        attacker = threading.Thread(target=attack, args=(receiver.grpc_port,))
        with GrpcClient(receiver.grpc_port) as client:
            stored |= _export_retrying(client, "before")
            attacker.start()
            n = 0
            while not done.is_set() or n < 15:
                stored |= _export_retrying(client, f"during-{n}")
                n += 1
                time.sleep(0.2)
        attacker.join(10)
        with GrpcClient(receiver.grpc_port) as fresh:
            stored |= _export_retrying(fresh, "after")
    assert sum(sent) > 3000
    assert set(stored_spans(tmp_path / "store.db")) == stored


# --- amplification: millions of empty entries ---------------------------------------------------


def max_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_a_body_of_8_million_empty_entries_costs_next_to_nothing(tmp_path, protocol):
    """16,000,000 bytes of empty ResourceSpans around one real one (it took 315 s and 6.4 GB)."""
    real = spans_request(hand_span("among-empties", os.urandom(16), os.urandom(8)))
    empties = b"\x0a\x00" * 4_000_000
    body = empties + real.SerializeToString() + empties
    assert len(body) > 16_000_000
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        rss_before, cpu_before = max_rss_mib(), time.process_time()
        started = time.monotonic()
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                client.export("traces", body, timeout_s=SERVED_WITHIN_S)
        else:
            assert http_export(receiver, "traces", body).status_code == 200
        assert time.monotonic() - started < SERVED_WITHIN_S
        assert time.process_time() - cpu_before < 2.0
        assert max_rss_mib() - rss_before < 200  # the body is 16 MB; decoded it was 6.4 GB
        stored |= set(request_spans(real))
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored


# --- NUL characters (PostgreSQL refuses them in text columns) ----------------------------------


def nul_request() -> ExportTraceServiceRequest:
    """Two resources: one with NULs in run id, case id and schema URLs, one ordinary."""
    request = spans_request(hand_span("ordinary", os.urandom(16), os.urandom(8)))
    poisoned = spans_request(hand_span("poisoned", os.urandom(16), os.urandom(8)))
    group = poisoned.resource_spans[0]
    group.schema_url = "https://schemas\x00/1"
    group.scope_spans[0].schema_url = "scope\x00url"
    group.resource.attributes.add(key="tracegrade.run_id").value.string_value = "run\x00"
    span = group.scope_spans[0].spans[0]
    span.attributes.add(key="tracegrade.case_id").value.string_value = "case\x00one"
    request.resource_spans.append(group)
    return request


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_nul_characters_store_the_same_on_both_backends_and_are_never_retryable(
    store_location, protocol
):
    request = nul_request()
    with running(store_location) as receiver:
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                response = client.export("traces", request.SerializeToString())
        else:
            answer = http_export(receiver, "traces", request.SerializeToString())
            assert answer.status_code == 200, answer.text
            response = http_response(answer, "traces")
        assert response.partial_success.rejected_spans == 0
        stored = set(request_spans(request))
        assert_served(receiver, stored)
    assert set(stored_spans(store_location)) == stored
    with Store(store_location) as store:
        (state,) = store.trace_states(case_id="case\ufffdone")
        assert state.run_id == "run\ufffd"
        urls = {row[0] for row in store.db.execute("SELECT schema_url FROM resources")}
        assert "https://schemas\ufffd/1" in urls


def test_data_the_store_refuses_is_invalid_not_retryable(tmp_path):
    """A request whose data the store itself refuses (a DataError) is answered 400 /
    INVALID_ARGUMENT, which exporters do not retry, while other requests are still stored."""
    import sqlite3

    from tracegrade.errors import StoreError

    poisoned = spans_request(hand_span("poisoned", os.urandom(16), os.urandom(8)))

    def refuse(store):
        real = store.write_prepared

        def write_prepared(spans, logs=()):
            if "poisoned" in repr(spans.groups):
                try:
                    raise sqlite3.DataError("refused")
                except sqlite3.DataError as exc:
                    raise StoreError("cannot write") from exc
            return real(spans, logs)

        store.write_prepared = write_prepared
        return store

    with running(tmp_path / "store.db", wrap_store=refuse) as receiver:
        answer = http_export(receiver, "traces", poisoned.SerializeToString())
        assert answer.status_code == 400 and "Retry-After" not in answer.headers
        with GrpcClient(receiver.grpc_port) as client, pytest.raises(grpc.RpcError) as error:
            client.export("traces", poisoned.SerializeToString())
        assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        stored: set = set()
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored


def _field(number: int, content: bytes) -> bytes:
    length, size = bytearray(), len(content)
    while size > 0x7F:
        length.append(size & 0x7F | 0x80)
        size >>= 7
    return bytes([number << 3 | 2]) + bytes(length + bytes([size])) + content


TINY_ITEMS = {
    # one resource of 3 million scopes, each only a 1-character schema URL (decoded ~1.2 GB)
    "scopes": _field(1, b"".join([_field(2, _field(3, b"A"))] * 3_000_000)),
    # one scope of 3 million 5-byte spans, invalid (decoded and validated ~1 GB)
    "spans": _field(1, _field(2, b"".join([_field(2, _field(1, b"A"))] * 3_000_000))),
    # OTLP/JSON: 1.2 million spans of one name each (parsed ~490 MB)
    "json": b'{"resourceSpans":[{"scopeSpans":[{"spans":['
    + b",".join([b'{"name":"a"}'] * 1_200_000)
    + b"]}]}]}",
}


@pytest.mark.parametrize("kind", sorted(TINY_ITEMS))
def test_a_body_of_millions_of_tiny_entries_is_refused_before_it_is_decoded(tmp_path, kind):
    """15 MB of 5-byte entries (under the 16 MiB limit) decoded to 37-83x their size (OTLP/JSON
    objects to 31x): they are counted from the bytes and charged per entry, so the body is
    refused as too large (413) without being decoded, and everyone else is still served."""
    body = TINY_ITEMS[kind]
    assert 14_000_000 < len(body) < 16 * 2**20
    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        rss_before = max_rss_mib()
        response = http_export(
            receiver, "traces", body, content_type=JSON if kind == "json" else PROTOBUF
        )
        assert response.status_code == 413
        assert b"send smaller batches" in response.content
        assert max_rss_mib() - rss_before < 200
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored


# --- request headers: bounded before the token is checked ----------------------------------------


def test_oversized_headers_get_431_before_the_token_is_checked(tmp_path):
    with running(tmp_path / "store.db", token="t0ken") as receiver:
        sock = raw_connection(receiver)
        head = post_head(receiver, 10).removesuffix(b"\r\n")
        sock.sendall(head + b"X-Filler: " + b"a" * (http_front.MAX_HEADER_BYTES + 4096))
        answer = closed_by_server(sock, 5)
        sock.close()
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:100]
        assert_served(
            receiver,
            set(),
            metadata=[("authorization", "Bearer t0ken")],
            headers={"authorization": "Bearer t0ken"},
        )


def test_a_header_flood_is_cut_off_after_its_limit_and_others_are_served(tmp_path):
    """8 connections each trying to send 64 MiB of headers: each is closed once past the
    limit (the sender sees its connection reset long before), and exports go on."""
    filler = b"X-Filler: " + b"a" * 65_000 + b"\r\n"
    accepted: list[int] = []

    def flood(sock: socket.socket) -> None:
        sent = 0
        with contextlib.suppress(OSError):
            sock.sendall(b"POST /v1/traces HTTP/1.1\r\nHost: x\r\n")
            while sent < 64 * 2**20:
                sock.sendall(filler)
                sent += len(filler)
        accepted.append(sent)

    stored: set = set()
    with running(tmp_path / "store.db") as receiver:
        socks = [raw_connection(receiver) for _ in range(8)]
        threads = [threading.Thread(target=flood, args=(s,)) for s in socks]
        for thread in threads:
            thread.start()
        assert_served(receiver, stored)
        for thread in threads:
            thread.join(20)
        for sock in socks:
            sock.close()
    # what the kernel buffers on both sides, not what the server kept
    assert len(accepted) == 8 and max(accepted) < 16 * 2**20, accepted
    assert set(stored_spans(tmp_path / "store.db")) == stored


# --- gRPC: silent and idle connections ----------------------------------------------------------


HTTP2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_grpc_connections_are_capped_and_silent_or_idle_ones_closed(tmp_path, monkeypatch):
    monkeypatch.setattr(grpc_front, "MAX_CONNECTIONS", 40)
    monkeypatch.setattr(grpc_front, "HANDSHAKE_TIMEOUT_S", 1.0)
    monkeypatch.setattr(grpc_front, "IDLE_TIMEOUT_S", 2.0)
    stored: set = set()
    with running(tmp_path / "store.db") as receiver, GrpcClient(receiver.grpc_port) as client:
        request = spans_request(hand_span("before", os.urandom(16), os.urandom(8)))
        client.export("traces", request.SerializeToString())  # an exporter already connected
        stored |= set(request_spans(request))
        before = _open_fds()
        silent = [socket.create_connection(("127.0.0.1", receiver.grpc_port)) for _ in range(200)]
        idle = silent[:10]
        for sock in idle:  # the handshake done, then no call
            sock.sendall(HTTP2_PREFACE)
        time.sleep(0.3)
        # the receiver holds at most the cap: ours (200 client ends) + its own <= cap, plus
        # two for each that sent a byte (its link to the gRPC server behind the guard)
        assert _open_fds() - before <= 200 + 40 + 2 * len(idle) + 5
        request = spans_request(hand_span("during", os.urandom(16), os.urandom(8)))
        client.export("traces", request.SerializeToString(), timeout_s=SERVED_WITHIN_S)
        stored |= set(request_spans(request))
        started = time.monotonic()
        for sock in silent:
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                while sock.recv(65536):
                    pass
        assert time.monotonic() - started < 4.5  # handshake 1 s, idle 2 s
        for sock in silent:
            sock.close()
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored
