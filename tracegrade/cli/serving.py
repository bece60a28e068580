"""``collect``'s console while the receiver runs: its readiness line, a status line every
few seconds (``--verbose``), and a clean stop on SIGINT/SIGTERM."""

from __future__ import annotations

import signal
import threading
import time

import click

from tracegrade.collector.receiver import Receiver

STATUS_EVERY_S = 10.0


def _status_line(receiver: Receiver, previous: tuple[float, int]) -> tuple[str, tuple[float, int]]:
    now, stats = time.monotonic(), receiver.stats
    rate = (stats.stored_items - previous[1]) / max(now - previous[0], 1e-9)
    line = (
        f"tracegrade collect: {rate:,.0f} items/s stored, {stats.stored_items:,} total, "
        f"queue {stats.queue_depth} ({stats.queue_bytes / 1e6:.1f} MB), "
        f"rejected {stats.rejected_items:,}, "
        f"throttled {stats.throttled_requests:,}, failed {stats.failed_requests:,}"
    )
    return line, (now, stats.stored_items)


def serve(receiver: Receiver, verbose: bool, every_s: float) -> None:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(receiver.readiness_line(), err=False)
    mark = (time.monotonic(), 0)
    while not stop.wait(every_s if verbose else 3600):
        line, mark = _status_line(receiver, mark)
        click.echo(line, err=True)
    click.echo("tracegrade collect: stopping; writing what is queued", err=True)
