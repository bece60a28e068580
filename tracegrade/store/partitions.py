"""Span and log storage by day on PostgreSQL: declarative partitions, so a day past the
retention period is dropped whole (no row-by-row ``DELETE``, no bloat, nothing to vacuum).

``span_chunks`` and ``log_records`` are partitioned by ``RANGE (day)``, where ``day`` is the
UTC day of ``received_at`` (:func:`day_of`, days since 1970-01-01); each day is a table
``span_chunks_dYYYYMMDD`` / ``log_records_dYYYYMMDD``. Unique keys include the day (PostgreSQL
requires the partition key in them), so a resend is deduplicated within its day; spans are
deduplicated by span id when read anyway, log records by digest (:meth:`Store.load`).

A writer makes sure the partitions of today and tomorrow exist before it writes
(:class:`Days`): a new day's table is created apart and then attached, which takes only a
``SHARE UPDATE EXCLUSIVE`` lock on the parent (inserts and reads go on). The partitioned
tables have no foreign keys (to ``resources`` and ``scopes``): attaching or dropping a day
would otherwise lock those tables against every writer; the ids are written with the rows, in
one transaction. SQLite stores are not partitioned (``tracegrade prune`` deletes their old
rows in batches).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from tracegrade.store.database import Database

DAY_S = 86_400
PARTITIONED = ("span_chunks", "log_records")
"""The tables partitioned by day on PostgreSQL."""
LOCK_TIMEOUT_MS = 2_000
"""Longest a partition's attachment waits for a lock before it gives up (tried again by the
next write)."""
_ADVISORY_LOCK = 7245
"""Serialises partition creation across receivers (``pg_advisory_xact_lock``)."""

_COLUMNS = {  # no foreign keys: attaching or dropping a day would lock resources and scopes
    "span_chunks": """
        id BIGINT NOT NULL DEFAULT nextval('span_chunk_ids'), digest BYTEA NOT NULL,
        trace_id TEXT NOT NULL, start_unix_nano BIGINT NOT NULL, span_count BIGINT NOT NULL,
        spans BYTEA NOT NULL, resource_id BIGINT NOT NULL, scope_id BIGINT NOT NULL,
        received_at DOUBLE PRECISION NOT NULL, day INTEGER NOT NULL,
        PRIMARY KEY (id, day), UNIQUE (digest, day)""",
    "log_records": """
        id BIGINT NOT NULL DEFAULT nextval('log_record_ids'), digest BYTEA NOT NULL,
        trace_id TEXT, span_id TEXT, time_unix_nano BIGINT NOT NULL,
        resource_id BIGINT NOT NULL, scope_id BIGINT NOT NULL, record BYTEA NOT NULL,
        received_at DOUBLE PRECISION NOT NULL, day INTEGER NOT NULL,
        PRIMARY KEY (id, day), UNIQUE (digest, day)""",
}
_SEQUENCES = {"span_chunks": "span_chunk_ids", "log_records": "log_record_ids"}
_PAYLOADS = {"span_chunks": "spans", "log_records": "record"}


def day_of(unix_s: float) -> int:
    """The UTC day (days since 1970-01-01) holding ``unix_s``."""
    return int(unix_s // DAY_S)


def date_of(day: int) -> str:
    """``2026-11-27``: the UTC date of ``day``."""
    return dt.datetime.fromtimestamp(day * DAY_S, dt.UTC).date().isoformat()


def partition_name(table: str, day: int) -> str:
    """``span_chunks_d20261127``: the partition of ``table`` holding ``day``."""
    return f"{table}_d{date_of(day).replace('-', '')}"


def convert(db: Database) -> None:
    """Migration: turn the unpartitioned ``span_chunks`` and ``log_records`` of a store into
    day-partitioned tables holding the same rows (ids kept). Runs inside the migration's
    transaction; PostgreSQL only."""
    lz4 = _has_lz4(db)
    for table in PARTITIONED:
        sequence = _SEQUENCES[table]
        (next_id,) = db.execute(f"SELECT COALESCE(MAX(id), 0) + 1 FROM {table}").fetchone()
        db.execute(f"CREATE SEQUENCE {sequence} START {int(next_id)}")
        db.execute(f"CREATE TABLE {table}_by_day ({_COLUMNS[table]}) PARTITION BY RANGE (day)")
        if lz4:
            db.execute(
                f"ALTER TABLE {table}_by_day ALTER COLUMN {_PAYLOADS[table]} SET COMPRESSION lz4"
            )
        days = db.execute(f"SELECT DISTINCT FLOOR(received_at / {DAY_S})::int FROM {table}")
        for (day,) in days.fetchall():
            _create(db, table, int(day), parent=f"{table}_by_day")
        columns = _copied_columns(table)
        db.execute(
            f"INSERT INTO {table}_by_day ({columns}, day) SELECT {columns},"
            f" FLOOR(received_at / {DAY_S})::int FROM {table}"
        )
        db.execute(f"DROP TABLE {table}")
        db.execute(f"ALTER TABLE {table}_by_day RENAME TO {table}")
        db.execute(f"ALTER SEQUENCE {sequence} OWNED BY {table}.id")
    db.execute("CREATE INDEX span_chunks_by_trace ON span_chunks(trace_id)")
    db.execute("CREATE INDEX log_records_by_trace ON log_records(trace_id)")


def _copied_columns(table: str) -> str:
    if table == "span_chunks":
        return (
            "id, digest, trace_id, start_unix_nano, span_count, spans, resource_id, scope_id,"
            " received_at"
        )
    return (
        "id, digest, trace_id, span_id, time_unix_nano, resource_id, scope_id, record, received_at"
    )


def _has_lz4(db: Database) -> bool:
    row = db.execute(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    ).fetchone()
    return bool(row and row[0])


def _create(db: Database, table: str, day: int, parent: str | None = None) -> None:
    """Create ``table``'s partition for ``day`` inside the current transaction (the
    migration: the parent is new, so nothing else waits on its lock)."""
    db.execute(
        f"CREATE TABLE {partition_name(table, day)} PARTITION OF {parent or table}"
        f" FOR VALUES FROM ({day}) TO ({day + 1})"
    )


def attach_day(db: Database, day: int) -> None:
    """Make sure both tables have a partition for ``day``: created as a table of its own, then
    attached (``SHARE UPDATE EXCLUSIVE`` on the parent: writers and readers go on), in one
    transaction serialised across receivers.

    Raises:
        Exception: the driver's error, e.g. a lock not obtained within
            :data:`LOCK_TIMEOUT_MS` (the caller tries again later).
    """
    with db:
        db.execute(f"SELECT pg_advisory_xact_lock({_ADVISORY_LOCK})")
        db.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}")
        existing = set(partitions(db, PARTITIONED))
        for table in PARTITIONED:
            name = partition_name(table, day)
            if (table, day) in existing:
                continue
            db.execute(
                f"CREATE TABLE IF NOT EXISTS {name} (LIKE {table} INCLUDING DEFAULTS"
                " INCLUDING STORAGE INCLUDING COMPRESSION)"
            )
            db.execute(
                f"ALTER TABLE {table} ATTACH PARTITION {name} FOR VALUES FROM ({day})"
                f" TO ({day + 1})"
            )


def partitions(db: Database, tables: Iterable[str]) -> list[tuple[str, int]]:
    """(table, day) of every attached day partition of ``tables``, oldest day first."""
    rows = db.execute(
        "SELECT parent.relname, child.relname FROM pg_inherits i"
        " JOIN pg_class parent ON parent.oid = i.inhparent"
        " JOIN pg_class child ON child.oid = i.inhrelid"
        " JOIN pg_namespace n ON n.oid = child.relnamespace"
        " WHERE n.nspname = current_schema() AND parent.relname = ANY(?)",
        (list(tables),),
    ).fetchall()
    out = []
    for parent, child in rows:
        stamp = child.removeprefix(f"{parent}_d")
        date = dt.datetime.strptime(stamp, "%Y%m%d").replace(tzinfo=dt.UTC)
        out.append((parent, day_of(date.timestamp())))
    return sorted(out, key=lambda item: (item[1], item[0]))


def drop_day(db: Database, table: str, day: int) -> None:
    """Detach ``table``'s partition of ``day`` without blocking writers (``DETACH ...
    CONCURRENTLY``, outside a transaction) and drop it: its disk space is freed at once."""
    name = partition_name(table, day)
    pending = db.execute(
        "SELECT inhdetachpending FROM pg_inherits WHERE inhrelid = ?::regclass", (name,)
    ).fetchone()
    if pending is not None:
        mode = "FINALIZE" if pending[0] else "CONCURRENTLY"  # a detach interrupted earlier
        db.execute(f"ALTER TABLE {table} DETACH PARTITION {name} {mode}")
    db.execute(f"DROP TABLE IF EXISTS {name}")


def size_bytes(db: Database, table: str, day: int | None = None) -> int:
    """Bytes on disk of one day's partition of ``table`` (with its indexes and TOAST), or of
    every partition when ``day`` is None."""
    if day is not None:
        names = [partition_name(table, day)]
    else:
        names = [partition_name(t, d) for t, d in partitions(db, [table])]
    total = 0
    for name in names:
        (size,) = db.execute("SELECT pg_total_relation_size(?::regclass)", (name,)).fetchone()
        total += int(size or 0)
    return total


RETRY_S = 60.0
"""After tomorrow's partition could not be attached, how long a writer waits to try again."""


class Days:
    """The days whose partitions one writer made sure exist (PostgreSQL; a no-op on SQLite).
    Call :meth:`ensure` before a write's transaction."""

    def __init__(self) -> None:
        self._ready: set[int] = set()
        self._retry_at = 0.0

    def ensure(self, db: Database, unix_s: float) -> None:
        """Partitions for the day of ``unix_s`` and the next one (made ahead, so midnight needs
        no lock). A failure to attach tomorrow's is tried again :data:`RETRY_S` later;
        today's raises.

        Raises:
            Exception: today's partition could not be made (the write would fail too).
        """
        if not db.postgres:
            return
        today = day_of(unix_s)
        if today not in self._ready:
            attach_day(db, today)
            self._ready.add(today)
        if today + 1 in self._ready or unix_s < self._retry_at:
            return
        try:
            attach_day(db, today + 1)
        except Exception:  # noqa: BLE001 (a lock not had in time: a later write tries again)
            self._retry_at = unix_s + RETRY_S
            return
        self._ready.add(today + 1)
