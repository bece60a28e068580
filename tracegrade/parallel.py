"""Scoring in several processes (``score --workers N``), results in the input's order.

Scorers are pure functions of a trace and a case (DESIGN: no I/O inside a scorer), so the
work splits by item. The worker processes are forked: they inherit the traces, the scorers
and the configuration, so only item numbers go out and results come back, in chunks, in
order. Where ``fork`` is unavailable (Windows), or for one worker, the items are scored in
this process. Results are identical either way: a worker runs the same
code on the same objects, and per-process caches only remember pure results.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["default_workers", "ordered_map"]

_TASK: Callable[[int], Any] | None = None
"""The task of the running :func:`ordered_map`, inherited by its forked workers."""
_FORKING = threading.Lock()


def default_workers() -> int:
    """The CPUs this process may use (``--workers`` default of 0 means this many)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _run(bounds: tuple[int, int]) -> list[Any]:
    assert _TASK is not None, "ordered_map's task is set before the workers fork"
    return [_TASK(i) for i in range(*bounds)]


def _chunks(count: int, workers: int) -> list[tuple[int, int]]:
    size = max(1, min(64, count // (workers * 8)))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def ordered_map(
    task: Callable[[int], T],
    count: int,
    workers: int = 1,
    on_result: Callable[[T], None] | None = None,
) -> list[T]:
    """``[task(0), ..., task(count - 1)]``, computed by ``workers`` forked processes.

    ``on_result`` sees each result in order as it arrives (e.g. a progress bar). ``task``
    must not need this process's threads or open connections.

    Raises:
        ValueError: ``workers`` < 1.
    """
    global _TASK
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    results: list[T] = []
    if workers == 1 or count < 2 or "fork" not in multiprocessing.get_all_start_methods():
        for index in range(count):
            results.append(task(index))
            if on_result:
                on_result(results[-1])
        return results
    with _FORKING:  # one task at a time: the workers read it from this module
        _TASK = task
        try:
            with multiprocessing.get_context("fork").Pool(min(workers, count)) as pool:
                for batch in pool.imap(_run, _chunks(count, workers)):
                    for result in batch:
                        results.append(result)
                        if on_result:
                            on_result(result)
        finally:
            _TASK = None
    return results
