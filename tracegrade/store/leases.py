"""Keeping a follow worker's claims while it scores them: a thread that renews the leases of
the traces it holds every third of the lease, on a connection of its own, so a batch slower
than the lease (a slow judge, rate-limit back-off) is not taken over and scored twice. A
worker that dies stops renewing: its claims expire after one lease and another worker takes
them (:mod:`tracegrade.store.follow`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from types import TracebackType

from tracegrade.store import follow as shared
from tracegrade.store.database import Database
from tracegrade.store.traces import default_path

Renew = Callable[[Database, str, set[str], float], set[str]]
"""``(connection, worker, trace ids, lease_s) -> the ids still held``."""


class Leases:
    """Renews ``worker``'s leases on the traces it holds (:meth:`holding`) every
    ``lease_s / 3`` seconds until closed: its claims on the scoring queue
    (:func:`tracegrade.store.follow.renew`), or those ``renew`` renews (a backfill's). Use
    as a context manager.

    Raises:
        StoreError: the store cannot be opened.
    """

    def __init__(
        self, db: str | None, worker: str, lease_s: float, renew: Renew = shared.renew
    ) -> None:
        self.worker = worker
        self.lease_s = lease_s
        self._renew = renew
        self.renewals = 0
        """How many times leases were renewed (a test aid)."""
        self._db = Database(default_path(db))
        self._held: set[str] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tracegrade-leases", daemon=True)
        self._thread.start()

    def __enter__(self) -> Leases:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop renewing and close the connection."""
        self._stop.set()
        self._thread.join()
        self._db.close()

    @contextmanager
    def holding(self, trace_ids: Iterable[str]) -> Iterator[None]:
        """Renew these traces' leases while the block runs."""
        ids = set(trace_ids)
        with self._lock:
            self._held |= ids
        try:
            yield
        finally:
            with self._lock:
                self._held -= ids

    def _run(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            with self._lock:
                held = set(self._held)
            if not held:
                continue
            try:
                self._renew(self._db, self.worker, held, self.lease_s)
                self.renewals += 1
            except Exception:  # noqa: BLE001 (a store outage: the next round tries again)
                continue
