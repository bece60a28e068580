"""Retention: ``tracegrade prune --older-than DURATION`` once, and ``tracegrade collect
--retention DURATION`` (a receiver that prunes its store every hour and records the period, the
default horizon of ``score --follow`` workers). What is removed and how, per engine:
:mod:`tracegrade.store.retention`."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from tracegrade.pipeline.reading import parse_duration
from tracegrade.store import retention
from tracegrade.store.retention import Pruned
from tracegrade.store.traces import Store

PRUNE_EVERY_S = 3600.0
"""How often a receiver with a retention period prunes its store (s)."""
FIRST_PRUNE_S = 5.0
"""A receiver's first prune, this long after it starts (s)."""

__all__ = ["PruneOptions", "Pruned", "prune", "retained"]


@dataclass(frozen=True)
class PruneOptions:
    """``prune``: remove what the store received before ``older_than`` ago (``30d``); with
    ``dry_run`` only count it; ``runs`` removes stored runs created before then too (never
    a baseline)."""

    older_than: str
    db: str | None = None
    dry_run: bool = False
    runs: bool = False


def prune(options: PruneOptions, now_s: float | None = None) -> Pruned:
    """Prune the store at ``options.db`` (see :mod:`tracegrade.store.retention`).

    Raises:
        ConfigError: a bad ``older_than``.
        StoreError: the store cannot be opened.
    """
    older_than_s = parse_duration(options.older_than, "--older-than")
    cutoff_s = retention.cutoff_for(time.time() if now_s is None else now_s, older_than_s)
    with Store(options.db) as store:
        return retention.prune(
            store.db, cutoff_s, runs=options.runs, dry_run=options.dry_run, full_vacuum=True
        )


@contextmanager
def retained(
    db: str | None, period: str | None, on_text: Callable[[str], None]
) -> Iterator[float | None]:
    """While the block runs, keep the store at ``db`` to ``period`` (``30d``; None: nothing
    to do): the period is recorded in the store, and a thread prunes what
    is older every :data:`PRUNE_EVERY_S` (the first time :data:`FIRST_PRUNE_S` after the
    start), telling ``on_text`` what it removed or why it could not. Yields the period (s).

    Raises:
        ConfigError: a bad ``period``.
        StoreError: the store cannot be opened.
    """
    if period is None:
        yield None
        return
    seconds = parse_duration(period, "--retention")
    with Store(db) as store:
        retention.set_retention_s(store.db, seconds)
    stop = threading.Event()
    thread = threading.Thread(
        target=_prune_every, args=(db, seconds, stop, on_text), name="tracegrade-retention"
    )
    thread.daemon = True
    thread.start()
    try:
        yield seconds
    finally:
        stop.set()
        thread.join()


def _prune_every(
    db: str | None, seconds: float, stop: threading.Event, on_text: Callable[[str], None]
) -> None:
    wait_s = FIRST_PRUNE_S
    while not stop.wait(wait_s):
        wait_s = PRUNE_EVERY_S
        try:
            with Store(db) as store:
                cutoff_s = retention.cutoff_for(time.time(), seconds)
                done = retention.prune(store.db, cutoff_s, full_vacuum=False)
        except Exception as exc:  # noqa: BLE001 (told, and tried again in an hour)
            on_text(f"retention: could not prune the store: {exc}")
            continue
        if any(done.rows.values()):
            on_text(f"retention: {summary(done)}")


def summary(done: Pruned) -> str:
    """One line: what a prune removed (or would), and the store's size before and after."""
    verb = "would remove" if done.dry_run else "removed"
    rows = ", ".join(f"{count:,} {table}" for table, count in done.rows.items() if count)
    days = f" (days {done.days[0]} to {done.days[-1]})" if done.days else ""
    size = f"{done.bytes_before / 2**20:,.1f} MiB"
    if not done.dry_run:
        size += f" -> {done.bytes_after / 2**20:,.1f} MiB"
    cutoff = time.strftime("%Y-%m-%d", time.gmtime(done.cutoff_s))
    return f"{verb} what arrived before {cutoff}: {rows or 'nothing'}{days}; store {size}"
