"""Scoring in several processes (``score --workers N``), results in the input's order.

Scorers are pure functions of a trace and a case (DESIGN: no I/O inside a scorer), so the
work splits by item. The worker processes are forked: they inherit the items, the task, the
scorers and the configuration, so nothing goes out and only results come back, in order.

- :func:`ordered_batches`: a stream of batches, each computed by processes forked for it,
  while this process reads the next batch (``score``: decoding overlaps scoring);
- :func:`ordered_map`: one list of items.

Where ``fork`` is unavailable (Windows), or for one worker, the items are computed in this
process. Results are identical either way: a worker runs the same code on the same objects,
and per-process caches only remember pure results.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import pickle
import signal
import traceback
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Generic, NoReturn, TypeVar

T = TypeVar("T")
X = TypeVar("X")

__all__ = ["default_workers", "ordered_batches", "ordered_map"]

_CAN_FORK = "fork" in multiprocessing.get_all_start_methods()


def default_workers() -> int:
    """The CPUs this process may use (``--workers`` default of 0 means this many)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _chunks(count: int, workers: int) -> list[tuple[int, int]]:
    size = max(1, min(64, count // (workers * 8)))
    return [(start, min(start + size, count)) for start in range(0, count, size)]


def ordered_batches(
    task: Callable[[X], T],
    batches: Iterable[Sequence[X]],
    workers: int = 1,
    ahead: int = 1,
) -> Iterator[list[T]]:
    """``[task(x) for x in batch]`` for each batch of ``batches``, in order.

    With ``workers`` > 1, each batch is computed by ``workers`` processes forked for it (they
    inherit the batch and ``task``: only results are pickled), while this process reads the
    next ``ahead`` batches (iterating ``batches``) and starts them: at most ``ahead + 1``
    batches are in flight, and this process holds none once its workers are forked (with
    ``ahead`` 0, a batch is read once the one before is collected). ``task``
    must not need this process's threads or open connections.

    Raises:
        ValueError: ``workers`` < 1.
        Exception: the first one ``task`` raised, in input order (the worker's traceback in
            its notes); :class:`RuntimeError` if a worker died without an answer.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if workers == 1 or not _CAN_FORK:
        for batch in batches:
            yield [task(x) for x in batch]
        return
    running: deque[_Forked[T]] = deque()
    try:
        for batch in batches:
            running.append(_Forked(task, batch, workers))
            del batch  # the workers have it
            if len(running) > ahead:
                yield running[0].collect()
                running.popleft()
        while running:
            yield running[0].collect()
            running.popleft()
    finally:
        for forked in running:
            forked.kill()


class _Forked(Generic[T]):
    """One batch, computed by processes forked for it: worker ``w`` of ``n`` computes chunks
    ``w, w + n, ...`` and sends their results (or the first exception) through a pipe."""

    def __init__(self, task: Callable[[X], T], items: Sequence[X], workers: int):
        self.chunks = _chunks(len(items), workers)
        count = min(workers, len(self.chunks))
        self.children: list[tuple[int, int]] = []  # (pid, read end of its pipe)
        try:
            for worker in range(count):
                self.children.append(_fork(task, items, self.chunks[worker::count]))
        except BaseException:  # e.g. no more processes: not a worker left behind
            self.kill()
            raise

    def collect(self) -> list[T]:
        """The batch's results in order, once every worker answered."""
        answers: list[_Answer] = []
        while self.children:
            pid, read = self.children.pop(0)
            answers.append(_receive(pid, read))  # raising, it leaves the others to kill()
        errors = [error for _, error in answers if error is not None]
        if errors:
            index, exc, where = min(errors, key=lambda error: error[0])
            exc.add_note(f"(raised in a worker process)\n{where}")
            raise exc
        count = len(answers)
        results: list[T] = []
        for number in range(len(self.chunks)):
            results.extend(answers[number % count][0][number // count])
        return results

    def kill(self) -> None:
        """Stop the workers (the batch is not wanted any more)."""
        for pid, read in self.children:
            os.close(read)
            with contextlib.suppress(ProcessLookupError):  # it had exited
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        self.children = []


def _fork(
    task: Callable[[X], Any], items: Sequence[X], chunks: list[tuple[int, int]]
) -> tuple[int, int]:
    """A worker computing ``chunks`` of ``items``: its pid and the read end of its pipe."""
    read, write = os.pipe()
    try:
        pid = os.fork()
    except BaseException:
        os.close(read)
        os.close(write)
        raise
    if pid == 0:  # pragma: no cover (the child's coverage is not collected)
        os.close(read)
        _child(task, items, chunks, write)
    os.close(write)
    return pid, read


_Answer = tuple[list[list[Any]], tuple[int, BaseException, str] | None]
"""A worker's results per chunk, and (item index, exception, traceback) if one raised."""


def _child(
    task: Callable[[X], Any], items: Sequence[X], chunks: list[tuple[int, int]], write: int
) -> NoReturn:  # pragma: no cover (runs in the forked child)
    gc.freeze()  # inherited objects are not traversed (nor their pages copied) by the collector
    try:
        parts: list[list[Any]] = []
        error, index = None, -1
        try:
            for start, stop in chunks:
                parts.append(part := [])
                for index in range(start, stop):
                    part.append(task(items[index]))
        except BaseException as exc:
            error = (index, exc, traceback.format_exc())
        with os.fdopen(write, "wb") as out:
            out.write(_dumps((parts, error)))
    finally:
        os._exit(0)  # no atexit handlers, no flushing of buffers inherited from the parent


def _dumps(answer: _Answer) -> bytes:
    try:
        return pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as failure:  # an unpicklable result or exception: send what it said
        if answer[1] is None:
            raise
        index, exc, where = answer[1]
        plain = RuntimeError(f"{type(exc).__name__}: {exc} ({failure})")
        return pickle.dumps(([], (index, plain, where)), protocol=pickle.HIGHEST_PROTOCOL)


def _receive(pid: int, read: int) -> _Answer:
    with os.fdopen(read, "rb") as answer:
        data = answer.read()
    _, status = os.waitpid(pid, 0)
    try:
        received: _Answer = pickle.loads(data)
    except Exception as exc:
        raise RuntimeError(f"a worker process exited without an answer (status {status})") from exc
    return received


def ordered_map(
    task: Callable[[int], T],
    count: int,
    workers: int = 1,
    on_result: Callable[[T], None] | None = None,
) -> list[T]:
    """``[task(0), ..., task(count - 1)]``, computed by ``workers`` forked processes.

    ``on_result`` sees each result in order (e.g. a progress bar). ``task`` must not need this
    process's threads or open connections.

    Raises:
        ValueError: ``workers`` < 1.
        Exception: as :func:`ordered_batches`.
    """
    if workers < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    results: list[T] = []
    for batch in ordered_batches(task, [range(count)], workers if count > 1 else 1):
        for result in batch:
            results.append(result)
            if on_result:
                on_result(result)
    return results
