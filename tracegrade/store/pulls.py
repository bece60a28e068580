"""Where the last pull from each trace backend ended (the ``source_pulls`` table), so the next
``tracegrade import --from SOURCE`` resumes there.

A pull is keyed by what it asked (backend, URL without credentials, project and search): the
same question asked again goes on from the newest trace start the last one found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tracegrade.store.traces import Store


@dataclass(frozen=True)
class LastPull:
    """The end of a stream of pulls: the newest trace start found (Unix ns), how many traces
    they stored in all, and when the last one ran (Unix s)."""

    key: str
    until_unix_nano: int
    traces: int
    pulled_at: float


def last_pull(store: Store, key: str) -> LastPull | None:
    """Where the pulls of ``key`` ended; None before the first."""
    row = store.db.execute(
        "SELECT source, until_unix_nano, traces, pulled_at FROM source_pulls WHERE source = ?",
        (key,),
    ).fetchone()
    return None if row is None else LastPull(*row)


def record_pull(store: Store, key: str, until_unix_nano: int, traces: int) -> None:
    """Move the end of ``key``'s pulls to ``until_unix_nano`` (never back) and add ``traces``."""
    newest = store.db.greatest("source_pulls.until_unix_nano", "excluded.until_unix_nano")
    with store.db:
        store.db.execute(
            "INSERT INTO source_pulls (source, until_unix_nano, traces, pulled_at)"
            " VALUES (?, ?, ?, ?) ON CONFLICT (source) DO UPDATE SET"
            f" until_unix_nano = {newest},"
            " traces = source_pulls.traces + excluded.traces, pulled_at = excluded.pulled_at",
            (key, until_unix_nano, traces, time.time()),
        )
