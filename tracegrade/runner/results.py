"""From finished attempts to the run document: repeats combined, runner fields added.

Repeats (``--repeat N``): a case's ``score`` is the median of its repeats' scores (repeats
without a score left out); its verdict and details are those of the median repeat when the
repeats are ordered by (passed, score) (the lower median for even N), so a case passes when
more than half of its repeats pass. ``spread`` is the highest minus the lowest score, and a
case is ``flaky`` when its repeats disagree on pass/fail. A case's ``usage`` (and the summary's
tokens and cost) are those of that median repeat, one attempt per case; what every attempt
spent is each attempt's own ``input_tokens``, ``output_tokens`` and ``cost_usd``, totalled as
the case's and the summary's ``spent``. The fields the runner adds to the
``tracegrade.run/1`` document are those its models mark ``tracegrade run``
(:mod:`tracegrade.run_document`); the document is built once, typed, when the run ends.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.dataset import Case, Dataset
from tracegrade.report.caselog import CaseList
from tracegrade.report.document import Repeats, RunnerMeta, case_entry, run_meta, spent
from tracegrade.run_document import (
    AgentRef,
    AttemptEntry,
    CaseEntry,
    ClarifierTotals,
    FollowUpMessage,
    RunnerFigures,
    StreamedDocument,
    head_of,
)
from tracegrade.runner.agents import Agent
from tracegrade.runner.execute import Execution, FinishedAttempt, RunPlan, Scoring
from tracegrade.runner.simulation import goal_fields, goal_summary
from tracegrade.scoring.results import CaseResult, percentile
from tracegrade.scoring.summary import RunningSummary


def representative(outcomes: Sequence[FinishedAttempt]) -> FinishedAttempt:
    """The median attempt ordered by (passed, score) (see the module docstring)."""
    ordered = sorted(
        outcomes,
        key=lambda o: (o.result.passed, -1.0 if o.result.score is None else o.result.score),
    )
    return ordered[(len(ordered) - 1) // 2]


def combine(outcomes: Sequence[FinishedAttempt]) -> CaseResult:
    """One case's result over its repeats (see the module docstring)."""
    chosen = representative(outcomes).result
    if len(outcomes) == 1:
        return chosen
    scores = [o.result.score for o in outcomes if o.result.score is not None]
    return dataclasses.replace(chosen, score=statistics.median(scores) if scores else None)


def _ms(value: float) -> float:
    return round(value, 2)


def attempt_entry(outcome: FinishedAttempt) -> AttemptEntry:
    """One attempt in the case entry's ``attempts`` (with its own tokens and cost)."""
    conversation = outcome.conversation
    followups = conversation.followups if conversation else []
    usage = outcome.result.usage
    return AttemptEntry(
        input_tokens=None if usage is None else usage.input_tokens,
        output_tokens=None if usage is None else usage.output_tokens,
        cost_usd=None if usage is None else usage.cost_usd,
        repeat=outcome.repeat,
        trace_ids=list(outcome.trace_ids),
        passed=outcome.result.passed,
        score=outcome.result.score,
        error=outcome.error,
        followups=len(followups),
        followup_writers=[f.written_by for f in followups],
        followup_messages=[
            FollowUpMessage(written_by=f.written_by, question=f.question, reply=f.reply)
            for f in followups
        ],
        gave_up=bool(conversation and conversation.gave_up),
        revivals=list(conversation.revivals) if conversation else [],
        agent_ms=_ms(outcome.agent_ms),
        settle_ms=_ms(outcome.settle_ms),
        score_ms=_ms(outcome.score_ms),
        **({"simulation": outcome.simulation.to_dict()} if outcome.simulation else {}),
    )


def by_case(
    cases: Sequence[Case], outcomes: Sequence[FinishedAttempt]
) -> list[tuple[Case, list[FinishedAttempt]]]:
    """Finished attempts grouped by case, in dataset order; cases without one are left out."""
    groups: dict[str, list[FinishedAttempt]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.case.id or "", []).append(outcome)
    return [
        (case, sorted(groups[case.id or ""], key=lambda o: o.repeat))
        for case in cases
        if case.id in groups
    ]


def repeats(outcomes: Sequence[FinishedAttempt]) -> Repeats:
    """What the runner adds to a case's entry (see the module docstring)."""
    scores = [o.result.score for o in outcomes if o.result.score is not None]
    return Repeats(
        attempts=[attempt_entry(o) for o in outcomes],
        error=representative(outcomes).error,
        spread=round(max(scores) - min(scores), 4) if len(scores) > 1 else None,
        flaky=len({o.result.passed for o in outcomes}) > 1,
        goal=goal_fields(outcomes).get("goal"),
    )


def runner_figures(finished: Execution) -> RunnerFigures:
    """Where the run's time went (``summary.runner``)."""
    outcomes = finished.attempts
    scored = [o for o in outcomes if o.error is None and o.result.trace_id is not None]

    def pct(values: list[float], q: int) -> float | None:
        value = percentile(sorted(values), q)
        return None if value is None else _ms(value)

    return RunnerFigures(
        attempts=len(outcomes),
        attempt_errors=sum(o.error is not None for o in outcomes),
        wall_s=round(finished.wall_s, 3),
        agent_ms_p50=pct([o.agent_ms for o in outcomes], 50),
        settle_ms_p50=pct([o.settle_ms for o in scored], 50),
        settle_ms_p95=pct([o.settle_ms for o in scored], 95),
        score_ms_p50=pct([o.score_ms for o in scored], 50),
        score_ms_p95=pct([o.score_ms for o in scored], 95),
    )


def _option(kind: str) -> str:
    return {"python": "agent", "command": "agent-cmd", "http": "agent-url"}.get(kind, kind)


@dataclass(frozen=True)
class RunSetting:
    """How a ``tracegrade run`` was asked for (what its ``run`` records besides its results)."""

    tier: str | None
    min_pass_rate: float
    label: str | None
    started: dt.datetime
    config_files: Sequence[str]
    min_score: float | None = None


@dataclass(frozen=True)
class RunTotals:
    """What a run's helpers spent, known once it ended: the judge deciding follow-ups
    (``summary.clarifier``) and the simulated users' model (``summary.simulator``)."""

    clarifier: ClarifierTotals | None = None
    simulator: dict[str, Any] | None = None


def run_document(
    finished: Execution,
    plan: RunPlan,
    scoring: Scoring,
    dataset: Dataset,
    agent: Agent,
    setting: RunSetting,
    totals: RunTotals | None = None,
) -> StreamedDocument:
    """The ``tracegrade.run/1`` document of a finished (or interrupted) run: each case's
    repeats combined (module docstring), its summary, ``run`` with the agent and its times;
    ``totals``: what the judge's follow-ups and the simulated users' model spent."""
    totals = totals or RunTotals()
    groups = by_case(plan.cases, finished.attempts)
    running = RunningSummary(scoring.threshold)
    entries: list[CaseEntry] = []
    for _, outcomes in groups:
        combined = combine(outcomes)
        running.add(combined)
        entries.append(case_entry(combined, repeats(outcomes)))
    summary = running.summary(0).model_copy(
        update={
            "flaky": sum(bool(e.flaky) for e in entries),
            "agent_errors": sum(e.error is not None for e in entries),
            "spent": spent([a for e in entries for a in e.attempts]),
            "runner": runner_figures(finished),
            **goal_summary(finished.attempts),
            **({} if totals.simulator is None else {"simulator": totals.simulator}),
            **({} if totals.clarifier is None else {"clarifier": totals.clarifier}),
        }
    )
    runner = RunnerMeta(
        agent=AgentRef(kind=agent.kind, spec=agent.spec),
        started=setting.started,
        finished=dt.datetime.now(dt.UTC),
        repeat=plan.repeat,
        concurrency=plan.concurrency,
        interrupted=finished.interrupted,
        label=setting.label,
    )
    run = run_meta(
        summary,
        list(scoring.traces.values()),
        dataset,
        tier=setting.tier,
        min_pass_rate=setting.min_pass_rate,
        trace_source=f"tracegrade run --{_option(agent.kind)} {agent.spec}",
        config_files=setting.config_files,
        run_id=plan.run_id,
        min_score=setting.min_score,
        runner=runner,
        evaluator=scoring.evaluator(dataset, setting.tier).to_dict(),
    )
    return StreamedDocument(head_of(run, summary), CaseList(entries))


def flaky_cases(doc: StreamedDocument) -> list[str]:
    """Ids of the document's flaky cases."""
    return [str(c.case_id) for c in doc.cases if c.flaky]
