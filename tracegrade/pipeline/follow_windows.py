"""``score --follow --window``: closing windows, re-counting closed windows after late
results, and alerting once per window.

A window covers the traces a follower first scored in it, each counted by its current live
result (:mod:`tracegrade.store.results`). When a window closes, its aggregates per
``service.name`` are stored (``score_windows``), printed, exported and checked against the
config's thresholds. A trace re-scored after its window closed (late spans), or found to be
an eval run's, changes that closed window: every :data:`REVISE_EVERY_S` a follower looks for
such results and stores the window again, printing it marked ``(revised)`` and exporting its
figures again (the same ``tracegrade.window.start``, so a backend replaces them). A window
alerts once, whichever worker first sees it over a threshold, when it closes or when a
revision takes it over (:func:`tracegrade.store.follow.claim_alert`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from tracegrade.config import Config
from tracegrade.pipeline.signals import RunSignals
from tracegrade.report import windows
from tracegrade.report.alerts import post_alert
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.store import follow as shared
from tracegrade.store.judge_spend import spent_by_service
from tracegrade.store.results import late_anchors, window_results
from tracegrade.store.traces import Store

REVISE_EVERY_S = 5.0
"""How often a follower looks for late results in closed windows (s)."""
LATE_MARGIN_S = 30.0
"""How far back each look reaches before the previous one (s): a result stored by a worker
whose commit took a while, or whose clock is a little behind, is still seen."""


@dataclass
class WindowKeeper:
    """One follower's windows of ``window_s`` seconds (see the module docstring)."""

    window_s: float
    config: Config
    alert_webhook: str | None = None
    signals: RunSignals = field(default_factory=lambda: RunSignals(None, RunContext()))
    open_window: float | None = None
    """The start of the window now open (Unix s; None until the first call)."""
    checked_until: float | None = None
    """Late results were looked for up to this moment (Unix s)."""

    def close(self, store: Store, now: float | None = None) -> list[str]:
        """Aggregate every window that closed since the last call and every closed window
        whose traces changed; store each, and return the lines to print (aggregates, then
        alerts)."""
        now = time.time() if now is None else now
        current = windows.window_start(now, self.window_s)
        if self.open_window is None:
            self.open_window, self.checked_until = current, now
        lines: list[str] = []
        while self.open_window < current:
            start, self.open_window = self.open_window, self.open_window + self.window_s
            lines += self._store(store, start, revision=False)
        assert self.checked_until is not None
        if now - self.checked_until >= REVISE_EVERY_S:
            lines += self.revise(store, self.checked_until - LATE_MARGIN_S, now)
        return lines

    def revise(self, store: Store, after_s: float, until_s: float) -> list[str]:
        """Store again every closed window holding a trace with a live result scored in
        (after_s, until_s] that is not its first; the lines of those that changed."""
        self.checked_until = until_s
        assert self.open_window is not None
        starts = sorted(
            {
                start
                for anchor in late_anchors(store.db, after_s, until_s)
                if (start := windows.window_start(anchor, self.window_s)) < self.open_window
            }
        )
        lines: list[str] = []
        for start in starts:
            lines += self._store(store, start, revision=True)
        return lines

    def _store(self, store: Store, start: float, *, revision: bool) -> list[str]:
        rows = window_results(store.db, start, start + self.window_s)
        by_service = windows.aggregate(rows)
        for gone in shared.window_services(store.db, start, self.window_s):
            by_service.setdefault(gone, windows.empty())
        spent = spent_by_service(store.db, start, start + self.window_s)
        for service, aggregates in by_service.items():
            if service in spent:
                aggregates["judge_cost_usd"] = round(spent[service], 6)
        lines: list[str] = []
        changed = False
        for service, aggregates in sorted(by_service.items()):
            state = shared.save_window(store.db, start, self.window_s, service, aggregates)
            changed = changed or state != "same"
            if revision and state != "revised":
                continue
            lines.append(windows.line(start, self.window_s, service, aggregates, revised=revision))
            lines += self._alert(store, start, service, aggregates)
        if changed or not revision:
            self.signals.window(rows, self.window_s, start, spent)
        return lines

    def partial(self, store: Store, now: float | None = None) -> list[str]:
        """The lines of the window still open at ``now`` (what was scored in it so far),
        marked partial; neither stored nor alerted on (the window has not closed)."""
        now = time.time() if now is None else now
        start = windows.window_start(now, self.window_s)
        rows = window_results(store.db, start, now + 1e-6)
        return [
            windows.line(start, self.window_s, service, aggregates, partial_until_s=now)
            for service, aggregates in windows.aggregate(rows).items()
        ]

    def _alert(
        self, store: Store, start: float, service: str, aggregates: dict[str, Any]
    ) -> list[str]:
        rules = self.config.windows
        crossed = windows.breaches(
            aggregates, rules.get("thresholds", {}), int(rules.get("min_traces", 1))
        )
        if not crossed or not shared.claim_alert(store.db, start, self.window_s, service):
            return []
        text = f"ALERT service={service} window {self.window_s:g}s: {'; '.join(crossed)}"
        if self.alert_webhook:
            alert = {"service": service, "window_start_s": start, "window_s": self.window_s}
            problem = post_alert(self.alert_webhook, text, {**alert, "aggregates": aggregates})
            return [text] + ([f"warning: {problem}"] if problem else [])
        return [text]
