"""What ``tracegrade backfill`` workers share in the store: which stored traces an evaluator
still has to score, their claims, and the evaluator's ledger of traces it went through.

A trace is a **candidate** for an evaluator when it was received within the horizon, it is
not an eval run's (``traces.run_id``), it is not waiting in the scoring queue (live
followers score it: :mod:`.outbox`), the evaluator has no result for its current version
(``follow_results``), and the evaluator's ledger (``backfill_claims``) neither holds it done
at that version nor claimed under a lease still running. A worker claims candidates in trace
id order, a batch at a time, in one statement (``INSERT ... SELECT ... ON CONFLICT DO UPDATE
... WHERE`` the earlier claim's lease expired ``RETURNING``: two workers never claim the same
trace, on PostgreSQL or SQLite), scores them, and completes them in one transaction that
stores the results of the claims it still holds and marks them done (scored, or not kept by
the sampling rules): every trace is scored once by the evaluator, at most, and a worker killed
mid-batch leaves claims that expire after one lease and go to the next worker.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracegrade.store.database import Database
from tracegrade.store.follow import ResultRow, store_results

_BATCH = 500


@dataclass(frozen=True)
class BackfillClaim:
    """One stored trace claimed for an evaluator, at its version when claimed."""

    trace_id: str
    version: int


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def _marks(items: Sequence[object]) -> str:
    return ",".join("?" * len(items))


def claim(
    db: Database,
    evaluator: str,
    worker: str,
    limit: int,
    since_s: float | None,
    lease_s: float,
    after: str = "",
) -> list[BackfillClaim]:
    """Claim up to ``limit`` candidates (module docstring) with trace ids above ``after``,
    for ``lease_s`` seconds; ``since_s`` (Unix s, None: any) is the horizon: traces last
    received before it are left alone."""
    clock = db.clock
    _begin(db)
    with db:
        rows = db.execute(
            "INSERT INTO backfill_claims (evaluator, trace_id, version, claimed_by, lease_until,"
            " done)"
            f" SELECT ?, t.trace_id, t.version, ?, {clock} + ?, 0 FROM traces t"
            " WHERE t.last_received_at >= ? AND t.trace_id > ? AND t.run_id IS NULL"
            " AND NOT EXISTS (SELECT 1 FROM score_queue q WHERE q.trace_id = t.trace_id)"
            " AND NOT EXISTS (SELECT 1 FROM follow_results f WHERE f.trace_id = t.trace_id"
            " AND f.version = t.version AND f.evaluator = ?)"
            " AND NOT EXISTS (SELECT 1 FROM backfill_claims c WHERE c.evaluator = ?"
            f" AND c.trace_id = t.trace_id AND ((c.done = 1 AND c.version = t.version)"
            f" OR c.lease_until >= {clock}))"
            " ORDER BY t.trace_id LIMIT ?"
            " ON CONFLICT (evaluator, trace_id) DO UPDATE SET version = excluded.version,"
            " claimed_by = excluded.claimed_by, lease_until = excluded.lease_until, done = 0"
            f" WHERE backfill_claims.lease_until < {clock}"
            " AND (backfill_claims.done = 0 OR backfill_claims.version <> excluded.version)"
            " RETURNING trace_id, version",
            (
                evaluator,
                worker,
                lease_s,
                -1.0 if since_s is None else since_s,
                after,
                evaluator,
                evaluator,
                limit,
            ),
        ).fetchall()
    return [BackfillClaim(r[0], int(r[1])) for r in sorted(rows)]


def renew(
    db: Database, evaluator: str, worker: str, trace_ids: Sequence[str], lease_s: float
) -> set[str]:
    """Extend this worker's leases on these traces; the ids it still holds."""
    held: set[str] = set()
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        _begin(db)
        with db:
            rows = db.execute(
                f"UPDATE backfill_claims SET lease_until = {db.clock} + ? WHERE evaluator = ?"
                f" AND claimed_by = ? AND done = 0 AND trace_id IN ({_marks(part)})"
                " RETURNING trace_id",
                (lease_s, evaluator, worker, *part),
            )
            held.update(r[0] for r in rows)
    return held


def complete(
    db: Database,
    evaluator: str,
    worker: str,
    items: Sequence[tuple[BackfillClaim, ResultRow | None]],
) -> list[bool]:
    """Store the results (None: nothing to store: not kept, no case matched) of the claims
    this worker still holds and mark them done, in one transaction; per item, whether it was
    completed (False: its lease expired and another worker took it)."""
    ids = sorted({c.trace_id for c, _ in items})
    if not ids:
        return []
    lock = " ORDER BY trace_id FOR UPDATE" if db.postgres else ""
    _begin(db)
    with db:
        held = {
            r[0]
            for r in db.execute(
                "SELECT trace_id FROM backfill_claims WHERE evaluator = ? AND claimed_by = ?"
                f" AND done = 0 AND trace_id IN ({_marks(ids)}){lock}",
                (evaluator, worker, *ids),
            )
        }
        rows = [(c.trace_id, c.version, row) for c, row in items if c.trace_id in held and row]
        store_results(db, worker, rows, live=False)
        if held:
            marked = sorted(held)
            db.execute(
                "UPDATE backfill_claims SET done = 1, claimed_by = NULL, lease_until = 0"
                f" WHERE evaluator = ? AND claimed_by = ? AND trace_id IN ({_marks(marked)})",
                (evaluator, worker, *marked),
            )
    return [c.trace_id in held for c, _ in items]


def held_elsewhere(db: Database, evaluator: str, worker: str) -> int:
    """How many of the evaluator's traces other workers hold claimed (their leases running
    or expired but not yet taken over): a worker that found nothing more waits for them."""
    row = db.execute(
        "SELECT COUNT(*) FROM backfill_claims WHERE evaluator = ? AND done = 0"
        " AND claimed_by IS NOT NULL AND claimed_by <> ?",
        (evaluator, worker),
    ).fetchone()
    return int(row[0])
