"""Back-pressure: with the writer held back, a full receive queue answers HTTP 429 with
Retry-After and gRPC RESOURCE_EXHAUSTED with a google.rpc.RetryInfo; the SDK exporters back
off and succeed once the writer catches up; under a flood the queue never holds more than
its bound; a store that cannot commit gives 503 / UNAVAILABLE and the receiver recovers."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status
from opentelemetry.sdk.trace.export import SpanExportResult

from tests.support.receiver import (
    GrpcClient,
    WriteHook,
    http_export,
    http_status,
    request_spans,
    running,
    stored_spans,
)
from tests.support.sdk import agent_turn, record, trace_request
from tests.support.sdk_pipelines import PROTOCOLS, span_exporter
from tracegrade.errors import StoreError


class HeldWriter:
    """Holds the receiver's writer back: each store write first waits for :meth:`release`
    (or sleeps ``delay_s`` when given), then writes for real. Pass :meth:`wrap` to
    ``running(wrap_store=...)``; ``observed`` is the queue size at each write."""

    def __init__(self, delay_s: float | None = None):
        self.released = threading.Event()
        self.writing = threading.Event()
        self.delay_s = delay_s
        self.observed: list[int] = []
        self.receiver = None

    def wrap(self, store):
        return WriteHook(store, self._hold)

    def _hold(self) -> None:
        self.writing.set()
        if self.receiver is not None:
            self.observed.append(self.receiver.stats.queue_bytes)
        if self.delay_s is None:
            assert self.released.wait(15), "the test never released the writer"
        else:
            time.sleep(self.delay_s)

    def release(self) -> None:
        self.released.set()


def wait_until(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.005)


def fill_queue(receiver, pool: ThreadPoolExecutor, held: HeldWriter, requests: int) -> list:
    """Send ``requests`` requests in the background until they all sit in the queue (the
    first one held by the writer); returns their futures (HTTP responses) and requests."""
    sent = []
    for n in range(requests):
        request = trace_request(agent_turn)
        sent.append(
            (pool.submit(http_export, receiver, "traces", request.SerializeToString()), request)
        )
        wait_until(lambda n=n: receiver.stats.queue_depth == n + 1)
        if n == 0:
            assert held.writing.wait(5)
    return sent


@pytest.fixture
def size() -> int:
    """The wire size of one ``agent_turn`` request (they differ by a byte or two at most)."""
    return max(len(trace_request(agent_turn).SerializeToString()) for _ in range(5))


def test_full_queue_answers_429_with_retry_after_and_resource_exhausted_with_retry_info(
    tmp_path, size
):
    held = HeldWriter()
    bound = 2 * size + size // 2
    with (
        running(
            tmp_path / "bp.db", wrap_store=held.wrap, max_queue_bytes=bound, max_request_bytes=bound
        ) as receiver,
        ThreadPoolExecutor(4) as pool,
        GrpcClient(receiver.grpc_port) as client,
    ):
        queued = fill_queue(receiver, pool, held, 2)
        assert receiver.stats.queue_bytes <= bound
        rejected = trace_request(agent_turn)

        response = http_export(receiver, "traces", rejected.SerializeToString())
        assert response.status_code == 429 and response.headers["retry-after"] == "1"
        assert http_status(response).code == code_pb2.RESOURCE_EXHAUSTED

        with pytest.raises(grpc.RpcError) as caught:
            client.export("traces", rejected.SerializeToString())
        assert caught.value.code() is grpc.StatusCode.RESOURCE_EXHAUSTED
        status = rpc_status.from_call(caught.value)
        retry = error_details_pb2.RetryInfo()
        assert (
            status.details[0].Unpack(retry)
            and retry.retry_delay.ToTimedelta().total_seconds() == 1.0
        )
        assert receiver.stats.throttled_requests == 2 and receiver.stats.queue_bytes <= bound

        held.release()
        assert [future.result(10).status_code for future, _ in queued] == [200, 200]
        assert receiver.stats.queue_bytes == 0 and receiver.stats.queue_depth == 0
    stored = stored_spans(tmp_path / "bp.db")
    assert request_spans(*(r for _, r in queued)).keys() <= stored.keys()
    assert not request_spans(rejected).keys() & stored.keys()


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_sdk_exporter_retries_a_throttled_export_until_the_writer_catches_up(
    tmp_path, size, protocol
):
    held = HeldWriter()
    bound = 2 * size + size // 2
    spans = record(agent_turn)
    with (
        running(
            tmp_path / "retry.db",
            wrap_store=held.wrap,
            max_queue_bytes=bound,
            max_request_bytes=bound,
        ) as receiver,
        ThreadPoolExecutor(4) as pool,
    ):
        queued = fill_queue(receiver, pool, held, 2)
        exporter = span_exporter(protocol, receiver, timeout_s=8)
        try:
            export = pool.submit(exporter.export, spans)
            wait_until(lambda: receiver.stats.throttled_requests >= 1)
            assert not export.done()  # backing off, not failed
            held.release()
            assert export.result(10) is SpanExportResult.SUCCESS
        finally:
            exporter.shutdown()
        assert all(future.result(10).status_code == 200 for future, _ in queued)
    stored = stored_spans(tmp_path / "retry.db")
    assert {
        (format(s.context.trace_id, "032x"), format(s.context.span_id, "016x")) for s in spans
    } <= stored.keys()


def _send_with_retries(receiver, client: GrpcClient, n: int) -> tuple[set, int]:
    """Send one request over gRPC (even n) or HTTP (odd n), retrying throttled attempts
    quickly; returns the acknowledged span keys and the number of throttled attempts."""
    request = trace_request(agent_turn)
    body = request.SerializeToString()
    for throttled in range(400):
        if n % 2 == 0:
            try:
                client.export("traces", body)
                return set(request_spans(request)), throttled
            except grpc.RpcError as error:
                assert error.code() is grpc.StatusCode.RESOURCE_EXHAUSTED, error
        else:
            response = http_export(receiver, "traces", body)
            if response.status_code == 200:
                return set(request_spans(request)), throttled
            assert response.status_code == 429 and response.headers["retry-after"]
        time.sleep(0.01)
    raise AssertionError("never acknowledged")


def test_a_flood_against_a_slow_writer_keeps_the_queue_within_its_bound_and_loses_nothing(
    tmp_path, size
):
    held = HeldWriter(delay_s=0.02)
    bound = 3 * size
    peak = [0]
    with (
        running(
            tmp_path / "flood.db",
            wrap_store=held.wrap,
            max_queue_bytes=bound,
            max_request_bytes=size + 64,
        ) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        ThreadPoolExecutor(8) as pool,
    ):
        held.receiver = receiver
        stop = threading.Event()

        def sample() -> None:
            while not stop.is_set():
                peak[0] = max(peak[0], receiver.stats.queue_bytes)
                time.sleep(0.0005)

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            results = list(pool.map(lambda n: _send_with_retries(receiver, client, n), range(48)))
        finally:
            stop.set()
            sampler.join()
        stats = receiver.stats
        assert stats.throttled_requests == sum(t for _, t in results) > 0
        assert stats.queue_bytes == 0 and stats.stored_items == 48 * 3
    acknowledged = set().union(*(keys for keys, _ in results))
    assert max(peak[0], *held.observed) <= bound
    assert (
        stored_spans(tmp_path / "flood.db").keys() == acknowledged and len(acknowledged) == 48 * 3
    )


def test_a_store_that_cannot_commit_gives_503_and_unavailable_then_recovers(tmp_path):
    failures = [2]

    def fail_twice() -> None:
        if failures[0] > 0:
            failures[0] -= 1
            raise StoreError("disk full (simulated)")

    first, second, third = (trace_request(agent_turn) for _ in range(3))
    with (
        running(
            tmp_path / "fail.db", wrap_store=lambda store: WriteHook(store, fail_twice)
        ) as receiver,
        GrpcClient(receiver.grpc_port) as client,
    ):
        response = http_export(receiver, "traces", first.SerializeToString())
        assert response.status_code == 503 and response.headers["retry-after"] == "2"
        assert http_status(response).code == code_pb2.UNAVAILABLE
        with pytest.raises(grpc.RpcError) as caught:
            client.export("traces", second.SerializeToString())
        assert caught.value.code() is grpc.StatusCode.UNAVAILABLE
        retry = error_details_pb2.RetryInfo()
        assert (
            rpc_status.from_call(caught.value).details[0].Unpack(retry)
            and retry.retry_delay.seconds == 2
        )
        client.export("traces", third.SerializeToString())
        assert receiver.stats.failed_requests == 2
    stored = stored_spans(tmp_path / "fail.db")
    assert stored.keys() == request_spans(third).keys()
