"""A gRPC call cancelled while its export is decoded or committed (its client gave up) must
give back its memory charge once the export finishes; otherwise the bound shrinks for good."""

from __future__ import annotations

import asyncio
import gc
import threading
import tracemalloc
from concurrent.futures import Future
from typing import Any

import grpc
import pytest

from tests.support.receiver import FakeContext
from tracegrade.collector import service as service_module
from tracegrade.collector.grpc_front import _Calls
from tracegrade.collector.memory import MemoryBudget
from tracegrade.collector.service import Pending


class FakeService:
    """``start`` charges a request's decoding cost and returns a Pending the test commits."""

    def __init__(self) -> None:
        self.memory = MemoryBudget(64 * 2**20)
        self.max_request_bytes = 2**20
        self.commit: Future[int] = Future()
        self.started = threading.Event()
        self.go = threading.Event()

    def start(
        self,
        signal: str,
        body: bytes,
        encoding: str,
        authorization: Any,
        answer_by: Any = None,
        *,
        inline: bool = False,
    ) -> Pending:
        cost = 5 * len(body)
        self.memory.reserve(cost)
        pending = Pending(admitted=None, future=self.commit)  # type: ignore[arg-type]
        pending.release = lambda: self.memory.release(cost)
        self.started.set()
        self.go.wait(5)
        return pending


@pytest.fixture(autouse=True)
def admitted_in_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """These calls are admitted in a worker thread (as a message over INLINE_ADMISSION_BYTES
    is), so that a call can be cancelled while its request is decoded."""
    monkeypatch.setattr(service_module, "INLINE_ADMISSION_BYTES", 0)


async def _cancel_while(service: FakeService, during_commit: bool) -> None:
    calls = _Calls(service, workers=2, max_in_flight=4)  # type: ignore[arg-type]
    task = asyncio.ensure_future(calls.export("traces", FakeContext()))  # type: ignore[arg-type]
    await asyncio.to_thread(service.started.wait, 5)
    if during_commit:
        service.go.set()
        await asyncio.sleep(0.2)  # the call now waits for its commit
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    service.go.set()
    await asyncio.sleep(0.2)
    assert service.memory.used_bytes == 5000  # still decoding/queued: still charged
    service.commit.set_result(1)
    await asyncio.sleep(0.1)
    calls.pool.shutdown(wait=True)


def test_a_call_cancelled_while_waiting_for_its_commit_gives_its_memory_back() -> None:
    service = FakeService()
    asyncio.run(_cancel_while(service, during_commit=True))
    assert service.memory.used_bytes == 0


def test_a_call_cancelled_while_its_request_is_decoded_gives_its_memory_back() -> None:
    service = FakeService()
    asyncio.run(_cancel_while(service, during_commit=False))
    assert service.memory.used_bytes == 0


class RefusingContext(FakeContext):
    """Each call delivers a fresh 1 MiB message; ``abort`` raises as grpc.aio's does."""

    async def read(self) -> bytes:
        return bytes(2**20)

    async def abort(self, *args: Any) -> None:
        raise grpc.aio.AbortError(*args)


async def _refuse_after_reading(calls: int) -> list[BaseException]:
    service = FakeService()
    refusing = _Calls(service, workers=1, max_in_flight=0)  # type: ignore[arg-type]
    kept: list[BaseException] = []
    for _ in range(calls):
        try:
            await refusing.export("traces", RefusingContext())  # type: ignore[arg-type]
        except grpc.aio.AbortError as exc:
            kept.append(exc)  # as grpc.aio may hold a handler's exception for a while
    refusing.pool.shutdown()
    return kept


def test_a_call_refused_after_its_message_was_read_keeps_none_of_it_alive() -> None:
    """The abort's traceback must not reach a frame holding the body: such bodies stayed
    alive until the cyclic collector ran (1.4 GB under overload in a bare grpc.aio server)."""
    gc.disable()
    tracemalloc.start()
    try:
        kept = asyncio.run(_refuse_after_reading(20))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert len(kept) == 20
    assert held < 4 * 2**20, f"{held / 2**20:.0f} MiB held by 20 refused calls"


async def _cancel_while_committing(calls: int) -> list[BaseException]:
    service = FakeService()
    service.go.set()
    exporting = _Calls(service, workers=1, max_in_flight=calls)  # type: ignore[arg-type]
    tasks = [
        asyncio.ensure_future(exporting.export("traces", RefusingContext()))  # type: ignore[arg-type]
        for _ in range(calls)
    ]
    await asyncio.sleep(0.5)  # every call now waits for its commit
    for task in tasks:
        task.cancel()
    kept = await asyncio.gather(*tasks, return_exceptions=True)
    exporting.pool.shutdown()
    return [exc for exc in kept if isinstance(exc, BaseException)]


def test_a_call_cancelled_while_committing_keeps_none_of_its_message_alive() -> None:
    gc.disable()
    tracemalloc.start()
    try:
        kept = asyncio.run(_cancel_while_committing(20))
        held, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        gc.enable()
    assert len(kept) == 20
    assert held < 4 * 2**20, f"{held / 2**20:.0f} MiB held by 20 cancelled calls"
