"""Small protobuf requests are admitted on the front end's event loop thread, without an
admission slot; larger ones (and OTLP/JSON) in a worker thread, as before. Either way the
spans are stored and the answer is the same."""

from __future__ import annotations

import asyncio
import os
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from tests.support.receiver import (
    PROTOBUF,
    FakeContext,
    GrpcClient,
    hand_span,
    http_export,
    request_spans,
    running,
    spans_request,
    stored_spans,
)
from tracegrade.collector import service as service_module
from tracegrade.collector.grpc_front import _Calls
from tracegrade.collector.memory import MemoryBudget
from tracegrade.collector.service import (
    INLINE_ADMISSION_BYTES,
    ExportService,
    Outcome,
    admits_inline,
)


def test_which_requests_are_admitted_inline() -> None:
    assert admits_inline(b"x" * INLINE_ADMISSION_BYTES, "protobuf")
    assert not admits_inline(b"x" * (INLINE_ADMISSION_BYTES + 1), "protobuf")
    assert not admits_inline(b"{}", "json")  # slower to decode: always a worker


class Recording:
    """A service whose ``start`` notes the thread it ran in and whether it was inline."""

    def __init__(self) -> None:
        self.memory = MemoryBudget(256 * 2**20)
        self.max_request_bytes = 4 * 2**20
        self.calls: list[tuple[str, bool]] = []

    def start(self, *_args: Any, inline: bool = False) -> Outcome:
        self.calls.append((threading.current_thread().name, inline))
        return Outcome("ok")


def test_grpc_admits_a_small_message_on_its_loop_and_a_large_one_in_a_worker() -> None:
    service = Recording()

    async def call(size: int) -> str:
        calls = _Calls(service, workers=1, max_in_flight=4)  # type: ignore[arg-type]
        outcome = await calls.outcome("traces", FakeContext(size))  # type: ignore[arg-type]
        calls.pool.shutdown(wait=True)
        return outcome.kind

    async def both() -> list[str]:
        loop_thread = threading.current_thread().name
        kinds = [await call(1000), await call(INLINE_ADMISSION_BYTES + 1)]
        assert service.calls[0] == (loop_thread, True)
        assert service.calls[1][0].startswith("tracegrade-grpc") and not service.calls[1][1]
        return kinds

    assert asyncio.run(both()) == ["ok", "ok"]


def test_an_inline_admission_takes_no_slot_and_never_waits_for_one(monkeypatch) -> None:
    """With every admission slot taken by large requests, a worker's request is refused
    after ADMISSION_WAIT_S, while an event loop's small request is admitted at once."""
    monkeypatch.setattr(service_module, "ADMISSION_WAIT_S", 0.05)
    service = ExportService(ingest=None)  # type: ignore[arg-type]
    body = spans_request(hand_span("inline", os.urandom(16), os.urandom(8))).SerializeToString()
    stored: list[Any] = []
    queued = SimpleNamespace()  # stands for the Pending the ingest queue would give
    monkeypatch.setattr(service, "_store", lambda admitted: stored.append(admitted) or queued)
    for _ in range(service_module.ADMISSION_SLOTS):
        assert service._admitting.acquire(blocking=False)
    refused = service.start("traces", body, "protobuf", None)
    assert isinstance(refused, Outcome) and refused.kind == "throttled"
    assert service.start("traces", body, "protobuf", None, inline=True) is queued
    assert len(stored) == 1 and stored[0].items == 1


@pytest.mark.parametrize("spans", [1, 6000])
def test_small_and_large_requests_are_stored_over_both_protocols(tmp_path, spans) -> None:
    """1 span is admitted inline, 6,000 (over INLINE_ADMISSION_BYTES) in a worker thread."""
    requests = [
        spans_request(
            *(hand_span(f"s{n}-{k}", os.urandom(16), os.urandom(8)) for k in range(spans))
        )
        for n in range(2)
    ]
    bodies = [request.SerializeToString() for request in requests]
    assert admits_inline(bodies[0], "protobuf") == (spans == 1)
    with running(tmp_path / "store.db") as receiver, GrpcClient(receiver.grpc_port) as client:
        client.export("traces", bodies[0])
        assert http_export(receiver, "traces", bodies[1], content_type=PROTOBUF).status_code == 200
    assert set(stored_spans(tmp_path / "store.db")) == set(request_spans(*requests))
