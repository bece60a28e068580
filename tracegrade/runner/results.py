"""From finished attempts to the run document: repeats combined, runner fields added.

Repeats (``--repeat N``): a case's ``score`` is the median of its repeats' scores (repeats
without a score left out); its verdict and details are those of the median repeat when the
repeats are ordered by (passed, score) (the lower median for even N), so a case passes when
more than half of its repeats pass. ``spread`` is the highest minus the lowest score, and a
case is ``flaky`` when its repeats disagree on pass/fail. A case's ``usage`` (and the summary's
tokens and cost) are those of that median repeat, one attempt per case; what every attempt
spent is each attempt's own ``input_tokens``, ``output_tokens`` and ``cost_usd``, totalled as
the case's and the summary's ``spent``. The fields the runner adds to the
``tracegrade.run/1`` document are listed in :mod:`tracegrade.report.document`.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.dataset import Case, Dataset
from tracegrade.report.document import document, git_branch, run_info
from tracegrade.runner.agents import Agent
from tracegrade.runner.execute import Finished, Outcome, RunPlan, Scoring
from tracegrade.runner.simulation import goal_fields, goal_summary
from tracegrade.scoring.evaluation import summarize
from tracegrade.scoring.results import CaseResult, RunResult, percentile


def representative(outcomes: Sequence[Outcome]) -> Outcome:
    """The median attempt ordered by (passed, score) (see the module docstring)."""
    ordered = sorted(
        outcomes,
        key=lambda o: (o.result.passed, -1.0 if o.result.score is None else o.result.score),
    )
    return ordered[(len(ordered) - 1) // 2]


def combine(outcomes: Sequence[Outcome]) -> CaseResult:
    """One case's result over its repeats (see the module docstring)."""
    chosen = representative(outcomes).result
    if len(outcomes) == 1:
        return chosen
    scores = [o.result.score for o in outcomes if o.result.score is not None]
    return dataclasses.replace(chosen, score=statistics.median(scores) if scores else None)


def _ms(value: float) -> float:
    return round(value, 2)


SPENT_KEYS = ("input_tokens", "output_tokens", "cost_usd")
"""What an attempt spent (tokens, USD), totalled per case and per run as ``spent``."""


def _attempt_usage(outcome: Outcome) -> dict[str, Any]:
    usage = outcome.result.usage
    return {key: None if usage is None else getattr(usage, key) for key in SPENT_KEYS}


def spent(attempts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """What ``attempts`` (entries of :func:`attempt_entry`) spent together: ``{"attempts",
    "input_tokens", "output_tokens", "cost_usd"}``, each total None when no attempt recorded
    it (the cost is the sum of the attempts whose cost is known)."""
    totals: dict[str, Any] = {"attempts": len(attempts)}
    for key in SPENT_KEYS:
        known = [a[key] for a in attempts if a.get(key) is not None]
        totals[key] = sum(known) if known else None
    return totals


def attempt_entry(outcome: Outcome) -> dict[str, Any]:
    """One attempt in the document's ``attempts`` list (with its own tokens and cost)."""
    conversation = outcome.conversation
    followups = conversation.followups if conversation else []
    return {
        **_attempt_usage(outcome),
        "repeat": outcome.repeat,
        "trace_ids": list(outcome.trace_ids),
        "passed": outcome.result.passed,
        "score": outcome.result.score,
        "error": outcome.error,
        "followups": len(followups),
        "followup_sources": [f.source for f in followups],
        "followup_messages": [
            {"source": f.source, "question": f.question, "reply": f.reply} for f in followups
        ],
        "gave_up": bool(conversation and conversation.gave_up),
        "revivals": list(conversation.revivals) if conversation else [],
        "agent_ms": _ms(outcome.agent_ms),
        "settle_ms": _ms(outcome.settle_ms),
        "score_ms": _ms(outcome.score_ms),
        **({"simulation": outcome.simulation.to_dict()} if outcome.simulation else {}),
    }


def by_case(cases: Sequence[Case], outcomes: Sequence[Outcome]) -> list[tuple[Case, list[Outcome]]]:
    """Finished attempts grouped by case, in dataset order; cases without one are left out."""
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.case.id or "", []).append(outcome)
    return [
        (case, sorted(groups[case.id or ""], key=lambda o: o.repeat))
        for case in cases
        if case.id in groups
    ]


def _case_fields(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    scores = [o.result.score for o in outcomes if o.result.score is not None]
    verdicts = {o.result.passed for o in outcomes}
    attempts = [attempt_entry(o) for o in outcomes]
    return {
        "attempts": attempts,
        "spent": spent(attempts),
        "error": representative(outcomes).error,
        "spread": round(max(scores) - min(scores), 4) if len(scores) > 1 else None,
        "flaky": len(verdicts) > 1,
        **goal_fields(outcomes),
    }


def _runner_summary(finished: Finished) -> dict[str, Any]:
    outcomes = finished.outcomes
    scored = [o for o in outcomes if o.error is None and o.result.trace_id is not None]

    def pct(values: list[float], q: int) -> float | None:
        value = percentile(sorted(values), q)
        return None if value is None else _ms(value)

    return {
        "attempts": len(outcomes),
        "attempt_errors": sum(o.error is not None for o in outcomes),
        "wall_s": round(finished.wall_s, 3),
        "agent_ms_p50": pct([o.agent_ms for o in outcomes], 50),
        "settle_ms_p50": pct([o.settle_ms for o in scored], 50),
        "settle_ms_p95": pct([o.settle_ms for o in scored], 95),
        "score_ms_p50": pct([o.score_ms for o in scored], 50),
        "score_ms_p95": pct([o.score_ms for o in scored], 95),
    }


def run_result(groups: Sequence[tuple[Case, list[Outcome]]], threshold: float) -> RunResult:
    """The combined case results and their summary."""
    results = [combine(outcomes) for _, outcomes in groups]
    return RunResult(tuple(results), summarize(results, threshold, 0))


def _iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds")


def run_document(
    finished: Finished,
    plan: RunPlan,
    scoring: Scoring,
    dataset: Dataset,
    agent: Agent,
    *,
    tier: str | None,
    min_pass_rate: float,
    label: str | None,
    started: dt.datetime,
    config_sources: Sequence[str],
) -> dict[str, Any]:
    """The ``tracegrade.run/1`` document of a finished (or interrupted) run."""
    groups = by_case(plan.cases, finished.outcomes)
    result = run_result(groups, scoring.threshold)
    info = run_info(
        result,
        list(scoring.traces.values()),
        dataset,
        tier=tier,
        min_pass_rate=min_pass_rate,
        trace_source=f"tracegrade run --{_option(agent.kind)} {agent.spec}",
        config_sources=config_sources,
        evaluator=scoring.evaluator(dataset, tier).to_dict(),
    )
    info = dataclasses.replace(
        info,
        run_id=plan.run_id,
        created_at=_iso(started),
        passed=info.passed and not finished.interrupted,
        git_branch=git_branch(),
        label=label,
        agent={"kind": agent.kind, "spec": agent.spec},
        started_at=_iso(started),
        finished_at=_iso(dt.datetime.now(dt.UTC)),
        repeat=plan.repeat,
        concurrency=plan.concurrency,
        interrupted=finished.interrupted,
    )
    doc = document(result, info)
    for entry, (_, outcomes) in zip(doc["cases"], groups, strict=True):
        entry.update(_case_fields(outcomes))
    doc["summary"].update(
        flaky=sum(c["flaky"] for c in doc["cases"]),
        agent_errors=sum(c["error"] is not None for c in doc["cases"]),
        spent=spent([a for c in doc["cases"] for a in c["attempts"]]),
        runner=_runner_summary(finished),
        **goal_summary(finished.outcomes),
    )
    return doc


def _option(kind: str) -> str:
    return {"python": "agent", "command": "agent-cmd", "http": "agent-url"}.get(kind, kind)


def flaky_cases(doc: Mapping[str, Any]) -> list[str]:
    """Ids of the document's flaky cases."""
    return [str(c["case_id"]) for c in doc["cases"] if c.get("flaky")]
