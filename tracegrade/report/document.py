"""Writing the run document ``tracegrade.run/1``: its parts built directly as their models
(:mod:`tracegrade.run_document`, whose fields and descriptions are the schema, published as
JSON Schema), each once, none changed afterwards.

- :func:`case_entry`: a :class:`~tracegrade.scoring.results.CaseResult` as a
  :class:`~tracegrade.run_document.CaseEntry` (``tracegrade run`` gives the attempts, the
  agent's error, the spread and whether the case is flaky as it builds it);
- :func:`run_meta`: the run's :class:`~tracegrade.run_document.RunMeta` (ids, dataset and
  code versions, the agent's version and models, the verdict with ``--min-score`` folded in);
- the summary is :meth:`tracegrade.scoring.summary.RunningSummary.summary`'s;
- :func:`document`: a whole run in memory as a
  :class:`~tracegrade.run_document.StreamedDocument` (the pytest plugin).

Values are in [0, 1]; ``null`` means the scorer could not run or did not apply (its reason is
in ``details``). Durations are milliseconds, costs USD, tokens tokens. The agent's tokens and
cost (``input_tokens``, ``output_tokens``, ``cost_usd``, per case ``usage``) never include the
LLM judge's, which are in ``summary.judge`` and per case in ``details.judge.details.usage``.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade import environment
from tracegrade.dataset import Dataset
from tracegrade.report.caselog import CaseList
from tracegrade.run_document import (
    AgentRef,
    AttemptEntry,
    CaseEntry,
    CaseUsage,
    DatasetRef,
    RunMeta,
    RunSummaryEntry,
    ScorerDetail,
    Spent,
    StreamedDocument,
    head_of,
)
from tracegrade.scoring.results import CaseResult, RunResult
from tracegrade.scoring.streaming import TraceFacts
from tracegrade.scoring.summary import RunningSummary
from tracegrade.trace import AgentTrace
from tracegrade.version import __version__

SPENT_KEYS = ("input_tokens", "output_tokens", "cost_usd")
"""What an attempt spent (tokens, USD), totalled per case and per run as ``spent``."""


def git_sha() -> str | None:
    """The current git commit of the working directory, if it is a repository."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def git_branch() -> str | None:
    """The current git branch of the working directory; on a detached HEAD (CI checkouts)
    GitHub Actions' ``GITHUB_HEAD_REF`` (pull requests) or ``GITHUB_REF_NAME``; else None."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--abbrev-ref", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        branch = out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.SubprocessError):
        branch = ""
    if branch and branch != "HEAD":
        return branch
    return (
        os.environ.get(environment.GITHUB_HEAD_REF)
        or os.environ.get(environment.GITHUB_REF_NAME)
        or None
    )


def run_passed(summary: RunSummaryEntry, min_pass_rate: float) -> bool:
    """A run passes when at least one case was scored and the pass rate reaches
    ``min_pass_rate``."""
    return summary.results > summary.unmatched_cases and (summary.pass_rate or 0) >= min_pass_rate


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run id: ``YYYYmmdd-HHMMSS-xxxxxx`` (UTC time, 6 random hex digits)."""
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def iso(moment: dt.datetime) -> str:
    """``moment`` as the document writes times: ISO 8601, UTC, to the second."""
    return moment.astimezone(dt.UTC).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RunnerMeta:
    """What ``tracegrade run`` adds to ``run``: the agent, when it ran, how (repeats, cases
    at once), whether it was interrupted, and its label."""

    agent: AgentRef
    started: dt.datetime
    finished: dt.datetime
    repeat: int
    concurrency: int
    interrupted: bool
    label: str | None = None


def run_meta(
    summary: RunSummaryEntry,
    traces: Sequence[AgentTrace] | TraceFacts,
    dataset: Dataset | None,
    *,
    tier: str | None,
    min_pass_rate: float,
    trace_source: str,
    config_files: Sequence[str],
    run_id: str | None = None,
    evaluator: Mapping[str, Any] | None = None,
    min_score: float | None = None,
    runner: RunnerMeta | None = None,
) -> RunMeta:
    """The ``run`` of a finished run: ids, the dataset's version, the code's, the agent's
    version and models (from the traces, or the :class:`TraceFacts` a streamed run kept of
    them), and whether it passed (``min_pass_rate``; ``--min-score`` when given: the mean
    score reaches it; ``runner``: not interrupted). ``run_id``: the id chosen when the run
    started (default: a new one); ``evaluator``: the identity of what scored it
    (:mod:`tracegrade.scoring.identity`)."""
    facts = traces if isinstance(traces, TraceFacts) else TraceFacts.of(traces)
    now = dt.datetime.now(dt.UTC) if runner is None else runner.started
    passed = run_passed(summary, min_pass_rate) and _reaches(summary, min_score)
    return RunMeta(
        run_id=run_id or new_run_id(now),
        created_at=iso(now),
        dataset=_dataset_ref(dataset),
        tier=tier,
        threshold=summary.threshold,
        min_pass_rate=min_pass_rate,
        passed=passed and not (runner and runner.interrupted),
        git_sha=git_sha(),
        agent_version=facts.versions.most_common(1)[0][0] if facts.versions else None,
        models=sorted(facts.models),
        trace_source=trace_source,
        config_files=list(config_files),
        tracegrade_version=__version__,
        git_branch=git_branch() if runner else None,
        label=runner.label if runner else None,
        agent=runner.agent if runner else None,
        started_at=iso(runner.started) if runner else None,
        finished_at=iso(runner.finished) if runner else None,
        repeat=runner.repeat if runner else 1,
        concurrency=runner.concurrency if runner else None,
        interrupted=bool(runner and runner.interrupted),
        evaluator=None if evaluator is None else dict(evaluator),
        **({} if min_score is None else {"min_score": min_score}),
    )


def _reaches(summary: RunSummaryEntry, min_score: float | None) -> bool:
    """``--min-score``: the mean overall score is known and reaches it (no option: True)."""
    return min_score is None or (summary.score is not None and summary.score >= min_score)


def _dataset_ref(dataset: Dataset | None) -> DatasetRef | None:
    if dataset is None:
        return None
    return DatasetRef(
        name=dataset.name, source=dataset.source, digest=dataset.digest, cases=len(dataset.cases)
    )


def _usage(result: CaseResult) -> CaseUsage | None:
    usage = result.usage
    if usage is None:
        return None
    return CaseUsage(
        duration_ms=usage.duration_ms,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost_usd=usage.cost_usd,
        llm_calls=usage.llm_calls,
        tool_calls=usage.tool_calls,
        llm_latency_max_ms=max(usage.llm_durations_ms, default=None),
        tool_latency_max_ms=max(usage.tool_durations_ms, default=None),
        unpriced_models=list(usage.unpriced_models),
    )


def spent(attempts: Sequence[AttemptEntry]) -> Spent:
    """What ``attempts`` spent together; each total None when no attempt recorded it (the cost
    is the sum of the attempts whose cost is known)."""
    totals = [[v for a in attempts if (v := getattr(a, key)) is not None] for key in SPENT_KEYS]
    tokens_in, tokens_out, cost = (sum(known) if known else None for known in totals)
    return Spent(
        attempts=len(attempts), input_tokens=tokens_in, output_tokens=tokens_out, cost_usd=cost
    )


@dataclass(frozen=True)
class Repeats:
    """What ``tracegrade run`` adds to a case entry: its attempts, the agent's error (of the
    attempt the case's verdict is), the spread of their scores, whether they disagree."""

    attempts: Sequence[AttemptEntry]
    error: str | None
    spread: float | None
    flaky: bool
    goal: dict[str, Any] | None = None
    """A simulated user's goal over the repeats (``goal_fields`` of the runner's simulation)."""


def case_entry(result: CaseResult, repeats: Repeats | None = None) -> CaseEntry:
    """One case result as a ``cases`` entry (with ``tracegrade run``'s :class:`Repeats`)."""
    extra = (
        {}
        if repeats is None
        else {
            "attempts": list(repeats.attempts),
            "spent": spent(repeats.attempts),
            "error": repeats.error,
            "spread": repeats.spread,
            "flaky": repeats.flaky,
            **({} if repeats.goal is None else {"goal": repeats.goal}),
        }
    )
    return CaseEntry(
        case_id=result.case_id,
        trace_id=result.trace_id,
        passed=result.passed,
        score=result.score,
        scores=dict(result.scores),
        reasons=list(result.reasons),
        notes=list(result.notes),
        hard_failures=list(result.hard_failures),
        axes=dict(result.axes),
        excluded=dict(result.excluded),
        tags=list(result.tags),
        tier=result.tier,
        category=result.category,
        weight=result.weight,
        metadata=dict(result.metadata),
        usage=_usage(result),
        details={
            name: ScorerDetail(value=d["value"], reason=d["reason"], details=d["details"])
            for name, d in result.details.items()
        },
        **extra,
    )


def document(
    result: RunResult,
    traces: Sequence[AgentTrace],
    dataset: Dataset | None,
    *,
    trace_source: str,
    config_files: Sequence[str],
    evaluator: Mapping[str, Any] | None = None,
) -> StreamedDocument:
    """A whole run held in memory as its document (every case of ``dataset``'s, no tier, all
    must pass): its summary from a :class:`~tracegrade.scoring.summary.RunningSummary` over
    the results, as a streamed run's; ``evaluator``: what scored it."""
    running = RunningSummary(result.summary.threshold)
    for case in result.results:
        running.add(case)
    summary = running.summary(result.summary.unmatched_traces)
    run = run_meta(
        summary,
        traces,
        dataset,
        tier=None,
        min_pass_rate=1.0,
        trace_source=trace_source,
        config_files=config_files,
        evaluator=evaluator,
    )
    return StreamedDocument(head_of(run, summary), CaseList(case_entry(r) for r in result.results))
