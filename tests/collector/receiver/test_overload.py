"""Overload: more traffic than the store can take. Every request is answered within the
queue deadline (well under the OpenTelemetry SDK's 10 s export timeout), refusals are 429 /
RESOURCE_EXHAUSTED with a retry delay, the memory bound holds, and everything acknowledged
is stored."""

from __future__ import annotations

import os
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest

from tests.support.receiver import (
    GrpcClient,
    WriteHook,
    hand_span,
    http_export,
    request_spans,
    running,
    spans_request,
    stored_spans,
)

WRITE_BYTES_PER_S = 400_000
"""The slow store's speed: far below what the clients send."""
CLIENTS = 16
DEADLINE_S = 1.0
"""The queue deadline here (the default, QUEUE_DEADLINE_S, would make the test slow)."""


class SlowStore:
    """Wraps the real store: each write first sleeps as long as its bytes take at
    WRITE_BYTES_PER_S (a store that cannot keep up), then writes."""

    def __init__(self, store):
        self._store = store

    def __getattr__(self, name):
        return getattr(self._store, name)

    def write_prepared(self, spans, logs=()):
        size = sum(
            len(chunk[3]) for _, _, scopes in spans.groups for *_, cs in scopes for chunk in cs
        )
        time.sleep(size / WRITE_BYTES_PER_S)
        return self._store.write_prepared(spans, logs)

    def __enter__(self):
        self._store.__enter__()
        return self

    def __exit__(self, *exc):
        return self._store.__exit__(*exc)


def big_request(name: str, spans: int = 100):
    """About 100 KB: ``spans`` spans of one trace with a 1 KB attribute each."""
    trace_id = os.urandom(16)
    request = spans_request(*(hand_span(name, trace_id, os.urandom(8)) for _ in range(spans)))
    for span in request.resource_spans[0].scope_spans[0].spans:
        span.attributes.add(key="payload").value.string_value = "x" * 1000
    return request


def test_overload_answers_every_request_before_the_sdk_would_give_up(tmp_path):
    answers: list[tuple[float, int]] = []
    acknowledged: list = []
    lock = threading.Lock()

    def client(n: int) -> None:
        for k in range(1):
            request = big_request(f"c{n}-{k}")
            for _attempt in range(20):
                started = time.monotonic()
                response = http_export(receiver, "traces", request.SerializeToString())
                with lock:
                    answers.append((time.monotonic() - started, response.status_code))
                if response.status_code == 200:
                    with lock:
                        acknowledged.append(request)
                    break
                assert response.status_code == 429 and "retry-after" in response.headers
                time.sleep(0.2)  # an exporter backs off (shortened here)

    with (
        running(
            tmp_path / "store.db", wrap_store=SlowStore, queue_deadline_s=DEADLINE_S
        ) as receiver,
        ThreadPoolExecutor(CLIENTS) as pool,
    ):
        list(pool.map(client, range(CLIENTS)))
    slowest = max(seconds for seconds, _ in answers)
    # Without the deadline the last of the 1.6 MB queued waits 4 s for the 400 KB/s store.
    assert slowest < DEADLINE_S + 2.0, slowest
    assert any(code == 429 for _, code in answers)
    assert set(stored_spans(tmp_path / "store.db")) == set(request_spans(*acknowledged))


@pytest.mark.parametrize("held_over", ["http", "grpc"])
def test_the_memory_bound_holds_and_refusals_carry_a_retry_delay(tmp_path, held_over):
    """One ~0.5 MB request held in the writer (sent over ``held_over``) keeps its decoding
    charged (1.6 MiB) until it is answered, its body's charge going back once it is admitted;
    with a 2.5 MiB bound no other fits, on either protocol, meanwhile."""
    from tracegrade.collector.compact import count_items
    from tracegrade.collector.memory import decode_cost

    limit = 5 * 2**19
    held = threading.Event()
    first, *others = [big_request(f"m{n}", spans=500) for n in range(8)]
    with (
        running(
            tmp_path / "store.db",
            wrap_store=lambda store: WriteHook(store, lambda: held.wait(30)),
            max_request_bytes=2**20,
            max_memory_bytes=limit,
        ) as receiver,
        ThreadPoolExecutor(8) as pool,
        GrpcClient(receiver.grpc_port) as client,
    ):
        try:
            body = first.SerializeToString()
            if held_over == "http":
                waiting = pool.submit(http_export, receiver, "traces", body)
            else:
                waiting = pool.submit(client.export, "traces", body, timeout_s=30)
            deadline = time.monotonic() + 10
            decoding = decode_cost(body, "protobuf", count_items(body, 10**9))
            while receiver.service.memory.used_bytes != decoding:  # queued, body given back
                assert time.monotonic() < deadline, "the first request never reached the queue"
                time.sleep(0.01)
            assert receiver.stats.queue_depth == 1
            refused = list(
                pool.map(lambda r: http_export(receiver, "traces", r.SerializeToString()), others)
            )
            # refused on its declared size, before a byte of its body is read
            with socket.create_connection(("127.0.0.1", receiver.http_port), timeout=5) as sock:
                sock.sendall(
                    b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: "
                    b"application/x-protobuf\r\nContent-Length: 1048000\r\n\r\n"
                )
                assert sock.recv(100).startswith(b"HTTP/1.1 429 ")
            with pytest.raises(grpc.RpcError) as error:
                client.export("traces", others[0].SerializeToString())
        finally:
            held.set()
        assert error.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        answer = waiting.result(20)  # the gRPC call raises unless it succeeded
        assert held_over == "grpc" or answer.status_code == 200
        assert receiver.service.memory.peak_bytes <= limit
        assert receiver.service.memory.used_bytes == 0
    assert all(r.status_code == 429 and r.headers["retry-after"] == "1" for r in refused)
    assert set(stored_spans(tmp_path / "store.db")) == set(request_spans(first))


def test_collect_guards_its_real_resident_memory_and_reports_refusals(tmp_path):
    """``tracegrade collect`` sets ``guard_resident``: the receiver then holds its resident set
    within its footprint at start plus the bound (less the spike share), requests reserve
    the bound less the spike share and the store's working memory, and ``/healthz`` counts
    refusals made for real memory. An embedding process is not guarded by default."""
    from tracegrade.collector.memory import SPIKE_SHARE, resident_bytes, store_working_bytes

    limit = 256 * 2**20
    with running(tmp_path / "plain.db", max_memory_bytes=limit) as receiver:
        assert receiver.service.memory.guard is None
        assert receiver.service.memory.limit_bytes == limit
    with running(tmp_path / "guarded.db", guard_resident=True, max_memory_bytes=limit) as receiver:
        guard, now = receiver.service.memory.guard, resident_bytes()
        assert guard is not None and now is not None
        assert abs(guard.limit_bytes - (now + limit * (1 - SPIKE_SHARE))) < 32 * 2**20
        working = store_working_bytes(receiver.config.max_request_bytes)
        assert receiver.service.memory.limit_bytes == int(limit * (1 - SPIKE_SHARE)) - working
        guard.limit_bytes = 0  # as if the process had grown past its bound
        first = http_export(receiver, "traces", big_request("first").SerializeToString())
        assert first.status_code == 200  # nothing in flight: admitted whatever the resident set
        health = receiver.health()
    assert health["memory_resident_refusals"] == 0 and stored_spans(tmp_path / "guarded.db")
