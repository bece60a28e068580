"""The receiver's write path: a bounded queue between the network threads and one writer.

Network threads (gRPC workers, the HTTP event loop) :meth:`Ingest.submit` admitted requests
and wait on the returned future; the writer thread takes whatever is queued (up to a batch
limit), stores it in **one transaction** (group commit) and only then resolves the futures.
So a request is acknowledged only after its spans are committed, and a crash of the
receiver (even ``kill -9``) loses nothing it acknowledged.

The queue is bounded by the wire size of the requests it holds (``max_queue_bytes``); a
request that does not fit raises :class:`QueueFull` at once, which the front ends answer
with gRPC ``RESOURCE_EXHAUSTED`` / HTTP 429 and a retry delay, so memory stays bounded and
OTLP exporters back off and retry.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass

from tracegrade.collector.admission import Admitted
from tracegrade.errors import StoreError
from tracegrade.store.rows import PreparedSpans
from tracegrade.store.traces import Store

DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024
MAX_BATCH_REQUESTS = 256
MAX_BATCH_ITEMS = 50_000
DEFAULT_DRAIN_S = 5.0
"""How long :meth:`Ingest.stop` keeps committing queued requests (s)."""
BATCH_COMMIT_SLACK_S = 5.0
"""Extra time allowed for the batch whose commit is under way at the drain deadline (s)."""
QUEUE_DEADLINE_S = 4.0
"""Longest a request may wait in the queue: well under the OpenTelemetry SDK's 10 s export
timeout, so a client never gives up on a request that is later stored. A request expected to
wait longer (queued bytes / measured write rate) is refused at once (429 / RESOURCE_EXHAUSTED
with a retry delay), and one that still waited longer is refused unstored when the writer
reaches it."""
ANSWER_MARGIN_S = 1.5
"""Time kept, before a client's own deadline (:attr:`Admitted.answer_by`), for the commit
and the answer to reach it: a batch is planned to commit in a quarter of the queue deadline
(1 s) and can take longer (with 0.5 s, 6 of ~70 gRPC clients gave up in one overload run)."""
RATE_SMOOTHING = 0.3
"""Weight of the newest batch in the writer's bytes/s estimate."""


class QueueFull(Exception):
    """The receive queue is full; retry after :attr:`retry_after_s` seconds."""

    def __init__(self, retry_after_s: float = 1.0):
        super().__init__(f"receive queue full; retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class Stopped(Exception):
    """The receiver is shutting down and takes no new requests."""


class Unstorable(StoreError):
    """The store refused this request's data itself (a data error, not an outage): resending
    it cannot succeed, so it is answered as invalid, not as retryable."""


def _data_error(exc: BaseException) -> bool:
    """True when ``exc`` was caused by the data (``DataError`` of sqlite3 or psycopg)."""
    cause = exc.__cause__
    return cause is not None and any(c.__name__ == "DataError" for c in type(cause).__mro__)


@dataclass
class Stats:
    """Counters since start (items are spans and log records)."""

    accepted_items: int = 0
    stored_items: int = 0
    """Spans and log records new to the store (each counted once, however often sent)."""
    rejected_items: int = 0
    throttled_requests: int = 0
    failed_requests: int = 0
    batches: int = 0
    queue_bytes: int = 0
    queue_depth: int = 0


class Ingest:
    """The bounded queue and its writer thread (see the module docstring).

    ``open_store`` is called once, in the writer thread, so the store's connection belongs
    to the thread that uses it.
    """

    def __init__(
        self,
        open_store: Callable[[], Store],
        *,
        max_queue_bytes: int = DEFAULT_QUEUE_BYTES,
        queue_deadline_s: float | None = None,
    ):
        self.open_store = open_store
        self.max_queue_bytes = max_queue_bytes
        self.queue_deadline_s = queue_deadline_s
        """Longest wait in the queue (the receiver uses :data:`QUEUE_DEADLINE_S`); None: any."""
        self.stats = Stats()
        self._queue: queue.SimpleQueue[tuple[Admitted, Future[int]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._accepting = False
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._deadline = float("inf")
        self._rate_bytes_per_s = float("inf")  # measured from the first commit on
        self._thread = threading.Thread(target=self._run, name="tracegrade-writer", daemon=True)

    # --- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Open the store in the writer thread and start taking requests.

        Raises:
            StoreError: the store cannot be opened.
        """
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            raise self._error
        self._accepting = True

    def stop(self, timeout_s: float = DEFAULT_DRAIN_S) -> None:
        """Take no new requests, write what is queued within ``timeout_s``, close the store.

        Shutdown time is bounded by design: the writer commits queued requests in bounded
        batches until the queue is empty or the deadline passes; requests still queued then
        are refused with a StoreError (their clients get UNAVAILABLE / 503 and resend, so
        nothing acknowledged is lost and nothing unacknowledged is claimed).
        """
        self._accepting = False
        self._deadline = time.monotonic() + timeout_s
        if self._thread.is_alive():
            self._queue.put(None)
            # one batch may be in its commit at the deadline: allow it to finish
            self._thread.join(timeout_s + BATCH_COMMIT_SLACK_S)

    # --- network side -----------------------------------------------------------------------------

    def submit(self, admitted: Admitted) -> Future[int]:
        """Queue an admitted request; the future resolves to the number of items stored once
        they are committed, or to :class:`~tracegrade.errors.StoreError`.

        Raises:
            QueueFull: the queue holds ``max_queue_bytes`` already.
            Stopped: the receiver is shutting down.
        """
        if not self._accepting:
            raise Stopped("receiver is shutting down")
        future: Future[int] = Future()
        with self._lock:
            if (
                self.stats.queue_bytes
                and self.stats.queue_bytes + admitted.size > self.max_queue_bytes
            ):
                self.stats.throttled_requests += 1
                raise QueueFull()
            wait_s = (self.stats.queue_bytes + admitted.size) / self._rate_bytes_per_s
            if self.stats.queue_bytes and wait_s > self._wait_limit(admitted, time.monotonic()):
                self.stats.throttled_requests += 1
                raise QueueFull(retry_after_s=min(max(1.0, round(wait_s / 2)), 10.0))
            admitted.queued_at = time.monotonic()
            self.stats.queue_bytes += admitted.size
            self.stats.queue_depth += 1
            self.stats.accepted_items += admitted.items
            self.stats.rejected_items += admitted.rejected
        self._queue.put((admitted, future))
        return future

    # --- writer side ------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            store = self.open_store()
        except BaseException as exc:  # noqa: BLE001 (handed to start())
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        with store:
            stopping = False
            while True:
                batch, saw_stop = self._take(block=not stopping)
                stopping = stopping or saw_stop
                if batch and time.monotonic() >= self._deadline:  # inf until stop()
                    self._refuse(batch)
                elif batch:
                    self._write(store, self._fresh(batch))
                if stopping and not batch:
                    return

    def _take(self, *, block: bool) -> tuple[list[tuple[Admitted, Future[int]]], bool]:
        """One batch: the next request (waiting for it when ``block``), then what else is
        queued, up to the batch limits; and whether the stop marker was met."""
        batch: list[tuple[Admitted, Future[int]]] = []
        items, saw_stop = 0, False
        size, max_size = 0, self._batch_bytes()
        while len(batch) < MAX_BATCH_REQUESTS and items < MAX_BATCH_ITEMS and size <= max_size:
            try:
                entry = self._queue.get() if block and not batch else self._queue.get_nowait()
            except queue.Empty:
                break
            if entry is None:
                saw_stop, block = True, False
                continue
            batch.append(entry)
            items += entry[0].items
            size += entry[0].size
        return batch, saw_stop

    def _batch_bytes(self) -> float:
        """With a queue deadline, a batch holds what the writer commits in a quarter of it at
        its measured rate (only one request until the rate is known), so no group commit
        keeps its requests waiting past the deadline."""
        if self.queue_deadline_s is None:
            return float("inf")
        if self._rate_bytes_per_s == float("inf"):
            return 0.0
        return self._rate_bytes_per_s * self.queue_deadline_s / 4

    def _refuse(self, batch: list[tuple[Admitted, Future[int]]]) -> None:
        """Past the shutdown deadline: release the requests unstored, for their clients to
        resend."""
        self._release(batch, stored=False)
        for _, future in batch:
            future.set_exception(
                StoreError("the receiver stopped before storing this request; resend it")
            )

    def _wait_limit(self, admitted: Admitted, now: float) -> float:
        """How much longer (s, from ``now``) ``admitted`` may wait in the queue: the receiver's
        ``queue_deadline_s`` from when it was queued (from ``now`` before it is), and its
        client's own deadline less :data:`ANSWER_MARGIN_S`; ``inf`` when neither is set."""
        queued_at = admitted.queued_at or now
        limit = float("inf")
        if self.queue_deadline_s is not None:
            limit = queued_at + self.queue_deadline_s - now
        if admitted.answer_by is not None:
            limit = min(limit, admitted.answer_by - ANSWER_MARGIN_S - now)
        return limit

    def _fresh(
        self, batch: list[tuple[Admitted, Future[int]]]
    ) -> list[tuple[Admitted, Future[int]]]:
        """The requests of ``batch`` still within their wait limit (:meth:`_wait_limit`); the
        others are refused unstored (their clients may have given up: they retry)."""
        now = time.monotonic()
        fresh: list[tuple[Admitted, Future[int]]] = []
        stale: list[tuple[Admitted, Future[int]]] = []
        for entry in batch:
            (fresh if self._wait_limit(entry[0], now) >= 0 else stale).append(entry)
        if not stale:
            return batch
        with self._lock:
            self.stats.throttled_requests += len(stale)
        self._release(stale, stored=False)
        for _, future in stale:
            future.set_exception(QueueFull(retry_after_s=1.0))
        return fresh

    def _write(self, store: Store, batch: list[tuple[Admitted, Future[int]]]) -> None:
        if not batch:
            return
        try:
            self._commit(store, batch)
        except StoreError as exc:
            if len(batch) == 1:
                self._fail(batch, permanent=_data_error(exc))
                return
            for entry in batch:  # isolate the request that broke the group commit
                self._write(store, [entry])

    def _commit(self, store: Store, batch: list[tuple[Admitted, Future[int]]]) -> None:
        spans = PreparedSpans()
        for admitted, _ in batch:
            if admitted.prepared is not None:
                spans.merge(admitted.prepared)
        started = time.monotonic()
        added = store.write_prepared(spans, [a.request for a, _ in batch if a.signal == "logs"])
        self._measure(sum(a.size for a, _ in batch), time.monotonic() - started)
        self._release(batch, stored=True, new_items=sum(added))
        for admitted, future in batch:
            future.set_result(admitted.items)

    def _measure(self, size: int, seconds: float) -> None:
        """Fold one commit into the write-rate estimate (bytes of requests per second)."""
        rate = size / max(seconds, 1e-6)
        previous = self._rate_bytes_per_s
        self._rate_bytes_per_s = (
            rate
            if previous == float("inf")
            else RATE_SMOOTHING * rate + (1 - RATE_SMOOTHING) * previous
        )

    def _fail(self, batch: list[tuple[Admitted, Future[int]]], *, permanent: bool = False) -> None:
        self._release(batch, stored=False)
        for _, future in batch:
            future.set_exception(
                Unstorable("the trace store refused this request's data")
                if permanent
                else StoreError("the trace store could not commit this request")
            )

    def _release(
        self, batch: list[tuple[Admitted, Future[int]]], *, stored: bool, new_items: int = 0
    ) -> None:
        """Take ``batch`` off the queue's counters; ``new_items``: the spans and log records
        the store did not hold before (a resend adds none). Its requests' decoded data and
        rows are dropped here: they are freed as their memory charge is given back, not once
        the writer's next batch replaces this one (an idle writer would hold it)."""
        for admitted, _ in batch:
            admitted.request = admitted.prepared = None
        with self._lock:
            self.stats.queue_bytes -= sum(a.size for a, _ in batch)
            self.stats.queue_depth -= len(batch)
            if stored:
                self.stats.stored_items += new_items
                self.stats.batches += 1
            else:
                self.stats.failed_requests += len(batch)


def wait_for(future: Future[int], timeout_s: float) -> int:
    """The future's result, waiting at most ``timeout_s``.

    Raises:
        StoreError: the write failed or did not finish in time.
    """
    try:
        return future.result(timeout=timeout_s)
    except TimeoutError as exc:
        raise StoreError(f"the trace store did not commit within {timeout_s:g} s") from exc
