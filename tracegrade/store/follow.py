"""What ``score --follow`` workers share in the store: claims on settled traces, the results
they scored, and windowed aggregates.

Several workers (processes, machines) may follow one store. Each settled trace is *offered*
once per version (a version is the trace's ``last_received_at``: a trace that receives spans
after it was scored is offered again), then *claimed* by exactly one worker for a lease of
``lease_s`` seconds, and *completed* by writing its result in the same transaction that
marks the claim done. A worker that dies mid-way leaves its claims to expire; another worker
claims them again. A worker whose lease expired and was taken over cannot complete: its
result is discarded, so every (trace, version) has exactly one stored result.

On PostgreSQL the claim is ``SELECT ... FOR UPDATE SKIP LOCKED``: workers never wait for each
other's rows. On SQLite the claim runs in a ``BEGIN IMMEDIATE`` transaction (one writer at a
time; the same outcome).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.store.database import Database

DEFAULT_LEASE_S = 60.0
"""How long a claim lasts before another worker may take it over (s)."""


@dataclass(frozen=True)
class Claim:
    """One trace claimed by this worker: ``version`` is its ``last_received_at`` (Unix s);
    ``updated`` when an earlier version of it was already scored."""

    trace_id: str
    version: float
    updated: bool


@dataclass(frozen=True)
class ResultRow:
    """What a worker stores per scored trace (see :func:`complete`); ``result`` is the case
    result as JSON-able data."""

    service: str | None
    passed: bool
    score: float | None
    hallucinated: bool
    tool_calls: int
    failed_tool_calls: int
    duration_ms: float | None
    cost_usd: float | None
    result: dict[str, Any]


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def offer(db: Database, candidates: Sequence[tuple[str, float]]) -> int:
    """Offer (trace id, version) pairs for scoring: new traces, and traces with a newer
    version than their claim. Returns how many became claimable."""
    if not candidates:
        return 0
    _begin(db)
    with db:
        return db.executemany(
            "INSERT INTO score_claims (trace_id, version, state) VALUES (?, ?, 'pending')"
            " ON CONFLICT (trace_id) DO UPDATE SET version = excluded.version, state = 'pending',"
            " claimed_by = NULL, lease_until = 0 WHERE score_claims.version < excluded.version",
            sorted(candidates),  # one lock order for concurrent offerers
        )


def unoffered(
    db: Database, received_after: float, settled_before: float, limit: int = 1000
) -> list[tuple[str, float]]:
    """Ended traces whose last span arrived in (``received_after``, ``settled_before``] and
    whose current version has not been offered yet: (trace id, version), oldest first."""
    rows = db.execute(
        "SELECT t.trace_id, t.last_received_at FROM traces t LEFT JOIN score_claims c"
        " ON c.trace_id = t.trace_id WHERE t.ended = 1 AND t.last_received_at > ?"
        " AND t.last_received_at <= ? AND (c.trace_id IS NULL OR c.version < t.last_received_at)"
        " ORDER BY t.last_received_at, t.trace_id LIMIT ?",
        (received_after, settled_before, limit),
    )
    return [(r[0], float(r[1])) for r in rows]


def claim(
    db: Database,
    worker: str,
    limit: int,
    lease_s: float = DEFAULT_LEASE_S,
    now: float | None = None,
) -> list[Claim]:
    """Claim up to ``limit`` pending traces (or ones whose lease expired) for ``lease_s``."""
    now = time.time() if now is None else now
    lock = " FOR UPDATE SKIP LOCKED" if db.postgres else ""
    _begin(db)
    with db:
        rows = db.execute(
            "SELECT trace_id, version, done_version FROM score_claims WHERE state = 'pending'"
            " OR (state = 'claimed' AND lease_until < ?) ORDER BY version, trace_id LIMIT ?" + lock,
            (now, limit),
        ).fetchall()
        db.executemany(
            "UPDATE score_claims SET state = 'claimed', claimed_by = ?, lease_until = ?"
            " WHERE trace_id = ?",
            [(worker, now + lease_s, r[0]) for r in rows],
        )
    return [Claim(r[0], float(r[1]), r[2] is not None) for r in rows]


def complete(db: Database, worker: str, claimed: Claim, row: ResultRow | None) -> bool:
    """Store the result of a claimed trace and mark the claim done, in one transaction;
    False (nothing stored) when the claim was lost (lease taken over, or a newer version).
    ``row`` None marks the claim done with no result (nothing to score)."""
    return complete_all(db, worker, [(claimed, row)])[0]


def complete_all(
    db: Database, worker: str, items: Sequence[tuple[Claim, ResultRow | None]]
) -> list[bool]:
    """:func:`complete` for several claims in one transaction (one commit per batch);
    returns, per item, whether its result was stored."""
    if not items:
        return []
    stored = []
    _begin(db)
    with db:
        for claimed, row in sorted(items, key=lambda item: item[0].trace_id):  # lock order
            stored.append((claimed.trace_id, _complete_one(db, worker, claimed, row)))
    by_id = dict(stored)
    return [by_id[claimed.trace_id] for claimed, _ in items]


def _complete_one(db: Database, worker: str, claimed: Claim, row: ResultRow | None) -> bool:
    done = db.execute(
        "UPDATE score_claims SET state = 'done', done_version = version, claimed_by = NULL"
        " WHERE trace_id = ? AND version = ? AND state = 'claimed' AND claimed_by = ?",
        (claimed.trace_id, claimed.version, worker),
    ).rowcount
    if done != 1:
        return False
    if row is not None:
        db.execute(
            "INSERT INTO follow_results VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (trace_id, version) DO NOTHING",
            (
                claimed.trace_id,
                claimed.version,
                time.time(),
                worker,
                row.service,
                int(row.passed),
                row.score,
                int(row.hallucinated),
                row.tool_calls,
                row.failed_tool_calls,
                row.duration_ms,
                row.cost_usd,
                json.dumps(row.result, default=str),
            ),
        )
    return True


def release(db: Database, worker: str, claims: Sequence[Claim]) -> None:
    """Give claims back (pending again), e.g. on a clean shutdown before scoring them."""
    db.executemany(
        "UPDATE score_claims SET state = 'pending', claimed_by = NULL, lease_until = 0"
        " WHERE trace_id = ? AND claimed_by = ? AND state = 'claimed'",
        [(c.trace_id, worker) for c in claims],
    )


def results_between(db: Database, start_s: float, end_s: float) -> list[ResultRow]:
    """The stored results scored in [start_s, end_s) (Unix s), without their JSON."""
    rows = db.execute(
        "SELECT service, passed, score, hallucinated, tool_calls, failed_tool_calls, duration_ms,"
        " cost_usd FROM follow_results WHERE scored_at >= ? AND scored_at < ?",
        (start_s, end_s),
    )
    return [
        ResultRow(
            service=r[0],
            passed=bool(r[1]),
            score=r[2],
            hallucinated=bool(r[3]),
            tool_calls=int(r[4]),
            failed_tool_calls=int(r[5]),
            duration_ms=r[6],
            cost_usd=r[7],
            result={},
        )
        for r in rows
    ]


def result_counts(db: Database) -> dict[str, int]:
    """Number of stored results per trace id (a test and benchmark aid: all 1 when every
    trace version was scored exactly once)."""
    rows = db.execute("SELECT trace_id, COUNT(*) FROM follow_results GROUP BY trace_id")
    return {r[0]: int(r[1]) for r in rows}


def save_window(
    db: Database, start_s: float, window_s: float, service: str, aggregates: dict[str, Any]
) -> bool:
    """Store one window's aggregates (recomputed values replace older ones); True when this
    call created the row (the first worker to close the window: it prints and alerts)."""
    with db:
        created = db.execute(
            "INSERT INTO score_windows (start_s, window_s, service, aggregates) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (start_s, window_s, service) DO NOTHING",
            (start_s, window_s, service, json.dumps(aggregates)),
        ).rowcount
        if not created:
            db.execute(
                "UPDATE score_windows SET aggregates = ? WHERE start_s = ? AND window_s = ?"
                " AND service = ?",
                (json.dumps(aggregates), start_s, window_s, service),
            )
    return bool(created == 1)


def windows(db: Database, window_s: float) -> list[tuple[float, str, dict[str, Any]]]:
    """Stored windows of this length: (start s, service, aggregates), oldest first."""
    rows = db.execute(
        "SELECT start_s, service, aggregates FROM score_windows WHERE window_s = ?"
        " ORDER BY start_s, service",
        (window_s,),
    )
    return [(float(r[0]), r[1], json.loads(r[2])) for r in rows]
