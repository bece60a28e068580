"""The outbox: which traces await scoring, recorded by the writer (the receiver, ``import``)
in the transaction that stores their spans, so a trace is queued exactly when its spans are
visible, whatever the clocks, the commit's delay or the size of the group commit.

``score_queue`` holds a row per trace that changed since a worker last completed it:
``version`` (``traces.version``: how many writes brought it new spans), ``ended`` (its root or
agent span is stored), ``changed_at`` (the database's clock at the write, Unix s:
:attr:`~tracegrade.store.database.Database.clock`) and the claim of the worker scoring it
(``claimed_by``, ``lease_until``; :mod:`tracegrade.store.follow`). A worker deletes the row in
the transaction that stores the result; a trace that gets new spans later is queued again
with its next version. Log records of a queued trace restart its quiet period (GenAI content
often follows the spans by a batch interval) but do not change its version.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from tracegrade.store.database import Database

_BATCH = 500


def enqueue(db: Database, rows: Sequence[tuple[str, int, int]]) -> None:
    """Queue (trace id, version, ended) rows; call inside the write's transaction. A row
    already queued takes the new version (its claim, if any, stays: the claimant's result is
    for the older version, and the newer one is claimed after it)."""
    if not rows:
        return
    db.insert_many(
        "INSERT INTO score_queue (trace_id, version, ended, changed_at)",
        sorted(rows),  # one lock order for concurrent writers and workers
        "ON CONFLICT (trace_id) DO UPDATE SET version = excluded.version,"
        " ended = excluded.ended, changed_at = excluded.changed_at",
        template=f"(?, ?, ?, {db.clock})",
    )


def touch(db: Database, trace_ids: Iterable[str]) -> None:
    """Log records arrived for these traces: the quiet period of those queued starts again
    (call inside the write's transaction)."""
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        db.execute(
            f"UPDATE score_queue SET changed_at = {db.clock}"
            f" WHERE trace_id IN ({','.join('?' * len(part))})",
            part,
        )
