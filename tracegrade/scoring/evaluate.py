"""Evaluation: match golden cases to traces, run every scorer, and summarise the run.

Matching a case to its trace(s), in order of precedence:

1. the trace's ``tracegrade.case_id`` attribute (root span or resource, e.g. set through
   ``OTEL_RESOURCE_ATTRIBUTES``) equals the case id (a trace whose attribute names no case of
   the dataset, e.g. from another dataset's run, falls through to the rules below);
2. an explicit mapping: the case's ``trace_id`` field, or a mapping file (case id -> trace id);
3. the trace's first user input equals the case's ``input`` (whitespace-normalised); a case
   with ``turns`` also needs the trace's user inputs to start with those turns.

A case may match several traces (repeated runs); each pair is one result. A case that
matches none is a failed result with the reason. Without a dataset every trace is scored by
the reference-free scorers. A scorer that raises fails that case (its reason says so), never
the run.
"""

from __future__ import annotations

import statistics
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.attributes import CASE_ID_ATTR
from tracegrade.config import Config
from tracegrade.dataset import Case, Dataset, Tier
from tracegrade.scoring.overall import combine
from tracegrade.scoring.parallel import ordered_map
from tracegrade.scoring.score import Score, Scorer
from tracegrade.scoring.usage import Usage, measure
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class CaseResult:
    """One case scored against one trace (``case_id`` None without a dataset; ``trace_id``
    None when no trace matched the case). ``reasons`` say why the case failed or lost score;
    ``notes`` what was not scored and why ("groundedness not scored: ..."), never a failure
    reason by itself."""

    case_id: str | None
    trace_id: str | None
    passed: bool
    score: float | None
    scores: Mapping[str, float | None]
    reasons: tuple[str, ...]
    hard_failures: tuple[str, ...] = ()
    excluded: Mapping[str, str] = field(default_factory=dict)
    axes: Mapping[str, float] = field(default_factory=dict)
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    usage: Usage | None = None
    weight: float = 1.0
    tags: tuple[str, ...] = ()
    tier: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    category: str | None = None
    """The case's ``category`` (for per-category breakdowns in reports)."""

    @property
    def hallucinated(self) -> bool:
        """See :func:`hallucinated` (the one definition every hallucination rate uses)."""
        return hallucinated(self.scores, self.details)


HALLUCINATION_AXES = ("hallucination", "value_grounding")


def hallucinated(
    scores: Mapping[str, float | None], details: Mapping[str, Mapping[str, Any]]
) -> bool:
    """THE hallucination test behind every hallucination rate tracegrade reports (run summary,
    comparison, history, dashboard): the ``hallucination`` or ``value_grounding`` score is
    below 1, or the answer hit a ``must_not_contain`` phrase. ``scores`` maps scorer names to
    values in [0, 1] (None when not scored); ``details`` scorer names to their Score documents."""
    if any((v := scores.get(axis)) is not None and v < 1.0 for axis in HALLUCINATION_AXES):
        return True
    found = ((details.get("hallucination") or {}).get("details") or {}).get("forbidden_found")
    return bool(found)


@dataclass(frozen=True)
class RunSummary:
    """Totals of a run. Latency percentiles are in ms over trace durations, and over single
    LLM and tool calls; cost sums the traces whose cost is known."""

    results: int
    passed: int
    failed: int
    pass_rate: float
    score: float | None
    threshold: float
    unmatched_cases: int
    unmatched_traces: int
    axes: Mapping[str, float]
    scorers: Mapping[str, float]
    excluded: Mapping[str, int]
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    llm_latency_p50_ms: float | None
    llm_latency_p95_ms: float | None
    tool_latency_p50_ms: float | None
    tool_latency_p95_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    hallucination_rate: float | None
    judge: Mapping[str, Any] | None = None
    """The LLM judge's own usage, apart from the agent's: ``{"calls", "cached", "input_tokens",
    "output_tokens", "cost_usd", "errors", "models"}``; None when no case was judged."""
    categories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per case ``category``: ``{"results", "passed", "pass_rate", "score"}`` (weighted mean
    score, None when none was scored); empty when no case has a category."""


@dataclass(frozen=True)
class RunResult:
    """Every case result and the summary."""

    results: tuple[CaseResult, ...]
    summary: RunSummary


# --- matching ---------------------------------------------------------------------------------


def _normalized(text: str | None) -> str:
    return " ".join((text or "").split())


def case_id_of(trace: AgentTrace) -> str | None:
    """The ``tracegrade.case_id`` attribute of the trace's root span or resource."""
    value = trace.root_attributes.get(CASE_ID_ATTR, trace.resource_attributes.get(CASE_ID_ATTR))
    return None if value is None else str(value)


def _follows_turns(trace: AgentTrace, case: Case) -> bool:
    turns = [_normalized(t) for t in case.turns or ()]
    return [_normalized(u) for u in trace.user_inputs[: len(turns)]] == turns


def match_cases(
    cases: Sequence[Case],
    traces: Sequence[AgentTrace],
    mapping: Mapping[str, Sequence[str]] | None = None,
) -> tuple[list[tuple[Case, list[AgentTrace]]], int]:
    """Each case with its traces (see the module docstring), and the number of traces no
    case claimed."""
    by_attr: dict[str, list[AgentTrace]] = {}
    by_id = {t.trace_id: t for t in traces}
    by_input: dict[str, list[AgentTrace]] = {}
    case_ids = {case.id for case in cases}
    for trace in traces:
        if (case_id := case_id_of(trace)) is not None and case_id in case_ids:
            by_attr.setdefault(case_id, []).append(trace)
        elif trace.user_inputs:
            by_input.setdefault(_normalized(trace.user_inputs[0]), []).append(trace)
    pairs: list[tuple[Case, list[AgentTrace]]] = []
    used: set[str] = set()
    for case in cases:
        explicit = [*case.trace_ids, *(i.lower() for i in (mapping or {}).get(case.id or "", ()))]
        matched = (
            by_attr.get(case.id or "")
            or [by_id[i] for i in explicit if i in by_id]
            or [t for t in by_input.get(_normalized(case.input), []) if _follows_turns(t, case)]
        )
        used.update(t.trace_id for t in matched)
        pairs.append((case, matched))
    return pairs, sum(1 for t in traces if t.trace_id not in used)


# --- scoring ------------------------------------------------------------------------------------


def run_scorer(scorer: Scorer, trace: AgentTrace, case: Case | None) -> Score:
    """Run one scorer; an exception becomes a hard failure of this case."""
    name = getattr(scorer, "name", type(scorer).__name__)
    try:
        return scorer(trace, case)
    except Exception as exc:  # a broken scorer fails the case, not the run
        last = traceback.extract_tb(exc.__traceback__)[-1]
        where = f" at {last.filename}:{last.lineno}"
        return Score(
            name,
            None,
            f"scorer crashed: {type(exc).__name__}: {exc}{where}",
            (f"scorer {name} crashed: {type(exc).__name__}: {exc}",),
        )


def score_trace(
    trace: AgentTrace,
    case: Case | None,
    scorers: Sequence[Scorer],
    config: Config,
    weights: Mapping[str, float],
    threshold: float,
) -> CaseResult:
    """All scorers on one trace, combined (see :mod:`tracegrade.scoring.overall`)."""
    scores = {s.name: s for s in (run_scorer(scorer, trace, case) for scorer in scorers)}
    overall = combine(scores, weights, threshold)
    reasons = [*overall.hard_failures]
    reasons += [
        f"{name}: {score.reason}"
        for name, score in scores.items()
        if score.value is not None and score.value < 1.0 and name in _reported(weights)
    ]
    notes = tuple(f"{axis} not scored: {why}" for axis, why in overall.excluded.items())
    if overall.value is None:
        reasons.append("no weighted axis could be scored")
    return CaseResult(
        case_id=case.id if case else None,
        trace_id=trace.trace_id,
        passed=overall.passed,
        score=overall.value,
        scores={name: score.value for name, score in scores.items()},
        reasons=tuple(dict.fromkeys(reasons)),
        notes=notes,
        hard_failures=overall.hard_failures,
        excluded=overall.excluded,
        axes=overall.axes,
        details={
            name: {"value": s.value, "reason": s.reason, "details": dict(s.details)}
            for name, s in scores.items()
        },
        usage=measure(trace, config.pricing),
        weight=case.weight if case else 1.0,
        tags=tuple(case.tags) if case else (),
        tier=case.tier if case else None,
        metadata=dict(case.metadata) if case else {},
        category=case.category if case else None,
    )


def _reported(weights: Mapping[str, float]) -> set[str]:
    names = {a for a, w in weights.items() if w > 0}
    if "correctness" in names:
        names |= {"tool_correctness", "tool_arguments"}
    return names | {"hallucination", "budgets", "judge"}


def unmatched(case: Case) -> CaseResult:
    """The failed result of a case no trace matched."""
    return CaseResult(
        case.id,
        None,
        False,
        None,
        {},
        ("no trace matched this case",),
        weight=case.weight,
        tags=tuple(case.tags),
        tier=case.tier,
        metadata=dict(case.metadata),
        category=case.category,
    )


# --- the run ------------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if 1 <= q <= 99
        else max(values)
    )


def _total(values: list[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _judge_usage(results: Sequence[CaseResult]) -> dict[str, Any] | None:
    """Totals of the judge's usage over the cases it judged (see ``RunSummary.judge``)."""
    judged = [
        d["details"] for r in results if (d := r.details.get("judge")) and d["details"].get("usage")
    ]
    if not judged:
        return None
    usages = [d["usage"] for d in judged]
    costs = [u.get("cost_usd") for u in usages]
    return {
        **{
            k: sum(u.get(k, 0) for u in usages)
            for k in ("calls", "cached", "input_tokens", "output_tokens")
        },
        "cost_usd": None if any(c is None for c in costs) else sum(costs),
        "errors": sum(1 for d in judged if d.get("error")),
        "models": sorted({d["model"] for d in judged}),
    }


def _weighted_score(results: Sequence[CaseResult]) -> float | None:
    """The weight-weighted mean score of the scored results (None when none carries weight)."""
    scored = [(r.score, r.weight) for r in results if r.score is not None]
    weight = sum(w for _, w in scored)
    return sum(score * w for score, w in scored) / weight if weight else None


def _by_category(results: Sequence[CaseResult]) -> dict[str, dict[str, Any]]:
    """Totals per case category (see ``RunSummary.categories``)."""
    out: dict[str, dict[str, Any]] = {}
    for category in sorted({r.category for r in results if r.category is not None}):
        group = [r for r in results if r.category == category]
        passed = sum(r.passed for r in group)
        out[category] = {
            "results": len(group),
            "passed": passed,
            "pass_rate": passed / len(group),
            "score": _weighted_score(group),
        }
    return out


def summarize(results: Sequence[CaseResult], threshold: float, unmatched_traces: int) -> RunSummary:
    """Totals over the results (see :class:`RunSummary`)."""
    durations = [
        r.usage.duration_ms for r in results if r.usage and r.usage.duration_ms is not None
    ]
    llm = [d for r in results if r.usage for d in r.usage.llm_durations_ms]
    tools = [d for r in results if r.usage for d in r.usage.tool_durations_ms]
    costs = [r.usage.cost_usd for r in results if r.usage and r.usage.cost_usd is not None]
    axes = {a for r in results for a in r.axes}
    names = {n for r in results for n in r.scores}
    excluded: dict[str, int] = {}
    for result in results:
        for axis in result.excluded:
            excluded[axis] = excluded.get(axis, 0) + 1
    with_trace = [r for r in results if r.trace_id is not None]
    passed = sum(r.passed for r in results)
    return RunSummary(
        results=len(results),
        passed=passed,
        failed=len(results) - passed,
        pass_rate=passed / len(results) if results else 0.0,
        score=_weighted_score(results),
        threshold=threshold,
        unmatched_cases=sum(1 for r in results if r.trace_id is None),
        unmatched_traces=unmatched_traces,
        axes={a: _mean([r.axes[a] for r in results if a in r.axes]) for a in sorted(axes)},  # type: ignore[misc]
        scorers={
            n: m
            for n in sorted(names)
            if (m := _mean([v for r in results if (v := r.scores.get(n)) is not None])) is not None
        },
        excluded=excluded,
        latency_p50_ms=percentile(durations, 50),
        latency_p95_ms=percentile(durations, 95),
        llm_latency_p50_ms=percentile(llm, 50),
        llm_latency_p95_ms=percentile(llm, 95),
        tool_latency_p50_ms=percentile(tools, 50),
        tool_latency_p95_ms=percentile(tools, 95),
        input_tokens=_total([r.usage.input_tokens for r in results if r.usage]),
        output_tokens=_total([r.usage.output_tokens for r in results if r.usage]),
        cost_usd=sum(costs) if costs else None,
        hallucination_rate=(sum(r.hallucinated for r in with_trace) / len(with_trace))
        if with_trace
        else None,
        judge=_judge_usage(results),
        categories=_by_category(results),
    )


Progress = Callable[[CaseResult], None]


def run_threshold(threshold: float | None, dataset: Dataset | None, config: Config) -> float:
    """The pass score per case (0-1): ``threshold``, else the dataset's, else the config's."""
    if threshold is not None:
        return threshold
    return dataset.threshold if dataset and dataset.threshold is not None else config.threshold


def run_weights(dataset: Dataset | None, config: Config) -> Mapping[str, float]:
    """Axis -> weight: the dataset's, else the config's; the config's reference-free weights
    without a dataset."""
    return (dataset.weights or config.weights) if dataset else config.reference_free_weights


def _prefetch(scorers: Sequence[Scorer], pairs: Sequence[tuple[AgentTrace, Case | None]]) -> None:
    """Scorers that call a service (the LLM judge) get every (trace, case) pair first, through
    an optional ``prefetch(pairs)`` method, so they can batch and parallelise their calls; the
    other scorers still run one case at a time."""
    for scorer in scorers:
        if callable(prefetch := getattr(scorer, "prefetch", None)):
            prefetch(pairs)


def evaluate(
    traces: Sequence[AgentTrace],
    dataset: Dataset | None,
    scorers: Sequence[Scorer],
    config: Config,
    *,
    tier: Tier | None = None,
    threshold: float | None = None,
    mapping: Mapping[str, Sequence[str]] | None = None,
    progress: Progress | None = None,
    workers: int = 1,
) -> RunResult:
    """Score traces against a dataset's cases (or reference-free without one).

    Threshold precedence: argument, then the dataset's, then the config's. Weights: the
    dataset's, else the config's (reference-free weights without a dataset). ``workers``:
    processes that run the scorers (see :mod:`tracegrade.scoring.parallel`); the results are
    the same, in the same order.
    """
    threshold = run_threshold(threshold, dataset, config)
    weights = run_weights(dataset, config)
    if dataset is None:
        pairs: list[tuple[Case | None, list[AgentTrace]]] = [(None, [t]) for t in traces]
        leftover = 0
    else:
        matched, leftover = match_cases(dataset.tier(tier), traces, mapping)
        pairs = [*matched]
    _prefetch(scorers, [(t, c) for c, case_traces in pairs for t in case_traces])
    jobs: list[tuple[Case | None, AgentTrace | None]] = [
        (case, trace) for case, case_traces in pairs for trace in (case_traces or (None,))
    ]

    def job(index: int) -> CaseResult:
        case, trace = jobs[index]
        if trace is None:
            assert case is not None
            return unmatched(case)
        return score_trace(trace, case, scorers, config, weights, threshold)

    def scored(result: CaseResult) -> None:
        if progress and result.trace_id is not None:
            progress(result)

    results = ordered_map(job, len(jobs), workers, scored)
    return RunResult(tuple(results), summarize(results, threshold, leftover))
