"""``score --follow --workers N``: one follower, N scoring processes.

Each process is forked from the follower with its configuration and scorers, opens its own
store connection and works as a follower of its own: it claims a batch, renews the batch's
lease while scoring it and stores each result with its claim (:mod:`tracegrade.store.follow`),
so the processes never score a trace twice and share the queue as separate workers would. They
send each stored result (:class:`~tracegrade.scoring.CaseResult`, whether it updates an earlier
one) back over a queue; this process prints them, closes windows and alerts (once, for all),
and restarts a process that died (its claims expire after one lease and are scored again by
whichever process claims them). On stop, each process finishes the batch it holds and exits;
a process whose follower died (``kill -9``) notices and exits too.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import threading
import time
from typing import Any

from tracegrade.errors import StoreError
from tracegrade.pipeline.follow import POLL_S, Follower, OnResult, OnText, worker_name
from tracegrade.store.leases import Leases
from tracegrade.store.traces import Store

STOP_WAIT_S = 60.0
"""How long a stopping follower waits for its processes to finish their batch."""
EARLY_EXIT_S = 10.0
"""A scoring process that fails (an error, not a signal) sooner after its start stops the
follower instead of being restarted."""


def run_follower(
    follower: Follower,
    stop: threading.Event,
    on_result: OnResult,
    on_text: OnText,
    poll_s: float = POLL_S,
) -> dict[str, bool]:
    """Run ``follower`` until ``stop`` is set: in this process (:meth:`Follower.run`), or in
    ``follower.workers`` scoring processes (:func:`run_processes`). Returns whether the latest
    result of every trace scored passed (trace id -> passed)."""
    if follower.workers > 1:
        return run_processes(follower, stop, on_result, on_text, poll_s)
    return follower.run(stop, on_result, on_text, poll_s)


def run_processes(
    follower: Follower,
    stop: threading.Event,
    on_result: OnResult,
    on_text: OnText,
    poll_s: float,
) -> dict[str, bool]:
    """Run ``follower.workers`` scoring processes until ``stop`` is set (see the module
    docstring); returns whether the latest result of every trace scored passed. The results
    are exported (``--export-otlp``) from this process; closes the export."""
    on_result = follower.exported(on_result)
    context = multiprocessing.get_context("fork")
    results: Any = context.Queue()
    halt = context.Event()
    processes = [_start(context, follower, results, halt, poll_s) for _ in range(follower.workers)]
    try:
        with Store(follower.db) as store:
            while not stop.is_set():
                _relay(results, follower, on_result, poll_s)
                follower.tell_windows(store, on_text)
                processes = _restart_dead(
                    context, processes, follower, results, halt, poll_s, on_text
                )
            halt.set()
            for process in processes:
                process.join(STOP_WAIT_S)
            _relay(results, follower, on_result, 0.0)
            for text in follower.partial_window(store):
                on_text(text)
    finally:
        halt.set()
        for process in processes:
            if process.is_alive():  # did not finish its batch in time: its claims expire
                process.terminate()
        follower.close_export(on_text)
    return follower.passed


def _start(
    context: Any, follower: Follower, results: Any, halt: Any, poll_s: float
) -> multiprocessing.Process:
    process: multiprocessing.Process = context.Process(
        target=_work, args=(follower, results, halt, os.getpid(), poll_s), daemon=True
    )
    process.start()
    _started[process.pid or 0] = time.monotonic()
    return process


_started: dict[int, float] = {}
"""When each scoring process started (monotonic s), by pid."""


def _restart_dead(
    context: Any,
    processes: list[multiprocessing.Process],
    follower: Follower,
    results: Any,
    halt: Any,
    poll_s: float,
    on_text: OnText,
) -> list[multiprocessing.Process]:
    """The processes, those that died replaced by new ones (told to ``on_text``).

    Raises:
        StoreError: a process failed (an error, not a signal) within :data:`EARLY_EXIT_S` of
            its start: the store is unreachable, or every process would fail alike (its error
            is on stderr).
    """
    alive = []
    for process in processes:
        if process.is_alive():
            alive.append(process)
            continue
        lived_s = time.monotonic() - _started.pop(process.pid or 0, 0.0)
        if lived_s < EARLY_EXIT_S and (process.exitcode or 0) > 0:  # failed, not killed
            raise StoreError(
                f"scoring process {process.pid} ended (exit {process.exitcode}) {lived_s:.1f} s"
                " after it started: see its error above"
            )
        on_text(
            f"warning: scoring process {process.pid} ended (exit {process.exitcode}); "
            "started another (its claims are scored again after one lease)"
        )
        alive.append(_start(context, follower, results, halt, poll_s))
    return alive


def _relay(results: Any, follower: Follower, on_result: OnResult, wait_s: float) -> None:
    """Hand every result the processes sent to ``on_result``, waiting up to ``wait_s`` for
    the first."""
    try:
        item = results.get(timeout=wait_s) if wait_s > 0 else results.get_nowait()
    except queue.Empty:
        return
    while True:
        result, updated, version = item
        follower.note(result)
        if result.trace_id and version is not None:
            follower.versions[result.trace_id] = version
        on_result(result, updated)
        try:
            item = results.get_nowait()
        except queue.Empty:
            return


def _work(follower: Follower, results: Any, halt: Any, parent: int, poll_s: float) -> None:
    """A scoring process: a follower of its own until ``halt`` is set or its parent died."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the follower decides when to stop
    signal.signal(signal.SIGTERM, lambda *_: halt.set())
    follower.worker = worker_name()
    follower.passed, follower.versions, follower.session_passed = {}, {}, {}
    with (
        Store(follower.db) as store,
        Leases(follower.db, follower.worker, follower.lease_s) as leases,
    ):
        follower.leases = leases
        while not halt.is_set() and os.getppid() == parent:
            for result, updated in follower.poll(store):
                version = follower.versions.pop(result.trace_id or "", None)
                results.put((result, updated, version))
            if not follower.busy:
                halt.wait(poll_s)
    results.close()
    results.join_thread()
