"""Waiting for an attempt's traces to settle in the store, and the one thread that reads it.

A trace has *settled* (DESIGN.md) when its root or agent span has arrived and no span arrived
for a quiet period. What that means per agent kind is a :class:`SettleRule`:

- in-process: the runner force-flushed its exporter, and the receiver acknowledges an export
  only after commit, so the case's trace (by trace id) is complete as soon as its root span
  is there: no quiet period.
- subprocess: the process has exited, and an SDK flushes at shutdown, exporting
  synchronously; the receiver acknowledges an export only after commit. So once every trace
  labelled with the attempt's run and case ids has its root or agent span, the traces are
  complete at once (``done_when_ended``). A trace without one (an agent honouring
  ``TRACEPARENT`` has no root of its own, or exports through a Collector) settles after a
  short quiet period instead (``--settle-quiet``, default 0.2 s): the fallback, not the norm.
- HTTP service: the service exports on its own schedule (the Python SDK batches for up to
  5 s), so the runner waits until at least one span besides its own root has arrived for the
  attempt's trace (or a trace labelled through baggage), then a quiet period
  (``--settle-quiet``, default 1 s).

Past ``timeout_s`` the runner goes on with what has arrived, or fails the case when nothing
has.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from tracegrade.store.traces import Store, TraceState

T = TypeVar("T")


@dataclass(frozen=True)
class SettleRule:
    """When an attempt's traces count as settled (see the module docstring). Times in s.

    ``by_trace_id``: the traces the runner knows (its root span's); ``by_labels``: traces
    whose ``tracegrade.run_id`` / ``tracegrade.case_id`` are the attempt's; ``min_spans``:
    spans needed over all of them; ``require_ended``: every trace has its root or agent span;
    ``done_when_ended``: the agent's exporters have finished (its process exited), so traces
    that all have their root or agent span are settled without the quiet period.
    """

    quiet_s: float = 0.2
    timeout_s: float = 10.0
    by_trace_id: bool = False
    by_labels: bool = False
    require_ended: bool = False
    min_spans: int = 1
    poll_s: float = 0.02
    done_when_ended: bool = False


class StoreWorker:
    """Every store read of a run (settle polls, loading, scoring) on one thread with one
    connection: SQLite connections are per thread, and the LLM judge scorer expects calls
    from one thread."""

    def __init__(self, db: str):
        self.db = db
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tracegrade-store")
        self._local = threading.local()
        self._stores: list[Store] = []

    @property
    def store(self) -> Store:
        """The worker thread's store (opened on first use; call from the worker only)."""
        store = getattr(self._local, "store", None)
        if store is None:
            store = self._local.store = Store(self.db)
            self._stores.append(store)
        return store

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run ``function(*args)`` on the worker thread."""
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    def close(self) -> None:
        """Close the store and stop the thread."""

        def close_stores() -> None:
            for store in self._stores:
                store.close()

        self._executor.submit(close_stores).result()
        self._executor.shutdown(wait=True)


@dataclass(frozen=True)
class Settled:
    """The traces of an attempt (oldest first), how long the wait took (ms), and a note when
    the rule was not met within the timeout."""

    trace_ids: tuple[str, ...]
    waited_ms: float
    note: str | None = None


def attempt_states(
    store: Store, rule: SettleRule, run_id: str, case_id: str, known: tuple[str, ...]
) -> list[TraceState]:
    """The stored state of every trace of the attempt (see :class:`SettleRule`)."""
    states: dict[str, TraceState] = {}
    if rule.by_trace_id and known:
        states.update((s.trace_id, s) for s in store.trace_states(trace_ids=known))
    if rule.by_labels:
        states.update((s.trace_id, s) for s in store.trace_states(run_id=run_id, case_id=case_id))
    return sorted(states.values(), key=lambda s: (s.first_received_at, s.trace_id))


def is_settled(states: list[TraceState], rule: SettleRule, now: float) -> bool:
    """True when ``states`` meet ``rule`` at ``now`` (Unix s)."""
    if not states or sum(s.span_count for s in states) < rule.min_spans:
        return False
    ended = all(s.ended for s in states)
    if rule.require_ended and not ended:
        return False
    if rule.done_when_ended and ended:
        return True
    return now - max(s.last_received_at for s in states) >= rule.quiet_s


async def wait_settled(
    worker: StoreWorker, rule: SettleRule, run_id: str, case_id: str, known: tuple[str, ...]
) -> Settled:
    """Poll the store until the attempt's traces settle or ``rule.timeout_s`` passes."""
    started = time.perf_counter()
    deadline = started + rule.timeout_s
    while True:
        states = await worker.call(
            lambda: attempt_states(worker.store, rule, run_id, case_id, known)
        )
        now = time.time()
        if is_settled(states, rule, now):
            return Settled(
                tuple(s.trace_id for s in states), (time.perf_counter() - started) * 1000
            )
        if time.perf_counter() >= deadline:
            waited = (time.perf_counter() - started) * 1000
            if not states:
                return Settled(
                    (),
                    waited,
                    f"no trace arrived within {rule.timeout_s:g} s after the agent finished",
                )
            spans = sum(s.span_count for s in states)
            return Settled(
                tuple(s.trace_id for s in states),
                waited,
                f"traces had not settled after {rule.timeout_s:g} s ({spans} span(s) so far)",
            )
        await asyncio.sleep(
            rule.poll_s if not states else min(rule.poll_s, max(rule.quiet_s / 4, 0.005))
        )
