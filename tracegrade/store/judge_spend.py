"""What online judging spent, shared by every worker of a store (``judge_spend``): a row per
priced judge call, its USD and the ``service.name`` of the trace it judged, stamped with the
worker's clock (Unix s, as results and windows are). The judge budget sums it over the last
hour and day (:mod:`tracegrade.judge.budget`); windows over their own span of time."""

from __future__ import annotations

import time
from types import TracebackType

from tracegrade.store.database import Database
from tracegrade.store.traces import default_path


class SpendLedger:
    """The ``judge_spend`` table of the store at ``db``, on a connection of its own (opened
    on first use, in the process that uses it). Use as a context manager, or :meth:`close`.

    Raises:
        StoreError: the store cannot be opened.
    """

    def __init__(self, db: str | None, worker: str) -> None:
        self.location = db
        self.worker = worker
        self._db: Database | None = None

    @property
    def db(self) -> Database:
        """The connection (opened on first use)."""
        if self._db is None:
            self._db = Database(default_path(self.location))
        return self._db

    def spent(self, within_s: float) -> float:
        """USD recorded in the last ``within_s`` seconds, by every worker."""
        return spent_between(self.db, time.time() - within_s, time.time() + 1.0)

    def add(self, usd: float, service: str | None) -> None:
        """Record ``usd`` spent now on a trace of ``service``."""
        with self.db:
            self.db.execute(
                "INSERT INTO judge_spend (spent_at, usd, service, worker) VALUES (?, ?, ?, ?)",
                (time.time(), usd, service, self.worker),
            )

    def close(self) -> None:
        """Close the connection, if one was opened."""
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> SpendLedger:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def spent_between(db: Database, start_s: float, end_s: float) -> float:
    """USD recorded in [start_s, end_s) (Unix s)."""
    row = db.execute(
        "SELECT COALESCE(SUM(usd), 0) FROM judge_spend WHERE spent_at >= ? AND spent_at < ?",
        (start_s, end_s),
    ).fetchone()
    return float(row[0])


def spent_by_service(db: Database, start_s: float, end_s: float) -> dict[str, float]:
    """USD recorded in [start_s, end_s) per service (``unknown_service`` for none)."""
    rows = db.execute(
        "SELECT COALESCE(service, 'unknown_service'), SUM(usd) FROM judge_spend"
        " WHERE spent_at >= ? AND spent_at < ? GROUP BY 1",
        (start_s, end_s),
    )
    return {r[0]: float(r[1]) for r in rows}
