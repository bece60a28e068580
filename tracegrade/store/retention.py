"""Retention: removing what is older than a cutoff, so a store can run for a year.

What goes: span chunks and log records received before the cutoff, the ``traces`` rows whose
last span arrived before it (with their rows in the dashboard's trace index), queued claims
(``score_queue``) last changed before it or whose trace is gone, follow results scored before
it and windows that started before it, *orphaned* feedback (received before it, about a trace
the store does not hold: gone with the cutoff, never sent, or named by a response id only);
stored runs (with their case results) only when asked, and never a dataset's baseline run.
Datasets, the judge's cache, feedback about a stored trace, and the review loop's labels,
queues and accounts are kept. The cutoff is always the start of a UTC day
(:func:`cutoff_for`): whole days go.

- **PostgreSQL**: span and log storage is partitioned by day (:mod:`.partitions`): an old day
  is detached without blocking writers and dropped, which frees its disk space at once. The
  other tables lose their old rows in batches (autovacuum reuses the space).
- **SQLite**: old rows are deleted in batches of :data:`BATCH_ROWS`, each its own short
  transaction (a receiver writing the same store waits at most one batch), then the freed pages
  are handed back to the file system a batch at a time (``PRAGMA incremental_vacuum``) and the
  WAL is truncated, so the file shrinks. A store created before auto-vacuum was enabled is
  converted once by a full ``VACUUM`` (``full_vacuum``; it rewrites the file: the receiver's own
  retention never does this, ``tracegrade prune`` does).

The receiver's retention (``collect --retention``) is recorded in the store
(:func:`set_retention_s`): it is the default horizon of ``score --follow`` workers.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from tracegrade.store import partitions
from tracegrade.store.database import Database

BATCH_ROWS = 2_000
"""Rows deleted per transaction."""
VACUUM_PAGES = 4_096
"""Pages handed back to the file system per transaction (64 MiB of 16 KiB pages)."""
_RETENTION_KEY = "retention_s"

_ROWS: dict[str, str] = {
    "traces": "last_received_at < ?",
    "score_queue": "(changed_at < ? OR NOT EXISTS (SELECT 1 FROM traces t"
    " WHERE t.trace_id = score_queue.trace_id AND t.last_received_at >= ?))",
    "follow_results": "scored_at < ?",
    "score_windows": "start_s < ?",
    "judge_spend": "spent_at < ?",
    "backfill_claims": "NOT EXISTS (SELECT 1 FROM traces t"
    " WHERE t.trace_id = backfill_claims.trace_id AND t.last_received_at >= ?)",
    "sessions": "changed_at < ?",
    "session_traces": "NOT EXISTS (SELECT 1 FROM traces t"
    " WHERE t.trace_id = session_traces.trace_id AND t.last_received_at >= ?)",
    "session_turns": "NOT EXISTS (SELECT 1 FROM sessions s"
    " WHERE s.session_key = session_turns.session_key AND s.changed_at >= ?)",
    "session_results": "scored_at < ?",
    "feedback": "received_at < ? AND NOT EXISTS (SELECT 1 FROM traces t"
    " WHERE t.trace_id = feedback.trace_id AND t.last_received_at >= ?)",
}
"""Tables pruned row by row on both engines: the condition on the cutoff (Unix s, each ``?``)."""
_RECEIVED = {"span_chunks": "received_at < ?", "log_records": "received_at < ?"}
"""Tables pruned row by row on SQLite only (partitioned by day on PostgreSQL)."""
_INDEXED = ("trace_index", "trace_tools")
"""Tables of the dashboard's trace search (:mod:`.search`), one or more rows per trace: a
trace's rows go with its ``traces`` row."""
_RUNS = "created_at < ? AND run_id NOT IN (SELECT run_id FROM run_baselines)"


@dataclass
class Pruned:
    """What :func:`prune` removed (or, with ``dry_run``, would remove): rows per table, the
    days dropped whole (PostgreSQL partitions, as ``YYYY-MM-DD``), and the store's size before
    and after (bytes: the database file on SQLite, the database on PostgreSQL)."""

    cutoff_s: float
    dry_run: bool
    rows: dict[str, int] = field(default_factory=dict)
    days: list[str] = field(default_factory=list)
    bytes_before: int = 0
    bytes_after: int = 0


def cutoff_for(now_s: float, older_than_s: float) -> float:
    """The start of the UTC day holding ``now_s - older_than_s`` (Unix s): everything received
    before it is older than ``older_than_s`` (between ``older_than_s`` and a day more is kept)."""
    return partitions.day_of(now_s - older_than_s) * partitions.DAY_S


def prune(
    db: Database,
    cutoff_s: float,
    *,
    runs: bool = False,
    dry_run: bool = False,
    full_vacuum: bool = True,
) -> Pruned:
    """Remove what is older than ``cutoff_s`` (see the module docstring); ``runs`` also stored
    runs created before it (not baselines). ``full_vacuum``: on a SQLite store made before
    auto-vacuum, rewrite the file once to give the space back.

    Raises:
        Exception: the driver's error (a batch already committed stays removed).
    """
    done = Pruned(cutoff_s, dry_run, bytes_before=store_bytes(db))
    tables = dict(_ROWS) if db.postgres else {**_RECEIVED, **_ROWS}
    if runs:
        tables["runs"] = _RUNS
    if db.postgres:
        _drop_days(db, cutoff_s, done)
    for table, where in tables.items():
        if dry_run:
            removed = _count(db, table, where, cutoff_s)
        elif table == "traces":
            removed = _delete_traces(db, where, cutoff_s)
        else:
            removed = _delete(db, table, where, cutoff_s)
        done.rows[table] = done.rows.get(table, 0) + removed
    if not dry_run and not db.postgres:
        reclaim(db, full_vacuum=full_vacuum)
    done.bytes_after = done.bytes_before if dry_run else store_bytes(db)
    return done


def _drop_days(db: Database, cutoff_s: float, done: Pruned) -> None:
    """PostgreSQL: drop (or count, with ``done.dry_run``) the day partitions before the
    cutoff, and count their rows."""
    last = partitions.day_of(cutoff_s)
    done.rows.update(dict.fromkeys(partitions.PARTITIONED, 0))
    old = [(t, d) for t, d in partitions.partitions(db, partitions.PARTITIONED) if d < last]
    for table, day in old:
        name = partitions.partition_name(table, day)
        (rows,) = db.execute(f"SELECT COUNT(*) FROM {name}").fetchone()
        done.rows[table] = done.rows.get(table, 0) + int(rows)
        if not done.dry_run:
            partitions.drop_day(db, table, day)
    done.days = sorted({partitions.date_of(day) for _, day in old})


def _count(db: Database, table: str, where: str, cutoff_s: float) -> int:
    args = (cutoff_s,) * where.count("?")
    return int(db.execute(f"SELECT COUNT(*) FROM {table} WHERE {where}", args).fetchone()[0])


def _delete(db: Database, table: str, where: str, cutoff_s: float) -> int:
    """Delete the matching rows :data:`BATCH_ROWS` per transaction; returns how many."""
    key = "ctid" if db.postgres else "rowid"
    total = 0
    while True:
        _begin(db)
        with db:
            cursor = db.execute(
                f"DELETE FROM {table} WHERE {key} IN"
                f" (SELECT {key} FROM {table} WHERE {where} LIMIT ?)",
                (*(cutoff_s,) * where.count("?"), BATCH_ROWS),
            )
            removed = max(int(cursor.rowcount), 0)
        total += removed
        if removed < BATCH_ROWS:
            return total


def _delete_traces(db: Database, where: str, cutoff_s: float) -> int:
    """Delete the matching ``traces`` rows :data:`BATCH_ROWS` per transaction, with their rows
    in the dashboard's trace index (:data:`_INDEXED`) in the same transaction; returns how
    many traces."""
    key = "ctid" if db.postgres else "rowid"
    total = 0
    while True:
        _begin(db)
        with db:
            gone = db.execute(
                f"DELETE FROM traces WHERE {key} IN"
                f" (SELECT {key} FROM traces WHERE {where} LIMIT ?) RETURNING trace_id",
                (cutoff_s, BATCH_ROWS),
            ).fetchall()
            for table in _INDEXED:
                db.executemany(f"DELETE FROM {table} WHERE trace_id = ?", gone)
        total += len(gone)
        if len(gone) < BATCH_ROWS:
            return total


def _begin(db: Database) -> None:
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")


def reclaim(db: Database, *, full_vacuum: bool = True) -> None:
    """SQLite: hand the free pages back to the file system (:data:`VACUUM_PAGES` per
    transaction) and truncate the WAL, so the file shrinks; a store without auto-vacuum is
    converted by one full ``VACUUM`` when ``full_vacuum``. PostgreSQL: nothing to do."""
    if db.postgres:
        return
    (mode,) = db.execute("PRAGMA auto_vacuum").fetchone()
    if int(mode) == 0:
        if not full_vacuum:
            return
        db.execute("PRAGMA auto_vacuum=INCREMENTAL")
        db.execute("VACUUM")
    while int(db.execute("PRAGMA freelist_count").fetchone()[0]):
        db.execute(f"PRAGMA incremental_vacuum({VACUUM_PAGES})").fetchall()
        db.conn.commit()
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()


def store_bytes(db: Database) -> int:
    """The store's size on disk: the SQLite file (its WAL apart), the PostgreSQL database."""
    if db.postgres:
        return int(db.execute("SELECT pg_database_size(current_database())").fetchone()[0])
    return os.path.getsize(db.location.removeprefix("sqlite:///"))


def retention_s(db: Database) -> float | None:
    """The receiver's retention period recorded in the store (s), or None."""
    row = db.execute(
        "SELECT value FROM store_settings WHERE name = ?", (_RETENTION_KEY,)
    ).fetchone()
    return float(row[0]) if row else None


def set_retention_s(db: Database, seconds: float | None) -> None:
    """Record the receiver's retention period (None: forget it)."""
    with db:
        db.execute("DELETE FROM store_settings WHERE name = ?", (_RETENTION_KEY,))
        if seconds is not None:
            db.execute(
                "INSERT INTO store_settings (name, value) VALUES (?, ?)",
                (_RETENTION_KEY, repr(float(seconds))),
            )
