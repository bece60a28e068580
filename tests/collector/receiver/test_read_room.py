"""A burst of gRPC calls queues briefly for room to read its messages instead of being refused:
CI once saw one of 64 tiny calls, sent at once by one client, refused with RESOURCE_EXHAUSTED
because seven handlers had started reading before any read finished. A read that stalls past
READ_ROOM_WAIT_S still has the calls behind it refused with RetryInfo."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.support.receiver import FakeContext
from tracegrade.collector import grpc_front
from tracegrade.collector.grpc_front import _Calls
from tracegrade.collector.memory import MemoryBudget
from tracegrade.collector.service import Outcome

MESSAGE_BYTES = 2**20


class Service:
    """Room for two reads at once: reads take at most half of 8 MiB, each charged 2 MiB."""

    def __init__(self) -> None:
        self.memory = MemoryBudget(8 * 2**20)
        self.max_request_bytes = MESSAGE_BYTES
        self.exported = 0

    def start(self, *_args: Any, inline: bool = False) -> Outcome:
        self.exported += 1
        return Outcome("ok")


async def _burst(read_s: list[float]) -> tuple[list[Outcome], Service]:
    service = Service()
    calls = _Calls(service, workers=2, max_in_flight=64)  # type: ignore[arg-type]
    outcomes = await asyncio.gather(
        *(calls.outcome("traces", FakeContext(100, read_s=s)) for s in read_s)  # type: ignore[arg-type]
    )
    calls.pool.shutdown(wait=True)
    assert service.memory.used_bytes == 0
    return list(outcomes), service


def test_a_burst_of_calls_past_the_room_to_read_waits_its_turn(monkeypatch) -> None:
    """20 calls at once with room for two reads: each waits for a read to end, none refused
    (the wait limit raised: ten reads in a row can outlast it on a loaded machine)."""
    monkeypatch.setattr(grpc_front, "READ_ROOM_WAIT_S", 10.0)
    outcomes, service = asyncio.run(_burst([0.01] * 20))
    assert [outcome.kind for outcome in outcomes] == ["ok"] * 20
    assert service.exported == 20


def test_calls_behind_reads_stalled_past_the_wait_are_refused_with_retry(monkeypatch) -> None:
    monkeypatch.setattr(grpc_front, "READ_ROOM_WAIT_S", 0.2)
    outcomes, service = asyncio.run(_burst([1.0, 1.0, 0.0, 0.0]))
    assert [outcome.kind for outcome in outcomes] == ["ok", "ok", "throttled", "throttled"]
    assert all(outcome.retry_after_s == pytest.approx(1.0) for outcome in outcomes[2:])
    assert "no memory left to receive" in outcomes[2].message
    assert service.exported == 2


def test_a_call_waiting_for_room_is_charged_its_stream_window(monkeypatch) -> None:
    """grpc core holds up to a stream window of a waiting call's message: charged meanwhile,
    given back when it reads (so the bound covers a burst of waiting calls)."""
    monkeypatch.setattr(grpc_front, "READ_ROOM_WAIT_S", 10.0)

    async def burst() -> tuple[int, list[Outcome], Service]:
        service = Service()
        calls = _Calls(service, workers=2, max_in_flight=64)  # type: ignore[arg-type]
        tasks = [
            asyncio.ensure_future(calls.outcome("traces", FakeContext(100, read_s=s)))  # type: ignore[arg-type]
            for s in (0.3, 0.3, 0.0)
        ]
        await asyncio.sleep(0.1)  # two reading, one waiting
        waiting_charge = service.memory.used_bytes
        outcomes = await asyncio.gather(*tasks)
        calls.pool.shutdown(wait=True)
        return waiting_charge, list(outcomes), service

    charged, outcomes, service = asyncio.run(burst())
    reads = 2 * MESSAGE_BYTES * grpc_front.READ_COPIES
    assert charged == reads + grpc_front.STREAM_WINDOW_BYTES
    assert [outcome.kind for outcome in outcomes] == ["ok"] * 3
    assert service.memory.used_bytes == 0


def test_a_call_is_refused_at_once_when_not_even_its_stream_window_fits(monkeypatch) -> None:
    monkeypatch.setattr(grpc_front, "READ_ROOM_WAIT_S", 10.0)  # not waited for even so

    async def refused() -> Outcome:
        service = Service()
        assert service.memory.reserve(service.memory.limit_bytes)  # the bound is all taken
        calls = _Calls(service, workers=1, max_in_flight=4)  # type: ignore[arg-type]
        outcome = await asyncio.wait_for(
            calls.outcome("traces", FakeContext(100)),  # type: ignore[arg-type]
            1.0,
        )
        calls.pool.shutdown(wait=True)
        return outcome

    outcome = asyncio.run(refused())
    assert outcome.kind == "throttled" and "no memory left" in outcome.message


def test_calls_cancelled_en_masse_while_waiting_for_room_leave_nothing_held() -> None:
    """Issue 40 item 2: a connection dropped with thousands of calls open cancels them all at
    once, many as they give up waiting for room to read. Every call must end, every charge
    come back and a later call be served (before: a ``wait_for`` cancelled while it gave up
    waiting left the waiters' ``asyncio.Condition`` lock held, so cancelled calls and every
    later one waited on it forever)."""

    async def rounds() -> tuple[Service, _Calls, Outcome | None]:
        service = Service()
        calls = _Calls(service, workers=2, max_in_flight=64)  # type: ignore[arg-type]
        for round_ in range(80):
            tasks = [
                asyncio.ensure_future(calls.outcome("traces", FakeContext(100, read_s=0.02)))  # type: ignore[arg-type]
                for _ in range(200)
            ]
            # around READ_ROOM_WAIT_S, when waiters give up and take the lock back
            await asyncio.sleep(grpc_front.READ_ROOM_WAIT_S + 0.001 * (round_ % 20) - 0.01)
            for task in tasks:
                task.cancel()
            _, stuck = await asyncio.wait(tasks, timeout=10)
            if stuck:
                return service, calls, None
        later = calls.outcome("traces", FakeContext(100))  # type: ignore[arg-type]
        return service, calls, await asyncio.wait_for(later, 10)

    loop = asyncio.new_event_loop()
    try:
        service, calls, later = loop.run_until_complete(rounds())
    finally:
        loop.close()  # a stuck call is left behind, not awaited
    calls.pool.shutdown(wait=True)
    assert later is not None, "cancelled calls never ended"
    assert later.kind == "ok"
    assert (calls.reading, calls.waiting, service.memory.used_bytes) == (0, 0, 0)
