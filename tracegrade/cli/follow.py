"""``tracegrade score --follow``: score traces as they settle in the store (production
sampling behind ``tracegrade collect``), one line per trace, until interrupted.

A trace is scored once it has *settled* (:meth:`~tracegrade.store.traces.Store.settled_since`:
its root or agent span arrived and no span came for ``quiet_s`` seconds), so partial traces
are never scored. A trace that receives spans after it was scored settles again and is
scored again (marked ``updated``).
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import click

from tracegrade.config import Config
from tracegrade.dataset import Dataset, Tier
from tracegrade.errors import ExitCode
from tracegrade.normalize import normalize_trace
from tracegrade.scoring import CaseResult, evaluate
from tracegrade.scoring.score import Scorer
from tracegrade.store.traces import Store

POLL_S = 0.5


@dataclass
class Follower:
    """Scores newly settled traces of a store (see the module docstring). ``since`` is a Unix
    time in seconds: traces whose last span arrived before it are not scored."""

    db: str | None
    dataset: Dataset | None
    scorers: Sequence[Scorer]
    config: Config
    quiet_s: float
    since: float = field(default_factory=time.time)
    threshold: float | None = None
    tier: Tier | None = None
    scored: dict[str, CaseResult] = field(default_factory=dict)

    def poll(self, store: Store) -> list[tuple[CaseResult, bool]]:
        """Score what settled since the last poll; returns (result, updated) pairs."""
        states = store.settled_since(self.since, quiet_s=self.quiet_s)
        if not states:
            return []
        self.since = max(state.last_received_at for state in states)
        traces = [normalize_trace(t) for t in store.load([s.trace_id for s in states]) if t.spans]
        if self.dataset is not None:  # only the cases these traces match, no "unmatched" noise
            results = [
                r
                for r in evaluate(
                    traces,
                    self.dataset,
                    self.scorers,
                    self.config,
                    tier=self.tier,
                    threshold=self.threshold,
                ).results
                if r.trace_id
            ]
        else:
            results = list(
                evaluate(traces, None, self.scorers, self.config, threshold=self.threshold).results
            )
        out = [(r, r.trace_id in self.scored) for r in results]
        self.scored.update({r.trace_id: r for r in results if r.trace_id})
        return out

    def run(
        self,
        stop: threading.Event,
        echo: Callable[[str], None] = click.echo,
        poll_s: float = POLL_S,
    ) -> list[CaseResult]:
        """Poll until ``stop`` is set; print one line per scored trace; returns the latest
        result of every trace scored."""
        with Store(self.db) as store:
            while not stop.is_set():
                for result, updated in self.poll(store):
                    echo(line(result, updated))
                stop.wait(poll_s)
        return list(self.scored.values())


def line(result: CaseResult, updated: bool = False) -> str:
    """``PASS|FAIL score trace_id [case id] [updated] reasons``."""
    verdict = "PASS" if result.passed else "FAIL"
    score = "  -  " if result.score is None else f"{result.score:.2f}"
    case = f" case={result.case_id}" if result.case_id else ""
    reasons = f"  {'; '.join(result.reasons[:3])}" if not result.passed and result.reasons else ""
    return f"{verdict} {score} {result.trace_id}{case}{' (updated)' if updated else ''}{reasons}"


def follow_until_stopped(follower: Follower) -> ExitCode:
    """Run ``follower`` until SIGINT/SIGTERM; print a summary; OK when every trace's latest
    result passed, else FAILED."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(
        f"tracegrade score --follow: scoring traces as they settle (quiet {follower.quiet_s:g} s); "
        "Ctrl-C to stop",
        err=True,
    )
    results = follower.run(stop)
    failed = sum(not r.passed for r in results)
    click.echo(
        f"tracegrade score --follow: {len(results)} traces scored, {failed} failed", err=True
    )
    return ExitCode.FAILED if failed else ExitCode.OK
