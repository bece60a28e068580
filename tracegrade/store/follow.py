"""What ``score --follow`` workers share in the store: claims on queued traces, the results
they scored, and windowed aggregates.

Traces await scoring in the outbox (``score_queue``, :mod:`tracegrade.store.outbox`), written
in the transaction that stored their spans, so no trace depends on a time watermark. A queued
trace is *claimable* once it has settled: its root or agent span is stored and no span came
for ``quiet_s`` seconds, or, without such a span, none came for ``rootless_quiet_s``; times are
the database's clock (:attr:`~tracegrade.store.database.Database.clock`), so workers and
receivers whose clocks drift apart agree. A worker claims a batch for a lease of ``lease_s``
seconds (:func:`claim`), renews the lease while it scores (:func:`renew`), and completes each
trace by storing its result in the transaction that deletes the queue row (:func:`complete`).
A worker that dies leaves its claims to expire; another claims them. A completion whose claim
was taken over stores nothing, so every (trace, version) has at most one stored result, and a
trace queued again (new spans) is scored again as a new version.

On PostgreSQL a claim is ``SELECT ... FOR UPDATE SKIP LOCKED`` inside an ``UPDATE``: workers
never wait for each other's rows. On SQLite it is one ``UPDATE ... RETURNING`` in a
``BEGIN IMMEDIATE`` transaction (one writer at a time; the same outcome).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.store.database import Database

DEFAULT_LEASE_S = 60.0
"""How long a claim lasts, unless renewed, before another worker may take it over (s)."""
DEFAULT_ROOTLESS_QUIET_S = 300.0
"""Seconds without new spans after which a trace whose root or agent span never arrived (the
root belongs to an unsampled or uninstrumented service) is scored anyway."""
_BATCH = 500


@dataclass(frozen=True)
class Claim:
    """One trace claimed by this worker: ``version`` counts the writes that brought it spans;
    ``updated`` when an earlier version of it has a stored result."""

    trace_id: str
    version: int
    updated: bool


@dataclass(frozen=True)
class Settling:
    """When a queued trace is claimable (see the module docstring): ``quiet_s`` after its last
    write once ended, ``rootless_quiet_s`` without an end; ``since_s`` (Unix s, None: any)
    leaves out traces whose last write is older (a worker's horizon, ``--since``)."""

    quiet_s: float
    rootless_quiet_s: float = DEFAULT_ROOTLESS_QUIET_S
    since_s: float | None = None


@dataclass(frozen=True)
class ResultRow:
    """What a worker stores per scored trace (see :func:`complete`); ``result`` is the case
    result as JSON-able data, ``evaluator`` the id of the evaluator that produced it
    (:mod:`tracegrade.scoring.identity`), ``judge_cost_usd`` what its judge calls cost and
    ``judge_skipped`` whether the judge was skipped for the budget. ``excluded`` marks a
    trace that is not production traffic after all (an eval run's): it supersedes the
    trace's earlier results and counts nowhere."""

    service: str | None
    passed: bool
    score: float | None
    hallucinated: bool
    tool_calls: int
    failed_tool_calls: int
    duration_ms: float | None
    cost_usd: float | None
    result: dict[str, Any]
    evaluator: str = ""
    judge_cost_usd: float | None = None
    judge_skipped: bool = False
    excluded: bool = False
    trace_id: str | None = None
    """Set when read back (:mod:`tracegrade.store.results`)."""


EXCLUDED = ResultRow(None, False, None, False, 0, 0, None, None, {}, excluded=True)
"""The row that marks a trace as not production traffic (see :class:`ResultRow`)."""
RESULT_COLUMNS = (
    "trace_id, version, evaluator, scored_at, worker, live, excluded, service, passed, score,"
    " hallucinated, tool_calls, failed_tool_calls, duration_ms, cost_usd, judge_cost_usd,"
    " judge_skipped, result"
)


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def _marks(items: Sequence[Any]) -> str:
    return ",".join("?" * len(items))


def claim(
    db: Database, worker: str, limit: int, settling: Settling, lease_s: float = DEFAULT_LEASE_S
) -> list[Claim]:
    """Claim up to ``limit`` claimable traces (unclaimed, or whose lease expired) for
    ``lease_s`` seconds, oldest change first. ``worker`` must be unique to the calling process
    (a completion checks it)."""
    clock = db.clock
    lock = " FOR UPDATE SKIP LOCKED" if db.postgres else ""
    since = -1.0 if settling.since_s is None else settling.since_s
    _begin(db)
    with db:
        rows = db.execute(
            f"UPDATE score_queue SET claimed_by = ?, lease_until = {clock} + ?"
            " WHERE trace_id IN (SELECT trace_id FROM score_queue"
            f" WHERE lease_until < {clock} AND changed_at >= ?"
            f" AND ((ended = 1 AND changed_at <= {clock} - ?) OR changed_at <= {clock} - ?)"
            f" ORDER BY changed_at, trace_id LIMIT ?{lock})"
            " RETURNING trace_id, version",
            (worker, lease_s, since, settling.quiet_s, settling.rootless_quiet_s, limit),
        ).fetchall()
        scored = _scored_before(db, [r[0] for r in rows])
    rows.sort(key=lambda r: r[0])
    return [Claim(r[0], int(r[1]), r[0] in scored) for r in rows]


def _scored_before(db: Database, trace_ids: Sequence[str]) -> set[str]:
    """Which of these traces have a stored result (of an earlier version)."""
    found: set[str] = set()
    for start in range(0, len(trace_ids), _BATCH):
        part = trace_ids[start : start + _BATCH]
        rows = db.execute(
            f"SELECT DISTINCT trace_id FROM follow_results WHERE trace_id IN ({_marks(part)})",
            part,
        )
        found.update(r[0] for r in rows)
    return found


def eval_run_traces(db: Database, trace_ids: Sequence[str]) -> set[str]:
    """Which of these traces belong to an eval run (``tracegrade run``'s case span, or an
    agent it ran, marked them with ``tracegrade.run_id``: ``traces.run_id``); production
    scoring leaves them out."""
    found: set[str] = set()
    for start in range(0, len(trace_ids), _BATCH):
        part = trace_ids[start : start + _BATCH]
        rows = db.execute(
            f"SELECT trace_id FROM traces WHERE trace_id IN ({_marks(part)})"
            " AND run_id IS NOT NULL",
            part,
        )
        found.update(r[0] for r in rows)
    return found


def renew(
    db: Database, worker: str, trace_ids: Iterable[str], lease_s: float = DEFAULT_LEASE_S
) -> set[str]:
    """Extend this worker's leases on these traces to ``lease_s`` from now; returns the ids
    it still holds (a claim lost to another worker after an expiry is not renewed)."""
    ids = sorted(set(trace_ids))
    held: set[str] = set()
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        _begin(db)
        with db:
            locked = _lock_rows(db, part, worker)
            if locked:
                rows = db.execute(
                    f"UPDATE score_queue SET lease_until = {db.clock} + ? WHERE claimed_by = ?"
                    f" AND trace_id IN ({_marks(locked)}) RETURNING trace_id",
                    (lease_s, worker, *locked),
                )
                held.update(r[0] for r in rows)
    return held


def _lock_rows(db: Database, trace_ids: Sequence[str], worker: str) -> list[str]:
    """The ids among ``trace_ids`` claimed by ``worker``, their rows locked in id order on
    PostgreSQL (the order writers lock them in: no deadlock)."""
    lock = " ORDER BY trace_id FOR UPDATE" if db.postgres else ""
    rows = db.execute(
        f"SELECT trace_id FROM score_queue WHERE claimed_by = ? AND trace_id IN"
        f" ({_marks(trace_ids)}){lock}",
        (worker, *trace_ids),
    )
    return [r[0] for r in rows]


def complete(db: Database, worker: str, claimed: Claim, row: ResultRow | None) -> bool:
    """Store the result of a claimed trace and close the claim, in one transaction; False
    (nothing stored) when the claim was lost (its lease expired and another worker took it).
    ``row`` None closes the claim with no result (nothing to score, or not sampled)."""
    return complete_all(db, worker, [(claimed, row)])[0]


def complete_all(
    db: Database,
    worker: str,
    items: Sequence[tuple[Claim, ResultRow | None]],
    also: Callable[[Database, set[str]], None] | None = None,
) -> list[bool]:
    """:func:`complete` for several claims in one transaction (one commit per batch);
    returns, per item, whether it was completed. The queue row of a claim whose trace got a
    newer version meanwhile stays queued (released) for that version. ``also`` is called in
    the same transaction with the ids completed (e.g. to record their conversations)."""
    if not items:
        return []
    ids = sorted({claimed.trace_id for claimed, _ in items})
    _begin(db)
    with db:
        held = set(_lock_rows(db, ids, worker))
        versions = {c.trace_id: c.version for c, _ in items if c.trace_id in held}
        done = _close(db, worker, versions)
        _store_results(db, worker, [(c, r) for c, r in items if c.trace_id in done and r])
        if also is not None:
            also(db, done)
    return [claimed.trace_id in done for claimed, _ in items]


def _close(db: Database, worker: str, versions: dict[str, int]) -> set[str]:
    """Close these held claims: delete the queue rows still at the claimed version, release
    (unclaimed, claimable at once) those a writer moved to a newer one. Returns the ids."""
    if not versions:
        return set()
    ids = sorted(versions)
    current = dict(
        db.execute(
            f"SELECT trace_id, version FROM score_queue WHERE trace_id IN ({_marks(ids)})", ids
        )
    )
    finished = [t for t in ids if int(current[t]) == versions[t]]
    newer = [t for t in ids if int(current[t]) != versions[t]]
    for part, statement in (
        (finished, "DELETE FROM score_queue"),
        (newer, "UPDATE score_queue SET claimed_by = NULL, lease_until = 0"),
    ):
        if part:
            db.execute(
                f"{statement} WHERE claimed_by = ? AND trace_id IN ({_marks(part)})",
                (worker, *part),
            )
    return set(ids)


def _store_results(db: Database, worker: str, items: Sequence[tuple[Claim, ResultRow]]) -> None:
    store_results(db, worker, [(c.trace_id, c.version, row) for c, row in items], live=True)


def store_results(
    db: Database, worker: str, items: Sequence[tuple[str, int, ResultRow]], *, live: bool
) -> None:
    """Insert (trace id, version, row) results, scored now by ``worker`` (call inside the
    completing transaction); ``live``: a follower's (they count in windows), not a
    backfill's. A (trace, version, evaluator) already stored is kept."""
    now = time.time()
    rows = [
        (
            trace_id,
            version,
            row.evaluator,
            now,
            worker,
            int(live),
            int(row.excluded),
            row.service,
            int(row.passed),
            row.score,
            int(row.hallucinated),
            row.tool_calls,
            row.failed_tool_calls,
            row.duration_ms,
            row.cost_usd,
            row.judge_cost_usd,
            int(row.judge_skipped),
            json.dumps(row.result, default=str),
        )
        for trace_id, version, row in items
    ]
    if rows:
        db.insert_many(
            f"INSERT INTO follow_results ({RESULT_COLUMNS})",
            rows,
            "ON CONFLICT (trace_id, version, evaluator) DO NOTHING",
        )


def release(db: Database, worker: str, claims: Sequence[Claim]) -> None:
    """Give claims back (claimable again at once), e.g. on a clean shutdown before scoring
    them."""
    ids = sorted({c.trace_id for c in claims})
    if not ids:
        return
    _begin(db)
    with db:
        locked = _lock_rows(db, ids, worker)
        if locked:
            db.execute(
                "UPDATE score_queue SET claimed_by = NULL, lease_until = 0 WHERE claimed_by = ?"
                f" AND trace_id IN ({_marks(locked)})",
                (worker, *locked),
            )


def pending(db: Database) -> int:
    """How many traces are queued (claimed or not): a test and benchmark aid."""
    return int(db.execute("SELECT COUNT(*) FROM score_queue").fetchone()[0])


def result_counts(db: Database, evaluator: str | None = None) -> dict[str, int]:
    """Number of stored results per trace id (of one evaluator, or all); a test and benchmark
    aid: all 1 when every trace version was scored exactly once."""
    where, args = ("WHERE evaluator = ?", (evaluator,)) if evaluator is not None else ("", ())
    rows = db.execute(
        f"SELECT trace_id, COUNT(*) FROM follow_results {where} GROUP BY trace_id", args
    )
    return {r[0]: int(r[1]) for r in rows}


def save_window(
    db: Database, start_s: float, window_s: float, service: str, aggregates: dict[str, Any]
) -> str:
    """Store one window's aggregates: ``"new"`` when this call created the row (the first
    worker to close the window: it prints), ``"revised"`` when it changed stored aggregates
    (late results re-counted), ``"same"`` otherwise."""
    text = json.dumps(aggregates, sort_keys=True)
    with db:
        created = db.execute(
            "INSERT INTO score_windows (start_s, window_s, service, aggregates) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (start_s, window_s, service) DO NOTHING",
            (start_s, window_s, service, text),
        ).rowcount
        if created == 1:
            return "new"
        changed = db.execute(
            "UPDATE score_windows SET aggregates = ? WHERE start_s = ? AND window_s = ?"
            " AND service = ? AND aggregates <> ?",
            (text, start_s, window_s, service, text),
        ).rowcount
    return "revised" if changed else "same"


def claim_alert(db: Database, start_s: float, window_s: float, service: str) -> bool:
    """Mark a stored window as alerted; True for the one call that did (it sends the alert:
    a window alerts once, however often it is revised or by how many workers)."""
    with db:
        return bool(
            db.execute(
                "UPDATE score_windows SET alerted = 1 WHERE start_s = ? AND window_s = ?"
                " AND service = ? AND alerted = 0",
                (start_s, window_s, service),
            ).rowcount
            == 1
        )


def window_services(db: Database, start_s: float, window_s: float) -> list[str]:
    """The services a stored window has rows for."""
    rows = db.execute(
        "SELECT service FROM score_windows WHERE start_s = ? AND window_s = ? ORDER BY service",
        (start_s, window_s),
    )
    return [r[0] for r in rows]


def windows(db: Database, window_s: float) -> list[tuple[float, str, dict[str, Any]]]:
    """Stored windows of this length: (start s, service, aggregates), oldest first."""
    rows = db.execute(
        "SELECT start_s, service, aggregates FROM score_windows WHERE window_s = ?"
        " ORDER BY start_s, service",
        (window_s,),
    )
    return [(float(r[0]), r[1], json.loads(r[2])) for r in rows]
