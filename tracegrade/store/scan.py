"""Trace ids of a store in batches, read through a cursor instead of one list.

A store of millions of traces is scanned without holding every id: SQLite steps one
statement (``fetchmany``); PostgreSQL declares a server-side cursor (a named psycopg cursor,
in its own transaction) so the server sends ``batch_size`` rows at a time.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from tracegrade.store.database import query_batches
from tracegrade.store.traces import Store, trace_ids_query

__all__ = ["trace_id_batches"]


def trace_id_batches(
    store: Store,
    *,
    since_unix_nano: int | None = None,
    limit: int | None = None,
    trace_ids: Sequence[str] = (),
    batch_size: int = 256,
) -> Iterator[list[str]]:
    """The ids :meth:`Store.trace_ids` returns, in the same order, ``batch_size`` at a time.

    Raises:
        ValueError: ``batch_size`` < 1.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    sql, args = trace_ids_query(since_unix_nano, limit, trace_ids)
    for rows in query_batches(store.db, sql, args, batch_size, "tracegrade_trace_ids"):
        yield [row[0] for row in rows]
