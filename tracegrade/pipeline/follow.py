"""``tracegrade score --follow``: score traces as they settle in the store (production
sampling behind ``tracegrade collect``), one line per trace, until interrupted.

A trace is scored once it has *settled* (:meth:`~tracegrade.store.traces.Store.settled_since`:
its root or agent span arrived and no span came for ``quiet_s`` seconds), so partial traces
are never scored. A trace that receives spans after it was scored settles again and is
scored again (marked ``updated``).

Several workers may follow one store (PostgreSQL, or SQLite on one machine): each settled
trace version is claimed by one worker for a lease (:mod:`tracegrade.store.follow`), and its
result is stored with the claim, so no trace is scored twice or missed, even when a worker
dies. ``sample`` keeps a fraction of traces by trace id (:mod:`tracegrade.sampling`): every
worker makes the same choice. With ``window_s``, each closed window's aggregates per
``service.name`` are stored, printed, and checked against the config's thresholds
(:mod:`tracegrade.report.windows`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Dataset, Tier
from tracegrade.normalize import normalize_trace
from tracegrade.pipeline.export import RunExport, open_export
from tracegrade.pipeline.score import ScoreOptions, plan_run
from tracegrade.report import windows
from tracegrade.report.alerts import post_alert
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.sampling import sampled
from tracegrade.scoring import CaseResult, evaluate
from tracegrade.scoring.score import Scorer
from tracegrade.store import follow as shared
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

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
    passed: dict[str, bool] = field(default_factory=dict)
    """Trace id -> whether its latest result passed (a few bytes per trace: a follower runs for
    weeks, so full results are printed and stored, never kept)."""
    sample: float | None = None
    """Keep this fraction of traces, by trace id (None: all)."""
    window_s: float | None = None
    """Store and print aggregates per window of this many seconds (None: no windows)."""
    alert_webhook: str | None = None
    worker: str = field(default_factory=lambda: f"{socket.gethostname()}:{os.getpid()}")
    lease_s: float = shared.DEFAULT_LEASE_S
    batch: int = 50
    """Traces claimed per poll."""
    open_window: float | None = None
    export: RunExport = field(default_factory=lambda: RunExport(None, RunContext()))
    """Where results and closed windows' figures are sent (``--export-otlp``); closed when
    :meth:`run` returns."""

    def poll(self, store: Store) -> list[tuple[CaseResult, bool]]:
        """Offer what settled since the last poll, claim a batch and score it; returns the
        (result, updated) pairs this worker stored."""
        seen = shared.unoffered(store.db, self.since, time.time() - self.quiet_s)
        if seen:
            self.since = max(version for _, version in seen)
        shared.offer(
            store.db, [c for c in seen if self.sample is None or sampled(c[0], self.sample)]
        )
        claims = {
            c.trace_id: c for c in shared.claim(store.db, self.worker, self.batch, self.lease_s)
        }
        if not claims:
            return []
        traces = [normalize_trace(t) for t in store.load(list(claims)) if t.spans]
        scored = [
            (claims.pop(result.trace_id), result, trace)
            for result, trace in self._score(traces)
            if result.trace_id in claims
        ]
        items: list[tuple[shared.Claim, shared.ResultRow | None]] = [
            (claimed, _row(result, trace)) for claimed, result, trace in scored
        ]
        items += [(claimed, None) for claimed in claims.values()]  # no spans, or no case matched
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
        self,
        stop: threading.Event,
        on_result: Callable[[CaseResult, bool], None],
        on_text: Callable[[str], None],
        poll_s: float = POLL_S,
    ) -> dict[str, bool]:
        """Poll until ``stop`` is set, telling ``on_result`` of each scored trace (its result
        and whether it updates an earlier one) and ``on_text`` of each window line (and of
        the export's first failure); returns whether the latest result of every trace scored
        passed (trace id -> passed). Closes the export."""
        with Store(self.db) as store:
            while not stop.is_set():
                for result, updated in self.poll(store):
                    on_result(result, updated)
                    self.export.result(result)
                for text in self.close_windows(store):
                    on_text(text)
                if problem := self.export.problem():
                    on_text(f"warning: {problem}")
                stop.wait(poll_s)
            for text in self.partial_window(store):
                on_text(text)
        for text in self.export.close():
            on_text(f"warning: {text}")
        return self.passed


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
    options: ScoreOptions, *, quiet_s: float, window: str | None, lease_s: float
) -> tuple[Follower, Any]:
    """The follower of ``score --follow`` for ``options`` (its dataset, config, scorers and
    judge as a scoring run resolves them: :func:`tracegrade.pipeline.score.plan_run`), and its
    judge (None without one), whose cache the caller keeps open while following.

    Raises:
        ConfigError: as :func:`tracegrade.pipeline.score.plan_run`; a bad ``window``.
    """
    resolved = plan_run(options)
    since_s = resolved.since_ns / 1e9 if resolved.since_ns is not None else time.time()
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
    )
    return follower, resolved.judge


def _context(dataset: Dataset | None) -> RunContext:
    """What a follower's exported records carry: the dataset's name (no run id: a follower
    is no stored run)."""
    return RunContext(dataset=dataset.name if dataset else None)
