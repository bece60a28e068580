"""A request is not stored for a client that has stopped waiting: its own deadline (the gRPC
call's ``grpc-timeout``, :attr:`Admitted.answer_by`) bounds its wait in the receive queue, as
the receiver's queue deadline does. Past it, the request is refused unstored (retryable), so
an exporter's resend is the only copy, and what was acknowledged is stored."""

from __future__ import annotations

import time
from concurrent.futures import Future

from tests.collector.receiver.test_shutdown import SlowStore
from tests.support.receiver import request_spans, stored_spans
from tests.support.sdk import agent_turn, trace_request
from tracegrade.collector import ingest as ingest_module
from tracegrade.collector.admission import admit
from tracegrade.collector.ingest import ANSWER_MARGIN_S, Ingest, QueueFull


def test_requests_whose_clients_would_have_given_up_are_refused_unstored(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "MAX_BATCH_REQUESTS", 1)  # one 50 ms commit per request
    db = tmp_path / "slow.db"
    ingest = Ingest(lambda: SlowStore(db))
    ingest.start()
    requests = [trace_request(agent_turn) for _ in range(30)]
    answer_by = time.monotonic() + ANSWER_MARGIN_S + 0.4  # ~8 commits' worth of patience
    futures: list[tuple[object, Future[int]]] = []
    for request in requests:
        admitted = admit("traces", request.SerializeToString(), "protobuf")
        admitted.answer_by = answer_by
        futures.append((request, ingest.submit(admitted)))
    for _, future in futures:
        future.exception(timeout=30)
    ingest.stop()
    acknowledged = [r for r, f in futures if f.exception() is None]
    refused = [f.exception() for _, f in futures if f.exception() is not None]
    assert acknowledged and refused  # 30 x 50 ms of commits cannot fit in 0.4 s
    assert all(isinstance(e, QueueFull) for e in refused)
    keys = set().union(*(set(request_spans(r)) for r in acknowledged))
    stored = stored_spans(db)
    assert keys <= stored.keys() and len(stored) == len(keys)  # nothing refused was stored


def test_without_a_client_deadline_only_the_receivers_queue_deadline_applies(tmp_path):
    db = tmp_path / "quick.db"
    ingest = Ingest(lambda: SlowStore(db), queue_deadline_s=30.0)
    ingest.start()
    futures = [
        ingest.submit(admit("traces", trace_request(agent_turn).SerializeToString(), "protobuf"))
        for _ in range(5)
    ]
    assert [f.result(timeout=30) for f in futures] == [3] * 5
    ingest.stop()


def test_a_grpc_calls_deadline_reaches_the_service_as_answer_by() -> None:
    import asyncio

    from tests.collector.receiver.test_abandoned_calls import FakeService
    from tests.support.receiver import FakeContext
    from tracegrade.collector.grpc_front import _Calls
    from tracegrade.collector.service import Outcome

    class Deadlined(FakeContext):
        def time_remaining(self) -> float | None:
            return 3.0

    class Recording(FakeService):
        answer_by: float | None = None

        def start(self, signal, body, encoding, authorization, answer_by=None, *, inline=False):  # type: ignore[no-untyped-def]
            self.answer_by = answer_by
            return Outcome("ok")

    service = Recording()

    async def call() -> None:
        calls = _Calls(service, workers=1, max_in_flight=1)  # type: ignore[arg-type]
        before = time.monotonic()
        assert (await calls.outcome("traces", Deadlined())).kind == "ok"  # type: ignore[arg-type]
        assert service.answer_by is not None
        assert before + 3.0 <= service.answer_by <= time.monotonic() + 3.0
        calls.pool.shutdown(wait=True)

    asyncio.run(call())


def _slow_post(port: int, body: bytes, pieces: int, pause_s: float) -> bytes:
    """POST ``body`` to ``/v1/traces`` with its Content-Length, in ``pieces`` sent
    ``pause_s`` apart (a body that takes its time to arrive); the raw response."""
    import socket

    head = (
        f"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    step = -(-len(body) // pieces)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(head)
        for start in range(0, len(body), step):
            time.sleep(pause_s)
            sock.sendall(body[start : start + step])
        response = b""
        while chunk := sock.recv(65536):
            response += chunk
    return response


def test_an_http_request_whose_body_took_its_clients_patience_is_refused_unstored(
    tmp_path, monkeypatch
):
    """OTLP/HTTP has no deadline header: the receiver answers within ANSWER_WITHIN_S of a
    request's headers, the time its body took to arrive included (an SDK's 10 s export
    timeout runs from the send). The same body sent quickly is stored."""
    from tests.support.receiver import running
    from tracegrade.collector import http_front

    monkeypatch.setattr(http_front, "ANSWER_WITHIN_S", ANSWER_MARGIN_S + 1.5)
    slow, quick = trace_request(agent_turn), trace_request(agent_turn)
    with running(tmp_path / "store.db") as receiver:
        refused = _slow_post(receiver.http_port, slow.SerializeToString(), 4, 0.6)
        stored = _slow_post(receiver.http_port, quick.SerializeToString(), 2, 0.0)
    assert refused.startswith(b"HTTP/1.1 429 ") and b"retry-after: " in refused.lower()
    assert stored.startswith(b"HTTP/1.1 200 ")
    assert set(stored_spans(tmp_path / "store.db")) == set(request_spans(quick))
