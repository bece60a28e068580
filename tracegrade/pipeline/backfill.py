"""``tracegrade backfill --since 7d``: score every stored trace in the horizon that the current
evaluator has not scored, exactly once, at a bounded rate, beside live followers.

The evaluator is what ``score --follow`` with the same options would be
(:mod:`tracegrade.scoring.identity`): a new dataset version, scorer version or config is a
new evaluator, and the stored traces it has not scored are its backlog. A worker claims them
a batch at a time in trace id order (:mod:`tracegrade.store.backfill`: traces queued for the
live followers, eval runs' traces and those it already scored or went through are left
alone), renews its leases while it scores (:class:`~tracegrade.store.leases.Leases`), and
stores each result with its claim. Several backfill workers may share the backlog; one killed
(``kill -9``) leaves claims that expire after one lease; started again, a backfill goes on
where the backlog stands (it holds no state of its own). Results are stored as not live: the
dashboard and ``--export-otlp`` see them (each carries the evaluator's identity), windows do
not count them (they count what followers scored as traffic arrived). The sampling rules, the
judge budget and the export are the follower's.

``max_rate`` bounds the traces scored per second (the store and the judge are shared with live
traffic); batches are sized to it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from tracegrade.errors import ConfigError
from tracegrade.judge.budget import BudgetLimits
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.follow import Follower, make_follower
from tracegrade.scoring import CaseResult
from tracegrade.store import backfill as ledger
from tracegrade.store.follow import DEFAULT_LEASE_S
from tracegrade.store.leases import Leases
from tracegrade.store.traces import Store

DEFAULT_MAX_RATE = 50.0
"""Traces scored per second by one backfill worker unless ``--max-rate`` says otherwise."""
WAIT_S = 1.0
"""How long a worker that found nothing waits while other workers hold claims."""

OnResult = Callable[[CaseResult], None]


@dataclass
class Backfill:
    """One backfill worker (see the module docstring): ``follower`` holds what it scores
    with (dataset, scorers, config, sampling rules, evaluator, judge, export) and the
    horizon (``follower.since``, Unix s)."""

    follower: Follower
    max_rate: float | None = DEFAULT_MAX_RATE
    """Traces per second at most (None: no bound)."""
    batch: int = 64
    lease_s: float = DEFAULT_LEASE_S
    scored: int = 0
    failed: int = 0
    passed_over: int = 0
    """Traces claimed and left without a result (the sampling rules, no case matched)."""
    started: float = field(default_factory=time.monotonic)

    @property
    def evaluator(self) -> str:
        """The current evaluator's id."""
        return self.follower.identity.id

    @property
    def worker(self) -> str:
        """This worker's name (unique to its process)."""
        return self.follower.worker

    @property
    def batch_size(self) -> int:
        """Traces claimed at a time: ``batch``, at most a second's worth of ``max_rate``."""
        if self.max_rate is None:
            return self.batch
        return max(1, min(self.batch, int(self.max_rate)))

    def step(self, store: Store, leases: Leases | None, after: str) -> tuple[list[CaseResult], str]:
        """Claim, score and complete one batch of trace ids above ``after``; the results
        stored and the last trace id claimed ("" when nothing was)."""
        claims = ledger.claim(
            store.db,
            self.evaluator,
            self.worker,
            self.batch_size,
            self.follower.since,
            self.lease_s,
            after,
        )
        if not claims:
            return [], ""
        keeping = leases.holding([c.trace_id for c in claims]) if leases else nullcontext()
        with keeping:
            by_id = {c.trace_id: c for c in claims}
            scored = self.follower.score_stored(store, list(by_id))
            rows = {result.trace_id: row for result, row in scored}
            items = [(c, rows.get(c.trace_id)) for c in claims]
            done = ledger.complete(store.db, self.evaluator, self.worker, items)
        completed = {c.trace_id for c, ok in zip(claims, done, strict=True) if ok}
        results = [r for r, _ in scored if r.trace_id in completed]
        for result in results:
            self.follower.versions[result.trace_id or ""] = by_id[result.trace_id or ""].version
        self.scored += len(results)
        self.failed += sum(not r.passed for r in results)
        self.passed_over += len(completed) - len(results)
        return results, claims[-1].trace_id

    def run(
        self, stop: threading.Event, on_result: OnResult, on_text: Callable[[str], None]
    ) -> None:
        """Work through the backlog until it is empty (or ``stop`` is set), telling
        ``on_result`` of each stored result; closes the export."""
        told = self.follower.exported(lambda result, _: on_result(result))
        renew = self._renew
        try:
            with (
                Store(self.follower.db) as store,
                Leases(self.follower.db, self.worker, self.lease_s, renew) as leases,
            ):
                self.follower.register(store)
                after = ""
                while not stop.is_set():
                    results, last = self.step(store, leases, after)
                    for result in results:
                        told(result, False)
                    if last:
                        after = last
                        self._pace(stop)
                    elif after:
                        after = ""  # a pass ended: once more from the start (expired claims)
                    elif ledger.held_elsewhere(store.db, self.evaluator, self.worker):
                        stop.wait(WAIT_S)  # others hold the rest: theirs may yet expire
                    else:
                        return
        finally:
            self.follower.close_export(on_text)

    def _renew(self, db: Any, worker: str, trace_ids: set[str], lease_s: float) -> set[str]:
        return ledger.renew(db, self.evaluator, worker, sorted(trace_ids), lease_s)

    def _pace(self, stop: threading.Event) -> None:
        """Wait until the traces scored so far are within ``max_rate``."""
        if self.max_rate is None:
            return
        ahead_s = (self.scored + self.passed_over) / self.max_rate - (
            time.monotonic() - self.started
        )
        if ahead_s > 0:
            stop.wait(ahead_s)

    @property
    def rate(self) -> float:
        """Traces scored per second so far."""
        elapsed = time.monotonic() - self.started
        return self.scored / elapsed if elapsed > 0 else 0.0


def make_backfill(
    options: ScoreOptions,
    *,
    max_rate: float | None,
    lease_s: float = DEFAULT_LEASE_S,
    batch: int = 64,
    judge_budget: BudgetLimits | None = None,
) -> tuple[Backfill, Any]:
    """The backfill worker of ``options`` (as :func:`tracegrade.pipeline.follow.make_follower`
    resolves them; ``options.since`` is the horizon and is required) and its judge (None
    without one), whose cache the caller keeps open while it runs.

    Raises:
        ConfigError: no ``since``; as :func:`~tracegrade.pipeline.follow.make_follower`.
    """
    if not options.since:
        raise ConfigError("backfill needs --since: how far back to score, e.g. 7d")
    if options.workers != 1:
        raise ConfigError("backfill scores in one process: start several to add workers")
    follower, judge = make_follower(
        options, quiet_s=0.0, window=None, lease_s=lease_s, judge_budget=judge_budget
    )
    return Backfill(follower, max_rate=max_rate, lease_s=lease_s, batch=batch), judge
