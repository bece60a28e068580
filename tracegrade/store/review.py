"""Review queues and human labels in the store.

A **queue** is a named rule over stored conversations (:mod:`tracegrade.pipeline.review`
applies it) and the items it selected: one per conversation (its key, see
:mod:`tracegrade.normalize.conversations`, and its trace ids), in order. A reviewer **claims**
the next item for a lease of ``lease_s`` seconds; two reviewers never hold the same item at
once. On PostgreSQL the claim is ``SELECT ... FOR UPDATE SKIP LOCKED`` (a reviewer never waits
for another's row); on SQLite it runs in a ``BEGIN IMMEDIATE`` transaction (one writer at a
time: the same outcome). The pattern is ``score --follow``'s (:mod:`.follow`). A reviewer
holding an unexpired claim gets it back (a reload does not take a second item); a skipped
item goes back to the others, never to the reviewer who skipped it; a labelled item is done.

A **label** is a person's verdict on a conversation: ``pass`` / ``fail``, optional per-axis
verdicts, a note and a corrected expectation, with who made it and when (Unix s). Labels are
never overwritten: a second label on a conversation is another row, and the latest counts
(:func:`latest_labels`). A label imported twice adds nothing (its digest covers every field).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.errors import StoreError
from tracegrade.store.database import Database
from tracegrade.store.rows import digest

DEFAULT_LEASE_S = 15 * 60.0
"""How long a reviewer holds a claimed item before it goes back to the queue (s)."""
VERDICTS = ("pass", "fail")
AXES = ("tools_right", "answer_grounded", "answer_complete")
"""The optional per-axis verdicts a reviewer may give (each ``pass`` or ``fail``)."""


@dataclass(frozen=True)
class QueueItem:
    """One conversation in a queue: ``state`` is ``open``, ``claimed`` or ``done``;
    ``reason`` says why the rule selected it; ``lease_until`` is Unix s."""

    queue: str
    conversation: str
    trace_ids: tuple[str, ...]
    position: int
    state: str
    claimed_by: str | None = None
    lease_until: float = 0.0
    done_by: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Label:
    """A person's verdict on one conversation (see the module docstring). ``axes`` maps
    :data:`AXES` names to ``pass`` / ``fail``; ``expectation`` is the corrected expectation
    (case fields, e.g. ``expected_tools``, ``must_contain``); ``source`` is ``review`` or
    ``import``; ``created_at`` Unix s."""

    conversation: str
    trace_ids: tuple[str, ...]
    reviewer: str
    verdict: str
    created_at: float = 0.0
    axes: Mapping[str, str] = field(default_factory=dict)
    note: str | None = None
    expectation: Mapping[str, Any] | None = None
    queue: str | None = None
    source: str = "review"

    def to_dict(self) -> dict[str, Any]:
        """The JSON form ``review export`` writes (one line per label)."""
        return {
            "conversation": self.conversation,
            "trace_ids": list(self.trace_ids),
            "reviewer": self.reviewer,
            "created_at": self.created_at,
            "verdict": self.verdict,
            "axes": dict(self.axes),
            "note": self.note,
            "expectation": None if self.expectation is None else dict(self.expectation),
            "queue": self.queue,
            "source": self.source,
        }


ITEM_COLUMNS = (
    "queue, conversation, trace_ids, position, state, claimed_by, lease_until, done_by, reason"
)


def _item(row: Sequence[Any]) -> QueueItem:
    queue, conversation, ids, position, state, claimed_by, lease, done_by, reason = row
    return QueueItem(
        queue,
        conversation,
        tuple(json.loads(ids)),
        int(position),
        state,
        claimed_by,
        float(lease),
        done_by,
        reason,
    )


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def create_queue(
    db: Database,
    name: str,
    rule: Mapping[str, Any],
    items: Sequence[tuple[str, Sequence[str], str]],
    created_by: str | None,
) -> int:
    """Create queue ``name`` with its rule and items (conversation key, trace ids, reason),
    in order; returns the number of items.

    Raises:
        StoreError: a queue of that name exists.
    """
    _begin(db)
    with db:
        if db.execute("SELECT 1 FROM review_queues WHERE name = ?", (name,)).fetchone():
            raise StoreError(f"a review queue named {name!r} exists: choose another name")
        db.execute(
            "INSERT INTO review_queues (name, rule, created_at, created_by) VALUES (?, ?, ?, ?)",
            (name, json.dumps(dict(rule), sort_keys=True), time.time(), created_by),
        )
        rows = [
            (name, key, json.dumps(list(ids)), i, "open", reason)
            for i, (key, ids, reason) in enumerate(items)
        ]
        if rows:
            db.insert_many(
                "INSERT INTO review_items (queue, conversation, trace_ids, position, state,"
                " reason)",
                rows,
            )
    return len(items)


def queues(db: Database) -> list[dict[str, Any]]:
    """Every queue: name, rule, created_at (Unix s), created_by, and item counts by state
    (``open``, ``claimed``, ``done``, ``total``), oldest first."""
    out = []
    for name, rule, created_at, created_by in db.execute(
        "SELECT name, rule, created_at, created_by FROM review_queues ORDER BY created_at, name"
    ).fetchall():
        out.append(
            {
                "name": name,
                "rule": json.loads(rule),
                "created_at": created_at,
                "created_by": created_by,
                **progress(db, name),
            }
        )
    return out


def queue_rule(db: Database, name: str) -> dict[str, Any]:
    """The rule of queue ``name``.

    Raises:
        StoreError: no such queue.
    """
    row = db.execute("SELECT rule FROM review_queues WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise StoreError(f"no review queue {name!r}")
    rule: dict[str, Any] = json.loads(row[0])
    return rule


def progress(db: Database, name: str, now: float | None = None) -> dict[str, int]:
    """Counts of a queue's items: ``open`` (including expired claims), ``claimed``, ``done``
    and ``total``."""
    now = time.time() if now is None else now
    counts = {"open": 0, "claimed": 0, "done": 0}
    for state, lease, n in db.execute(
        "SELECT state, CASE WHEN lease_until < ? THEN 1 ELSE 0 END, COUNT(*) FROM review_items"
        " WHERE queue = ? GROUP BY 1, 2",
        (now, name),
    ):
        key = "open" if state == "claimed" and lease else state
        counts[key] = counts.get(key, 0) + int(n)
    return {**counts, "total": sum(counts.values())}


def items(db: Database, name: str) -> list[QueueItem]:
    """A queue's items in order."""
    rows = db.execute(
        f"SELECT {ITEM_COLUMNS} FROM review_items WHERE queue = ? ORDER BY position", (name,)
    )
    return [_item(row) for row in rows]


def item(db: Database, name: str, conversation: str) -> QueueItem:
    """One item of a queue.

    Raises:
        StoreError: no such item.
    """
    row = db.execute(
        f"SELECT {ITEM_COLUMNS} FROM review_items WHERE queue = ? AND conversation = ?",
        (name, conversation),
    ).fetchone()
    if row is None:
        raise StoreError(f"no conversation {conversation!r} in review queue {name!r}")
    return _item(row)


def claim_next(
    db: Database,
    name: str,
    reviewer: str,
    lease_s: float = DEFAULT_LEASE_S,
    now: float | None = None,
) -> QueueItem | None:
    """The item ``reviewer`` holds in queue ``name`` (its lease renewed), else the first open
    one (or one whose lease expired) this reviewer has not skipped, now claimed by them for
    ``lease_s``; None when none is left (see the module docstring)."""
    now = time.time() if now is None else now
    lock = " FOR UPDATE SKIP LOCKED" if db.postgres else ""
    _begin(db)
    with db:
        row = db.execute(
            f"SELECT {ITEM_COLUMNS} FROM review_items WHERE queue = ? AND state = 'claimed'"
            " AND claimed_by = ? AND lease_until >= ? ORDER BY position LIMIT 1" + lock,
            (name, reviewer, now),
        ).fetchone()
        if row is None:
            row = db.execute(
                f"SELECT {ITEM_COLUMNS} FROM review_items i WHERE queue = ? AND (state = 'open'"
                " OR (state = 'claimed' AND lease_until < ?)) AND NOT EXISTS (SELECT 1 FROM"
                " review_skips s WHERE s.queue = i.queue AND s.conversation = i.conversation"
                " AND s.reviewer = ?) ORDER BY position LIMIT 1" + lock,
                (name, now, reviewer),
            ).fetchone()
        if row is None:
            return None
        db.execute(
            "UPDATE review_items SET state = 'claimed', claimed_by = ?, lease_until = ?"
            " WHERE queue = ? AND conversation = ?",
            (reviewer, now + lease_s, name, row[1]),
        )
    claimed = _item(row)
    return QueueItem(
        claimed.queue,
        claimed.conversation,
        claimed.trace_ids,
        claimed.position,
        "claimed",
        reviewer,
        now + lease_s,
        None,
        claimed.reason,
    )


def skip(db: Database, name: str, conversation: str, reviewer: str) -> None:
    """Give an item back (open again) and never offer it to ``reviewer`` again."""
    _begin(db)
    with db:
        db.execute(
            "INSERT INTO review_skips (queue, conversation, reviewer) VALUES (?, ?, ?)"
            " ON CONFLICT (queue, conversation, reviewer) DO NOTHING",
            (name, conversation, reviewer),
        )
        db.execute(
            "UPDATE review_items SET state = 'open', claimed_by = NULL, lease_until = 0"
            " WHERE queue = ? AND conversation = ? AND state = 'claimed' AND claimed_by = ?",
            (name, conversation, reviewer),
        )


def _label_digest(label: Label) -> bytes:
    return digest(json.dumps(label.to_dict(), sort_keys=True).encode())


def add_label(db: Database, label: Label) -> bool:
    """Store a label (and mark its queue item done, in the same transaction, when it names a
    queue); False when the very same label was stored before (an import run twice)."""
    values = label.to_dict()
    _begin(db)
    with db:
        added = db.execute(
            "INSERT INTO labels (conversation, trace_ids, reviewer, created_at, verdict, axes,"
            " note, expectation, queue, source, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (digest) DO NOTHING",
            (
                label.conversation,
                json.dumps(values["trace_ids"]),
                label.reviewer,
                label.created_at,
                label.verdict,
                json.dumps(values["axes"], sort_keys=True),
                label.note,
                None if label.expectation is None else json.dumps(values["expectation"]),
                label.queue,
                label.source,
                _label_digest(label),
            ),
        ).rowcount
        if label.queue:
            db.execute(
                "UPDATE review_items SET state = 'done', done_by = ?, claimed_by = NULL,"
                " lease_until = 0 WHERE queue = ? AND conversation = ?",
                (label.reviewer, label.queue, label.conversation),
            )
    return bool(added == 1)


LABEL_COLUMNS = (
    "conversation, trace_ids, reviewer, verdict, created_at, axes, note, expectation, queue, source"
)


def _label(row: Sequence[Any]) -> Label:
    conversation, ids, reviewer, verdict, created_at, axes, note, expectation, queue, source = row
    return Label(
        conversation,
        tuple(json.loads(ids)),
        reviewer,
        verdict,
        float(created_at),
        json.loads(axes),
        note,
        None if expectation is None else json.loads(expectation),
        queue,
        source,
    )


def labels(
    db: Database, *, since_s: float | None = None, conversation: str | None = None
) -> list[Label]:
    """Stored labels, oldest first; made since ``since_s`` (Unix s) and/or of one
    conversation."""
    sql, args = f"SELECT {LABEL_COLUMNS} FROM labels WHERE 1=1", list[Any]()
    if since_s is not None:
        sql += " AND created_at >= ?"
        args.append(since_s)
    if conversation is not None:
        sql += " AND conversation = ?"
        args.append(conversation)
    return [_label(row) for row in db.execute(sql + " ORDER BY created_at, id", args)]


def labels_of_traces(db: Database, trace_ids: Sequence[str]) -> list[Label]:
    """The labels that name any of ``trace_ids`` (hex; e.g. a conversation's traces), oldest
    first."""
    wanted = {t.lower() for t in trace_ids}
    if not wanted:
        return []
    sql = f"SELECT {LABEL_COLUMNS} FROM labels WHERE " + " OR ".join(
        "trace_ids LIKE ?" for _ in wanted
    )
    rows = db.execute(sql + " ORDER BY created_at, id", [f'%"{t}"%' for t in sorted(wanted)])
    return [label for label in map(_label, rows) if wanted & set(label.trace_ids)]


def latest_labels(db: Database, *, since_s: float | None = None) -> dict[str, Label]:
    """Conversation key -> its latest label (made since ``since_s``, Unix s)."""
    return {label.conversation: label for label in labels(db, since_s=since_s)}
