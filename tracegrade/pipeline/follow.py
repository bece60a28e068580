"""``tracegrade score --follow``: score traces as they settle in the store (production
sampling behind ``tracegrade collect``), one line per trace, until interrupted.

Traces wait in the store's outbox, queued by the writer in the transaction that stored their
spans (:mod:`tracegrade.store.outbox`); a trace is claimable once it has settled (its root or
agent span stored and no span for ``quiet_s`` seconds; ``rootless_quiet_s`` without such a
span), so partial traces are not scored, and no trace depends on a time watermark. A trace that
receives spans after it was scored is queued again and scored again (marked ``updated``). A
follower starts with every queued trace within its horizon (``since``; by default the store's
retention, else everything queued): traces that settled while no worker ran are scored.

Several workers may follow one store (PostgreSQL, or SQLite on one machine), and one follower
may run ``workers`` scoring processes (:mod:`tracegrade.pipeline.follow_workers`): each claims
a batch for a lease (:mod:`tracegrade.store.follow`), renews it while scoring
(:mod:`tracegrade.store.leases`), and stores each result with the claim, so no trace is
scored twice or missed, even when a worker dies. While batches come back full, the next is
claimed at once; the follower waits ``poll_s`` only when the queue had less. ``sample`` keeps
a fraction of traces by trace id (:mod:`tracegrade.sampling`): every worker makes the same
choice. With ``window_s``, each closed window's aggregates per ``service.name`` are stored,
printed, and checked against the config's thresholds (:mod:`tracegrade.report.windows`).
"""

from __future__ import annotations

import multiprocessing
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Dataset, Tier
from tracegrade.errors import ConfigError
from tracegrade.normalize import normalize_trace
from tracegrade.pipeline._score import ScoreOptions, plan_run
from tracegrade.pipeline.export import RunExport, open_export
from tracegrade.report import windows
from tracegrade.report.alerts import post_alert
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.sampling import sampled
from tracegrade.scoring import CaseResult, evaluate
from tracegrade.scoring.score import Scorer
from tracegrade.store import follow as shared
from tracegrade.store import retention
from tracegrade.store.leases import Leases
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

POLL_S = 0.5
"""Seconds a follower waits when the queue held less than a batch."""
DEFAULT_BATCH = 64
"""Traces claimed at a time: ~0.2 s of scoring for tau-bench traces."""

OnResult = Callable[[CaseResult, bool], None]
OnText = Callable[[str], None]


def worker_name() -> str:
    """A name unique to this process: host, pid and a random tag (claims are checked by it)."""
    return f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"


@dataclass
class Follower:
    """Scores the store's queued traces as they settle (see the module docstring). ``since``
    is a Unix time in seconds: traces whose last write is older are left queued (None: the
    store's retention period, else no bound)."""

    db: str | None
    dataset: Dataset | None
    scorers: Sequence[Scorer]
    config: Config
    quiet_s: float
    since: float | None = None
    threshold: float | None = None
    tier: Tier | None = None
    passed: dict[str, bool] = field(default_factory=dict)
    """Trace id -> whether its latest result passed (a few bytes per trace: a follower runs for
    weeks, so full results are printed and stored, never kept)."""
    sample: float | None = None
    """Keep this fraction of traces, by trace id (None: all)."""
    window_s: float | None = None
    """Store and print aggregates per window of this many seconds (None: no windows)."""
    alert_webhook: str | None = None
    worker: str = field(default_factory=worker_name)
    lease_s: float = shared.DEFAULT_LEASE_S
    batch: int = DEFAULT_BATCH
    """Traces claimed per poll."""
    rootless_quiet_s: float = shared.DEFAULT_ROOTLESS_QUIET_S
    workers: int = 1
    """Scoring processes (:func:`tracegrade.pipeline.follow_workers.run_follower`)."""
    leases: Leases | None = None
    """Renews the claims of a batch while it is scored (set by :meth:`run`)."""
    busy: bool = False
    """The last poll claimed a full batch: more may be waiting."""
    open_window: float | None = None
    export: RunExport = field(default_factory=lambda: RunExport(None, RunContext()))
    """Where results and closed windows' figures are sent (``--export-otlp``); closed when
    :meth:`run` returns."""

    def settling(self, store: Store) -> shared.Settling:
        """When a queued trace is claimable, and this follower's horizon."""
        since = self.since
        if since is None:
            kept_s = retention.retention_s(store.db)
            since = None if kept_s is None else time.time() - kept_s
        return shared.Settling(self.quiet_s, self.rootless_quiet_s, since)

    def poll(self, store: Store) -> list[tuple[CaseResult, bool]]:
        """Claim a batch of settled traces, score it and store the results with the claims;
        returns the (result, updated) pairs this worker stored."""
        claims = shared.claim(store.db, self.worker, self.batch, self.settling(store), self.lease_s)
        self.busy = len(claims) == self.batch
        if not claims:
            return []
        keeping = self.leases.holding([c.trace_id for c in claims]) if self.leases else None
        with keeping or nullcontext():
            return self._score_claims(store, claims)

    def _score_claims(
        self, store: Store, claims: list[shared.Claim]
    ) -> list[tuple[CaseResult, bool]]:
        kept = {
            c.trace_id: c for c in claims if self.sample is None or sampled(c.trace_id, self.sample)
        }
        traces = [normalize_trace(t) for t in store.load(list(kept)) if t.spans]
        scored = [
            (kept.pop(result.trace_id), result, trace)
            for result, trace in self._score(traces)
            if result.trace_id in kept
        ]
        items: list[tuple[shared.Claim, shared.ResultRow | None]] = [
            (claimed, _row(result, trace)) for claimed, result, trace in scored
        ]
        closed = {claimed.trace_id for claimed, _, _ in scored}
        # not sampled, no spans, or no case matched: closed without a result
        items += [(c, None) for c in claims if c.trace_id not in closed]
        stored = shared.complete_all(store.db, self.worker, items)
        out = [
            (result, claimed.updated or result.trace_id in self.passed)
            for (claimed, result, _), ok in zip(scored, stored, strict=False)
            if ok
        ]
        self.passed.update({r.trace_id: r.passed for r, _ in out if r.trace_id})
        return out

    def _score(self, traces: list[AgentTrace]) -> list[tuple[CaseResult, AgentTrace]]:
        by_id = {t.trace_id: t for t in traces}
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
        return [(r, by_id[r.trace_id]) for r in results if r.trace_id in by_id]

    def close_windows(self, store: Store, now: float | None = None) -> list[str]:
        """Aggregate every window that closed since the last call (see
        :mod:`tracegrade.report.windows`); store each, and return the lines to print
        (aggregates, then alerts). Only the worker that first stores a window alerts."""
        if self.window_s is None:
            return []
        now = time.time() if now is None else now
        current = windows.window_start(now, self.window_s)
        if self.open_window is None:
            self.open_window = current
        lines = []
        while self.open_window < current:
            start, self.open_window = self.open_window, self.open_window + self.window_s
            rows = shared.results_between(store.db, start, start + self.window_s)
            self.export.window(rows, self.window_s)
            for service, aggregates in windows.aggregate(rows).items():
                first = shared.save_window(store.db, start, self.window_s, service, aggregates)
                lines.append(windows.line(start, self.window_s, service, aggregates))
                if first:
                    lines += self._alert(start, service, aggregates)
        return lines

    def partial_window(self, store: Store, now: float | None = None) -> list[str]:
        """The lines of the window still open at ``now`` (what a follower has scored in it so
        far), marked partial; printed when the follower stops, neither stored nor alerted on
        (the window has not closed: another worker, or this one restarted, may add to it)."""
        if self.window_s is None:
            return []
        now = time.time() if now is None else now
        start = windows.window_start(now, self.window_s)
        rows = shared.results_between(store.db, start, now + 1e-6)
        return [
            windows.line(start, self.window_s, service, aggregates, partial_until_s=now)
            for service, aggregates in windows.aggregate(rows).items()
        ]

    def _alert(self, start: float, service: str, aggregates: dict[str, object]) -> list[str]:
        rules = self.config.windows
        crossed = windows.breaches(
            aggregates, rules.get("thresholds", {}), int(rules.get("min_traces", 1))
        )
        if not crossed:
            return []
        text = f"ALERT service={service} window {self.window_s:g}s: {'; '.join(crossed)}"
        if self.alert_webhook:
            alert = {"service": service, "window_start_s": start, "window_s": self.window_s}
            problem = post_alert(self.alert_webhook, text, {**alert, "aggregates": aggregates})
            return [text] + ([f"warning: {problem}"] if problem else [])
        return [text]

    def run(
        self, stop: threading.Event, on_result: OnResult, on_text: OnText, poll_s: float = POLL_S
    ) -> dict[str, bool]:
        """Score in this process until ``stop`` is set, telling ``on_result`` of each scored
        trace (its result and whether it updates an earlier one) and ``on_text`` of each
        window line (and of the export's first failure); returns whether the latest result of
        every trace scored passed (trace id -> passed). Closes the export.
        :func:`tracegrade.pipeline.follow_workers.run_follower` runs ``workers`` processes."""
        on_result = self.exported(on_result)
        try:
            with Store(self.db) as store, Leases(self.db, self.worker, self.lease_s) as leases:
                self.leases = leases
                try:
                    while not stop.is_set():
                        for result, updated in self.poll(store):
                            on_result(result, updated)
                        self.tell_windows(store, on_text)
                        if not self.busy:
                            stop.wait(poll_s)
                finally:
                    self.leases = None
                for text in self.partial_window(store):
                    on_text(text)
        finally:
            self.close_export(on_text)
        return self.passed

    def exported(self, on_result: OnResult) -> OnResult:
        """``on_result`` that also sends each result to the export (``--export-otlp``)."""

        def told(result: CaseResult, updated: bool) -> None:
            on_result(result, updated)
            self.export.result(result)

        return told

    def close_export(self, on_text: OnText) -> None:
        """Send what is left to the export and stop it; ``on_text`` gets its warning."""
        for text in self.export.close():
            on_text(f"warning: {text}")

    def tell_windows(self, store: Store, on_text: OnText) -> None:
        """Tell ``on_text`` the lines of every window that closed since the last call."""
        for text in self.close_windows(store):
            on_text(text)
        if problem := self.export.problem():
            on_text(f"warning: {problem}")


def _row(result: CaseResult, trace: AgentTrace) -> shared.ResultRow:
    """What the store keeps of one followed trace's result (for windows and counting)."""
    from tracegrade.report.document import case_dict

    service = trace.resource_attributes.get("service.name")
    return shared.ResultRow(
        service=None if service is None else str(service),
        passed=result.passed,
        score=result.score,
        hallucinated=result.hallucinated,
        tool_calls=len(trace.tool_calls),
        failed_tool_calls=sum(1 for c in trace.tool_calls if c.error),
        duration_ms=result.usage.duration_ms if result.usage else None,
        cost_usd=result.usage.cost_usd if result.usage else None,
        result=case_dict(result),
    )


def make_follower(
    options: ScoreOptions,
    *,
    quiet_s: float,
    window: str | None,
    lease_s: float,
    rootless_quiet_s: float = shared.DEFAULT_ROOTLESS_QUIET_S,
) -> tuple[Follower, Any]:
    """The follower of ``score --follow`` for ``options`` (its dataset, config, scorers and
    judge as a scoring run resolves them: :func:`tracegrade.pipeline._score.plan_run`; its
    scoring processes: ``options.workers``), and its judge (None without one), whose cache the
    caller keeps open while following. Without ``options.since`` the follower's horizon is
    the store's retention period (every queued trace when none is set).

    Raises:
        ConfigError: as :func:`tracegrade.pipeline._score.plan_run`; a bad ``window``; several
            workers where processes cannot be forked.
    """
    resolved = plan_run(options)
    since_s = resolved.since_ns / 1e9 if resolved.since_ns is not None else None
    if resolved.workers > 1 and "fork" not in multiprocessing.get_all_start_methods():
        raise ConfigError(
            f"--workers {resolved.workers} with --follow forks scoring processes, which this "
            "platform cannot: run several `score --follow` commands instead"
        )
    follower = Follower(
        options.db,
        resolved.dataset,
        resolved.scorers,
        resolved.config,
        quiet_s=quiet_s,
        threshold=options.threshold,
        tier=options.tier,
        since=since_s,
        sample=options.sample,
        window_s=windows.parse_window(window) if window else None,
        alert_webhook=options.alert_webhook,
        lease_s=lease_s,
        export=open_export(options.export_otlp, _context(resolved.dataset), periodic=True),
        rootless_quiet_s=rootless_quiet_s,
        workers=resolved.workers,
    )
    return follower, resolved.judge


def _context(dataset: Dataset | None) -> RunContext:
    """What a follower's exported records carry: the dataset's name (no run id: a follower
    is no stored run)."""
    return RunContext(dataset=dataset.name if dataset else None)
