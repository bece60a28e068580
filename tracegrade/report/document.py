"""The run document: the ``--json`` output contract, also stored for later comparison.

Schema ``tracegrade.run/1``::

    {
      "schema_version": "tracegrade.run/1",
      "run": {"run_id", "created_at" (ISO 8601 UTC), "dataset": {"name", "source", "digest",
              "cases"} | null, "tier", "threshold", "min_pass_rate", "passed",
              "tracegrade_version", "git_sha", "agent_version", "models", "trace_source",
              "config_sources", "git_branch", "label", "agent": {"kind", "spec"} | null,
              "started_at", "finished_at" (ISO 8601 UTC), "repeat", "concurrency",
              "interrupted"},
      "summary": {"results", "passed", "failed", "pass_rate", "score", "threshold",
                  "unmatched_cases", "unmatched_traces", "axes": {axis: mean}, "scorers":
                  {name: mean}, "excluded": {axis: count}, "latency_p50_ms", "latency_p95_ms",
                  "llm_latency_p50_ms", "llm_latency_p95_ms", "tool_latency_p50_ms",
                  "tool_latency_p95_ms", "input_tokens", "output_tokens", "cost_usd",
                  "hallucination_rate" (:func:`tracegrade.compare.hallucinated`),
                  "latency_mean_ms", "latency_total_ms", "by_tag": {tag: {"cases", "passed",
                  "pass_rate", "score", "hallucination_rate"}}, "judge": {"calls", "cached",
                  "input_tokens", "output_tokens", "cost_usd", "errors", "models"} | null,
                  "categories": {category: {"results", "passed", "pass_rate", "score"}},
                  "latency_sample": {"method", "size", "values": {kind: count}} (only when a
                  run had more latency values of a kind than the sample size: its percentiles
                  are then estimated from a uniform sample of ``size`` values;
                  :mod:`tracegrade.scoring.summary`)},
      "cases": [{"case_id", "trace_id", "passed", "score", "scores": {scorer: value|null},
                 "reasons": [...], "notes": [...] (axes not scored, never a failure),
                 "hard_failures": [...], "axes": {...}, "excluded": {...},
                 "tags": [...], "tier", "category", "weight", "metadata": {...},
                 "usage": {"duration_ms", "input_tokens", "output_tokens", "cost_usd",
                           "llm_calls", "tool_calls", "llm_latency_max_ms",
                           "tool_latency_max_ms", "unpriced_models"},
                 "details": {scorer: {"value", "reason", "details"}}}]
    }

``tracegrade run`` adds (:mod:`tracegrade.runner.results`): per case ``"attempts":
[{"input_tokens", "output_tokens", "cost_usd", "repeat", "trace_ids", "passed", "score",
"error", "followups", "followup_sources", "followup_messages": [{"source", "question",
"reply"}], "gave_up", "revivals" (the turns the agent was revived before), "agent_ms",
"settle_ms", "score_ms"}]``, ``"spread"`` (max - min score over repeats), ``"flaky"`` (repeats
disagree on pass/fail) and ``"spent": {"attempts", "input_tokens", "output_tokens",
"cost_usd"}`` (every attempt's together); in the summary ``"flaky"``, ``"agent_errors"``,
``"spent"`` (every attempt of every case) and ``"runner": {"attempts", "wall_s",
"agent_ms_p50", "settle_ms_p50", "settle_ms_p95", "score_ms_p50", "score_ms_p95"}``. With
repeats, a case's
``score`` is the median of its repeats' scores and ``passed`` that of the median repeat ordered by
(passed, score), and its ``usage`` (so the summary's tokens and cost) that repeat's: one
attempt per case, while ``spent`` is what the run cost.

Values are in [0, 1]; ``null`` means the scorer could not run or did not apply (its reason is
in ``details``). Durations are milliseconds, costs USD, tokens tokens. The agent's tokens and
cost (``input_tokens``, ``output_tokens``, ``cost_usd``, per case ``usage``) never include the
LLM judge's, which are in ``summary.judge`` and per case in ``details.judge.details.usage``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import subprocess
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade import environment
from tracegrade.dataset import Dataset
from tracegrade.scoring.results import CaseResult, RunResult
from tracegrade.scoring.streaming import TraceFacts
from tracegrade.scoring.summary import RunningSummary
from tracegrade.trace import AgentTrace
from tracegrade.version import __version__

SCHEMA_VERSION = "tracegrade.run/1"


@dataclass(frozen=True)
class RunInfo:
    """Metadata of a run, stored with its results."""

    run_id: str
    created_at: str
    dataset: Mapping[str, Any] | None
    tier: str | None
    threshold: float
    min_pass_rate: float
    passed: bool
    git_sha: str | None
    agent_version: str | None
    models: tuple[str, ...]
    trace_source: str
    config_sources: tuple[str, ...]
    tracegrade_version: str = __version__
    git_branch: str | None = None
    label: str | None = None
    """Free text from ``tracegrade run --label`` (agent version, model)."""
    agent: Mapping[str, Any] | None = None
    """``{"kind": "python" | "command" | "http", "spec": ...}`` for ``tracegrade run``."""
    started_at: str | None = None
    finished_at: str | None = None
    repeat: int = 1
    concurrency: int | None = None
    interrupted: bool = False
    evaluator: Mapping[str, Any] | None = None
    """Who scored the run: :meth:`tracegrade.scoring.identity.Evaluator.to_dict`."""


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


def run_passed(result: RunResult | Mapping[str, Any], min_pass_rate: float) -> bool:
    """A run passes when at least one case was scored and the pass rate reaches
    ``min_pass_rate`` (``result``: a run's results, or its document summary)."""
    summary = dataclasses.asdict(result.summary) if isinstance(result, RunResult) else result
    return bool(
        summary["results"] > summary["unmatched_cases"] and summary["pass_rate"] >= min_pass_rate
    )


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run id: ``YYYYmmdd-HHMMSS-xxxxxx`` (UTC time, 6 random hex digits)."""
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


def run_info(
    result: RunResult | Mapping[str, Any],
    traces: Sequence[AgentTrace] | TraceFacts,
    dataset: Dataset | None,
    *,
    tier: str | None,
    min_pass_rate: float,
    trace_source: str,
    config_sources: Sequence[str],
    run_id: str | None = None,
    evaluator: Mapping[str, Any] | None = None,
) -> RunInfo:
    """Metadata for a run: ids, dataset version, code version, agent version and models
    (from the traces, or the :class:`TraceFacts` a streamed run kept of them). ``result``:
    the run's results, or the document summary of a streamed run
    (:class:`~tracegrade.scoring.summary.RunningSummary`); ``run_id``: the id chosen when the
    run started (default: a new one, :func:`new_run_id`); ``evaluator``: the identity of what
    scored it (:mod:`tracegrade.scoring.identity`)."""
    facts = traces if isinstance(traces, TraceFacts) else TraceFacts.of(traces)
    versions = facts.versions
    models = sorted(facts.models)
    now = dt.datetime.now(dt.UTC)
    return RunInfo(
        run_id=run_id or new_run_id(now),
        created_at=now.isoformat(timespec="seconds"),
        dataset=None
        if dataset is None
        else {
            "name": dataset.name,
            "source": dataset.source,
            "digest": dataset.digest,
            "cases": len(dataset.cases),
        },
        tier=tier,
        threshold=result.summary.threshold
        if isinstance(result, RunResult)
        else result["threshold"],
        min_pass_rate=min_pass_rate,
        passed=run_passed(result, min_pass_rate),
        git_sha=git_sha(),
        agent_version=versions.most_common(1)[0][0] if versions else None,
        models=tuple(models),
        trace_source=trace_source,
        config_sources=tuple(config_sources),
        evaluator=evaluator,
    )


def case_dict(result: CaseResult) -> dict[str, Any]:
    """One case result in the document's shape."""
    usage = result.usage
    return {
        "case_id": result.case_id,
        "trace_id": result.trace_id,
        "passed": result.passed,
        "score": result.score,
        "scores": dict(result.scores),
        "reasons": list(result.reasons),
        "notes": list(result.notes),
        "hard_failures": list(result.hard_failures),
        "axes": dict(result.axes),
        "excluded": dict(result.excluded),
        "tags": list(result.tags),
        "tier": result.tier,
        "category": result.category,
        "weight": result.weight,
        "metadata": dict(result.metadata),
        "usage": None
        if usage is None
        else {
            "duration_ms": usage.duration_ms,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cost_usd": usage.cost_usd,
            "llm_calls": usage.llm_calls,
            "tool_calls": usage.tool_calls,
            "llm_latency_max_ms": max(usage.llm_durations_ms, default=None),
            "tool_latency_max_ms": max(usage.tool_durations_ms, default=None),
            "unpriced_models": list(usage.unpriced_models),
        },
        "details": {k: dict(v) for k, v in result.details.items()},
    }


def document(result: RunResult, info: RunInfo) -> dict[str, Any]:
    """The whole run document (see the module docstring); its summary from a
    :class:`~tracegrade.scoring.summary.RunningSummary` over the results, as a streamed
    run's."""
    running = RunningSummary(result.summary.threshold)
    for case in result.results:
        running.add(case)
    summary = running.summary(result.summary.unmatched_traces)
    return streamed_document(summary, [case_dict(r) for r in result.results], info)


def streamed_document(
    summary: Mapping[str, Any], cases: Iterable[Mapping[str, Any]], info: RunInfo
) -> dict[str, Any]:
    """The run document of a summary and case entries (:func:`case_dict`) built apart: by
    :func:`document`, or while a run streams (a
    :class:`~tracegrade.scoring.summary.RunningSummary` and a
    :class:`~tracegrade.report.caselog.CaseLog`, kept as the document's ``cases``)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "run": dataclasses.asdict(info),
        "summary": dict(summary),
        "cases": cases,
    }
