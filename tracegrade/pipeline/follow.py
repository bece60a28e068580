"""``tracegrade score --follow``: score traces as they settle in the store (production
sampling behind ``tracegrade collect``), one line per trace, until interrupted.

Traces wait in the store's outbox, queued by the writer in the transaction that stored their
spans (:mod:`tracegrade.store.outbox`); a trace is claimable once it has settled (its root or
agent span stored and no span for ``quiet_s`` seconds; ``rootless_quiet_s`` without such a
span), so partial traces are not scored, and no trace depends on a time watermark. A trace that
receives spans after it was scored is queued again and scored again (marked ``updated``): its
new result is its current one, which everything that counts traces counts
(:mod:`tracegrade.store.results`). A follower starts with every queued trace within its
horizon (``since``; by default the store's retention, else everything queued): traces that
settled while no worker ran are scored.

Several workers may follow one store (PostgreSQL, or SQLite on one machine), and one follower
may run ``workers`` scoring processes (:mod:`tracegrade.pipeline.follow_workers`): each claims
a batch for a lease (:mod:`tracegrade.store.follow`), renews it while scoring
(:mod:`tracegrade.store.leases`), and stores each result with the claim, so no trace is
scored twice or missed, even when a worker dies. While batches come back full, the next is
claimed at once; the follower waits ``poll_s`` only when the queue had less.

What is scored: traces of an eval run (``tracegrade run``'s case spans mark them) never are;
the config's sampling rules, and ``sample`` for traces no rule matches, keep a share of the
rest by trace id (:mod:`tracegrade.sampling`): every worker makes the same choice. Each
result records the evaluator that produced it (:mod:`tracegrade.scoring.identity`). With
``window_s``, each closed window's aggregates per ``service.name`` are stored, printed and
checked against the config's thresholds (:mod:`tracegrade.pipeline.follow_windows`).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field, replace
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Dataset, Tier
from tracegrade.errors import ConfigError
from tracegrade.judge.budget import BUDGET_SKIP, BudgetLimits, JudgeBudget
from tracegrade.normalize import normalize_trace
from tracegrade.pipeline._score import ScoreOptions, plan_run
from tracegrade.pipeline.follow_windows import WindowKeeper
from tracegrade.pipeline.judging import make_judge
from tracegrade.pipeline.sessions import (
    SessionSettings,
    members_of,
    score_sessions,
    session_scorers,
)
from tracegrade.pipeline.signals import RunSignals, open_signals
from tracegrade.report import windows
from tracegrade.report.evaluation_signals import SESSION_KEY, RunContext
from tracegrade.sampling import SamplingRules
from tracegrade.scoring import CaseResult, evaluate
from tracegrade.scoring.evaluation import run_threshold
from tracegrade.scoring.identity import Evaluator, evaluator_of
from tracegrade.scoring.score import Scorer
from tracegrade.spans import TraceData
from tracegrade.store import follow as shared
from tracegrade.store import retention
from tracegrade.store.judge_spend import SpendLedger
from tracegrade.store.leases import Leases
from tracegrade.store.results import save_evaluator
from tracegrade.store.sessions import Member
from tracegrade.store.sessions import record as record_members
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
    """The rate of traces no sampling rule matches (None: the config's ``sampling.default``,
    1 when unset); every rule of the config's ``sampling:`` keeps its own rate."""
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
    signals: RunSignals = field(default_factory=lambda: RunSignals(None, RunContext()))
    """Where results and closed windows' figures are sent (``--export-otlp``); closed when
    :meth:`run` returns."""
    evaluator: Evaluator | None = None
    """The evaluator every result records (None: made from the scorers, dataset and config
    on first use)."""
    versions: dict[str, int] = field(default_factory=dict)
    """Trace id -> the version its latest result scored, until that result is exported."""
    keeper: WindowKeeper | None = None
    """The windows (made from ``window_s`` on first use)."""
    excluded: int = 0
    """Eval-run traces left unscored (their case spans mark them)."""
    registered: bool = False
    """The evaluator's identity is recorded in the store (done by the first poll)."""
    judge_budget: JudgeBudget | None = None
    """The judge's budget (``--judge-budget``; None: unlimited), for the figures."""
    sessions: SessionSettings | None = None
    """Score whole conversations too (``--sessions``; :mod:`tracegrade.pipeline.sessions`)."""
    session_passed: dict[str, bool] = field(default_factory=dict)
    """Conversation key -> whether its latest result passed."""
    session_evaluator: Evaluator | None = None
    """The evaluator of whole conversations (made on first use)."""

    @property
    def identity(self) -> Evaluator:
        """:attr:`evaluator`, made on first use."""
        if self.evaluator is None:  # as a scoring run with these options makes it
            threshold = run_threshold(self.threshold, self.dataset, self.config)
            settings = {"threshold": threshold, "tier": self.tier}
            self.evaluator = evaluator_of(self.scorers, self.dataset, self.config, settings)
        return self.evaluator

    @property
    def session_identity(self) -> Evaluator:
        """The evaluator of whole conversations (its scorers: :attr:`sessions`), made on
        first use."""
        assert self.sessions is not None
        if self.session_evaluator is None:
            settings = {"scope": "conversation", "threshold": self.sessions.threshold}
            scorers = self.sessions.scorers
            self.session_evaluator = evaluator_of(scorers, None, self.config, settings)
        return self.session_evaluator

    @property
    def rules(self) -> SamplingRules:
        """The sampling rules: the config's, ``sample`` as the default rate when given."""
        rules = self.config.sampling
        return rules if self.sample is None else replace(rules, default=self.sample)

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
        if not self.registered:
            self.register(store)
        claims = shared.claim(store.db, self.worker, self.batch, self.settling(store), self.lease_s)
        self.busy = len(claims) == self.batch
        out: list[tuple[CaseResult, bool]] = []
        if claims:
            keeping = self.leases.holding([c.trace_id for c in claims]) if self.leases else None
            with keeping or nullcontext():
                out = self._score_claims(store, claims)
        if self.sessions is not None and not self.busy:
            session_id = self.session_identity.id
            out += score_sessions(
                store, self.worker, self.sessions, self.config, session_id, self.lease_s
            )
        for result, _ in out:
            self.note(result)
        return out

    def note(self, result: CaseResult) -> None:
        """Remember whether a result passed: a trace's by its id, a conversation's by its
        key."""
        if (key := result.metadata.get(SESSION_KEY)) is not None:
            self.session_passed[str(key)] = result.passed
        elif result.trace_id:
            self.passed[result.trace_id] = result.passed

    def _score_claims(
        self, store: Store, claims: list[shared.Claim]
    ) -> list[tuple[CaseResult, bool]]:
        runs = shared.eval_run_traces(store.db, [c.trace_id for c in claims])
        self.excluded += len(runs)
        by_id = {c.trace_id: c for c in claims}
        pairs, members = self._score_stored(store, [t for t in by_id if t not in runs])
        scored = [(by_id[result.trace_id or ""], result, row) for result, row in pairs]
        items: list[tuple[shared.Claim, shared.ResultRow | None]] = [
            (claimed, row) for claimed, _, row in scored
        ]
        # an eval run's trace scored earlier as production: its results are superseded
        items += [
            (c, replace(shared.EXCLUDED, evaluator=self.identity.id))
            for c in claims
            if c.trace_id in runs and c.updated
        ]
        closed = {claimed.trace_id for claimed, _ in items}
        # not sampled, no spans, no case matched, an eval run's: closed without a result
        items += [(c, None) for c in claims if c.trace_id not in closed]

        def joined(db: Any, done: set[str]) -> None:  # their conversations, with them
            record_members(db, [m for t, m in members.items() if t in done])

        stored = shared.complete_all(store.db, self.worker, items, joined if members else None)
        done = [(c, r) for (c, r, _), ok in zip(scored, stored, strict=False) if ok]
        out = [
            (result, claimed.updated or result.trace_id in self.passed) for claimed, result in done
        ]
        self.versions.update({c.trace_id: c.version for c, _ in done})
        return out

    def score_stored(
        self, store: Store, trace_ids: Sequence[str]
    ) -> list[tuple[CaseResult, shared.ResultRow]]:
        """Score the stored traces ``trace_ids`` that the sampling rules keep: each scored
        trace's result (one per trace) and the row the store keeps of it."""
        return self._score_stored(store, trace_ids)[0]

    def _score_stored(
        self, store: Store, trace_ids: Sequence[str]
    ) -> tuple[list[tuple[CaseResult, shared.ResultRow]], dict[str, Member]]:
        """:meth:`score_stored`, and with :attr:`sessions` the conversation of each trace
        kept (a conversation is kept or dropped whole, by its key)."""
        members: dict[str, Member] = {}
        if self.sessions is None:
            traces = [normalize_trace(t) for t in self._sampled(store, trace_ids) if t.spans]
        else:
            data = [t for t in store.load(list(trace_ids)) if t.spans]
            normalized = {t.trace_id: normalize_trace(t) for t in data}
            found = members_of(store, list(normalized.values()))
            rules = self.rules
            kept = [t for t in data if rules.keeps(found[t.trace_id].key, attributes(t))]
            traces = [normalized[t.trace_id] for t in kept]
            members = {t.trace_id: found[t.trace_id] for t in kept}
        identity = self.identity.id
        out: dict[str, tuple[CaseResult, shared.ResultRow]] = {}
        for result, trace in self._score(traces):
            out.setdefault(trace.trace_id, (result, result_row(result, trace, identity)))
        return list(out.values()), {t: m for t, m in members.items() if t in out}

    def _sampled(self, store: Store, trace_ids: Sequence[str]) -> list[TraceData]:
        """The stored traces that the sampling rules keep (by trace id alone, before
        loading, when no rule looks at attributes)."""
        rules = self.rules
        if not rules.rules:
            return store.load([t for t in trace_ids if rules.keeps(t, ())])
        return [t for t in store.load(list(trace_ids)) if rules.keeps(t.trace_id, attributes(t))]

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

    @property
    def windows(self) -> WindowKeeper | None:
        """The follower's windows (None without ``window_s``)."""
        if self.window_s is None:
            return None
        if self.keeper is None:
            self.keeper = WindowKeeper(self.window_s, self.config, self.alert_webhook, self.signals)
        return self.keeper

    def close_windows(self, store: Store, now: float | None = None) -> list[str]:
        """Aggregate every window that closed since the last call, and every closed window
        late results changed (:mod:`tracegrade.pipeline.follow_windows`); store each, and
        return the lines to print (aggregates, then alerts)."""
        keeper = self.windows
        return keeper.close(store, now) if keeper else []

    def partial_window(self, store: Store, now: float | None = None) -> list[str]:
        """The lines of the window still open at ``now`` (what a follower has scored in it so
        far), marked partial; printed when the follower stops, neither stored nor alerted on
        (the window has not closed: another worker, or this one restarted, may add to it)."""
        keeper = self.windows
        return keeper.partial(store, now) if keeper else []

    def run(
        self, stop: threading.Event, on_result: OnResult, on_text: OnText, poll_s: float = POLL_S
    ) -> dict[str, bool]:
        """Score in this process until ``stop`` is set, telling ``on_result`` of each scored
        trace (its result and whether it updates an earlier one) and ``on_text`` of each
        window line (and of the first failure sending them); returns whether the latest result of
        every trace scored passed (trace id -> passed). Closes the signals.
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

    def register(self, store: Store) -> None:
        """Record this follower's evaluators in the store (its results name them by id)."""
        save_evaluator(store.db, self.identity.id, self.identity.to_dict())
        if self.sessions is not None:
            identity = self.session_identity
            save_evaluator(store.db, identity.id, identity.to_dict())
        self.registered = True

    def exported(self, on_result: OnResult) -> OnResult:
        """``on_result`` that also sends each result to the signals (``--export-otlp``), with
        its identity and the trace version it scored."""

        def told(result: CaseResult, updated: bool) -> None:
            on_result(result, updated)
            if SESSION_KEY in result.metadata:
                version = result.metadata.get("version")
                self.signals.result(result, version=version, evaluator=self.session_identity)
                return
            version = self.versions.pop(result.trace_id or "", None)
            self.signals.result(result, version=version)

        return told

    def close_export(self, on_text: OnText) -> None:
        """Send what is left to the signals and stop it; ``on_text`` gets its warning."""
        for text in self.signals.close():
            on_text(f"warning: {text}")

    def tell_windows(self, store: Store, on_text: OnText) -> None:
        """Tell ``on_text`` the lines of every window that closed since the last call."""
        for text in self.close_windows(store):
            on_text(text)
        if problem := self.signals.problem():
            on_text(f"warning: {problem}")


def attributes(trace: TraceData) -> list[Mapping[str, object]]:
    """The attribute mappings sampling rules look at: every span's, and each distinct
    resource's."""
    found: list[Mapping[str, object]] = [s.attributes for s in trace.spans]
    resources: dict[int, Mapping[str, object]] = {}
    for span in trace.spans:
        resources.setdefault(id(span.resource_attributes), span.resource_attributes)
    return found + list(resources.values())


def result_row(result: CaseResult, trace: AgentTrace, evaluator: str) -> shared.ResultRow:
    """What the store keeps of one scored trace's result (for windows and counting), and
    ``evaluator``, the id of the evaluator that produced it."""
    from tracegrade.report.document import case_entry

    service = trace.resource_attributes.get("service.name")
    judge = (result.details.get("judge") or {}).get("details") or {}
    return shared.ResultRow(
        service=None if service is None else str(service),
        passed=result.passed,
        score=result.score,
        hallucinated=result.hallucinated,
        tool_calls=len(trace.tool_calls),
        failed_tool_calls=sum(1 for c in trace.tool_calls if c.error),
        duration_ms=result.usage.duration_ms if result.usage else None,
        cost_usd=result.usage.cost_usd if result.usage else None,
        result=case_entry(result).model_dump(mode="json", exclude_unset=True),
        evaluator=evaluator,
        judge_cost_usd=(judge.get("usage") or {}).get("cost_usd"),
        judge_skipped=judge.get("skipped") == BUDGET_SKIP,
    )


def make_follower(
    options: ScoreOptions,
    *,
    quiet_s: float,
    window: str | None,
    lease_s: float,
    rootless_quiet_s: float = shared.DEFAULT_ROOTLESS_QUIET_S,
    judge_budget: BudgetLimits | None = None,
    session_quiet_s: float | None = None,
) -> tuple[Follower, Any]:
    """The follower of ``score --follow`` for ``options`` (its dataset, config, scorers and
    judge as a scoring run resolves them: :func:`tracegrade.pipeline._score.plan_run`; its
    scoring processes: ``options.workers``), and its judge (None without one), whose cache the
    caller keeps open while following. Without ``options.since`` the follower's horizon is
    the store's retention period (every queued trace when none is set). ``judge_budget``
    limits what its judge spends (:mod:`tracegrade.judge.budget`); ``session_quiet_s``
    (None: no conversations) scores whole conversations after that many quiet seconds
    (:mod:`tracegrade.pipeline.sessions`).

    Raises:
        ConfigError: as :func:`tracegrade.pipeline._score.plan_run`; a bad ``window``; several
            workers where processes cannot be forked; a judge budget without a judge, or for
            a judge model without a price.
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
        threshold=options.gate.threshold,
        tier=options.tier,
        since=since_s,
        sample=options.sample,
        window_s=windows.parse_window(window) if window else None,
        alert_webhook=options.gate.alert_webhook,
        lease_s=lease_s,
        rootless_quiet_s=rootless_quiet_s,
        workers=resolved.workers,
    )
    judge = resolved.judge
    if session_quiet_s is not None:
        judge = judge or _conversation_judge(options, resolved.config, resolved.dataset)
        scorers = session_scorers([*resolved.scorers, *([judge] if judge else [])], resolved.config)
        follower.sessions = SessionSettings(session_quiet_s, scorers, options.gate.threshold)
    follower.signals = open_signals(
        options.output.export_otlp, follower_context(follower), periodic=True
    )
    if judge_budget is not None:
        follower.judge_budget = limit_judge(judge, judge_budget, options.db, follower.worker)
    return follower, judge


def _conversation_judge(options: ScoreOptions, config: Config, dataset: Dataset | None) -> Any:
    """A judge for whole conversations only, when the config gives ``sessions.rubric`` and
    no trace is judged (None when neither applies, or with ``--no-judge``).

    Raises:
        ConfigError: no API key is configured for it.
    """
    if options.judge.mode is False or not config.sessions.get("rubric"):
        return None
    return make_judge(config, dataset, [None], dataclasses.replace(options.judge, mode=True))


def follower_context(follower: Follower) -> RunContext:
    """What a follower's exported records carry: the dataset's name and its evaluator (no
    run id: a follower is no stored run)."""
    dataset = follower.dataset
    return RunContext(dataset=dataset.name if dataset else None, evaluator=follower.identity)


def limit_judge(judge: Any, limits: BudgetLimits, db: str | None, worker: str) -> JudgeBudget:
    """Give ``judge`` (a :class:`~tracegrade.judge.scorer.JudgeScorer`) the budget
    ``limits``, its spend recorded in the store at ``db``; returns the budget.

    Raises:
        ConfigError: no judge (nothing to limit), or its model has no price (its spend
            cannot be known).
    """
    if judge is None or not judge.enabled:
        raise ConfigError(
            "--judge-budget limits the LLM judge, and no trace is judged: add --judge, or a "
            "dataset with judge rubrics"
        )
    if judge.settings.pricing.price(judge.settings.model) is None:
        raise ConfigError(
            f"--judge-budget: the judge model {judge.settings.model!r} has no price, so its "
            "spend cannot be counted: add it to pricing: in tracegrade.yaml"
        )
    budget = JudgeBudget(limits, SpendLedger(db, worker))
    judge.budget = budget
    return budget
