"""Whole conversations for ``score --follow --sessions``: which traces are turns of which
conversation, when a conversation is quiet enough to score, the workers' claims on it and its
results.

A follower that scores a trace records, in the transaction that stores its result, the
conversation it belongs to (``session_traces``; its key as ``dataset build`` groups traces:
``id:<conversation id>``, or by history continuity, ``trace:<first trace id>``: the turns a
trace knows of, digested, point to its conversation in ``session_turns``) and bumps the
conversation's ``version`` and ``changed_at`` (``sessions``). A conversation is claimable once
no turn came for ``quiet_s`` seconds and its version is newer than the one last scored; a
worker claims a batch for a lease (``FOR UPDATE SKIP LOCKED`` on PostgreSQL, ``BEGIN
IMMEDIATE`` on SQLite), and completes each by storing its result (``session_results``) and
the version it scored, in one transaction, if it still holds the claim. A turn that arrives
later makes a new version, scored again once the conversation is quiet again.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.store.database import Database

_BATCH = 500


@dataclass(frozen=True)
class Member:
    """One scored trace's place in its conversation: the conversation's key, the trace's
    start (Unix ns), the digest of every user turn it knows of (its history and inputs: a
    later turn replaying them continues the conversation), and its ``service.name``."""

    key: str
    trace_id: str
    start_unix_nano: int
    turns_digest: str | None
    service: str | None = None


@dataclass(frozen=True)
class SessionClaim:
    """A conversation claimed by this worker at ``version``; ``updated`` when an earlier
    version of it has a stored result."""

    key: str
    version: int
    updated: bool


def turns_digest(turns: Sequence[str]) -> str | None:
    """The digest of a sequence of user turns (None for none)."""
    if not turns:
        return None
    return hashlib.sha256(json.dumps(list(turns)).encode()).hexdigest()[:32]


def continued(db: Database, digests: Sequence[str]) -> dict[str, str]:
    """Turns digest -> the key of the conversation that last held those turns."""
    out: dict[str, str] = {}
    ids = sorted(set(digests))
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        rows = db.execute(
            "SELECT turns_digest, session_key FROM session_turns WHERE turns_digest IN"
            f" ({','.join('?' * len(part))})",
            part,
        )
        out.update((r[0], r[1]) for r in rows)
    return out


def record(db: Database, members: Sequence[Member]) -> None:
    """Record scored traces in their conversations (call inside the transaction that stores
    their results): membership, each conversation's next version, the turns it now holds."""
    if not members:
        return
    db.insert_many(
        "INSERT INTO session_traces (session_key, trace_id, start_unix_nano)",
        sorted({(m.key, m.trace_id, m.start_unix_nano) for m in members}),
        "ON CONFLICT (session_key, trace_id) DO NOTHING",
    )
    services = {m.key: m.service for m in members}
    db.insert_many(
        "INSERT INTO sessions (session_key, version, changed_at, service)",
        sorted((key, 1, services[key]) for key in services),
        "ON CONFLICT (session_key) DO UPDATE SET version = sessions.version + 1,"
        " changed_at = excluded.changed_at, service = COALESCE(excluded.service, sessions.service)",
        template=f"(?, ?, {db.clock}, ?)",
    )
    turns = sorted({(m.turns_digest, m.key) for m in members if m.turns_digest})
    if turns:
        db.insert_many(
            "INSERT INTO session_turns (turns_digest, session_key)",
            turns,
            "ON CONFLICT (turns_digest) DO UPDATE SET session_key = excluded.session_key",
        )


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def claim(
    db: Database, worker: str, limit: int, quiet_s: float, lease_s: float
) -> list[SessionClaim]:
    """Claim up to ``limit`` conversations quiet for ``quiet_s`` seconds with a version not
    yet scored (unclaimed, or whose lease expired), for ``lease_s`` seconds."""
    clock = db.clock
    lock = " FOR UPDATE SKIP LOCKED" if db.postgres else ""
    _begin(db)
    with db:
        rows = db.execute(
            f"UPDATE sessions SET claimed_by = ?, lease_until = {clock} + ?"
            " WHERE session_key IN (SELECT session_key FROM sessions"
            f" WHERE version > scored_version AND lease_until < {clock}"
            f" AND changed_at <= {clock} - ? ORDER BY changed_at, session_key LIMIT ?{lock})"
            " RETURNING session_key, version, scored_version",
            (worker, lease_s, quiet_s, limit),
        ).fetchall()
    return [SessionClaim(r[0], int(r[1]), int(r[2]) > 0) for r in sorted(rows)]


def members(db: Database, key: str) -> list[str]:
    """The trace ids of a conversation, oldest turn first."""
    rows = db.execute(
        "SELECT trace_id FROM session_traces WHERE session_key = ?"
        " ORDER BY start_unix_nano, trace_id",
        (key,),
    )
    return [r[0] for r in rows]


@dataclass(frozen=True)
class SessionRow:
    """What the store keeps of a conversation's result: its evaluator, verdict, score, the
    traces it covered and the result as JSON-able data."""

    evaluator: str
    passed: bool
    score: float | None
    trace_ids: tuple[str, ...]
    result: dict[str, Any]


def complete(
    db: Database, worker: str, items: Sequence[tuple[SessionClaim, SessionRow | None]]
) -> list[bool]:
    """Store the results of the conversations this worker still holds and the versions
    they scored, releasing the claims, in one transaction; per item, whether it was."""
    keys = sorted({c.key for c, _ in items})
    if not keys:
        return []
    lock = " ORDER BY session_key FOR UPDATE" if db.postgres else ""
    now = time.time()
    _begin(db)
    with db:
        held = {
            r[0]
            for r in db.execute(
                "SELECT session_key FROM sessions WHERE claimed_by = ? AND session_key IN"
                f" ({','.join('?' * len(keys))}){lock}",
                (worker, *keys),
            )
        }
        rows = [
            (
                c.key,
                c.version,
                row.evaluator,
                now,
                worker,
                int(row.passed),
                row.score,
                len(row.trace_ids),
                json.dumps(list(row.trace_ids)),
                json.dumps(row.result, default=str),
            )
            for c, row in items
            if c.key in held and row is not None
        ]
        if rows:
            db.insert_many(
                "INSERT INTO session_results (session_key, version, evaluator, scored_at, worker,"
                " passed, score, turns, trace_ids, result)",
                rows,
                "ON CONFLICT (session_key, version, evaluator) DO NOTHING",
            )
        for claimed, _ in items:
            if claimed.key in held:
                db.execute(
                    "UPDATE sessions SET claimed_by = NULL, lease_until = 0,"
                    f" scored_version = {db.greatest('scored_version', '?')}"
                    " WHERE session_key = ? AND claimed_by = ?",
                    (claimed.version, claimed.key, worker),
                )
    return [c.key in held for c, _ in items]


def results(db: Database, key: str) -> list[tuple[int, bool, float | None, int]]:
    """A conversation's stored results: (version, passed, score, turns), oldest first."""
    rows = db.execute(
        "SELECT version, passed, score, turns FROM session_results WHERE session_key = ?"
        " ORDER BY version, scored_at",
        (key,),
    )
    return [(int(r[0]), bool(r[1]), r[2], int(r[3])) for r in rows]
