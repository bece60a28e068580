"""Evaluation: match golden cases to traces, run every scorer, and summarise the run.

Matching a case to its trace(s), in order of precedence:

1. the trace's ``tracegrade.case_id`` attribute (root span or resource, e.g. set through
   ``OTEL_RESOURCE_ATTRIBUTES``) equals the case id (a trace whose attribute names no case of
   the dataset, e.g. from another dataset's run, falls through to the rules below);
2. an explicit mapping: the case's ``trace_id`` field, or a mapping file (case id -> trace id);
3. the trace's first user input equals the case's ``input`` (whitespace-normalised; a
   placeholder of redacted data, ``[REDACTED:email:1]``, stands for any text:
   :mod:`tracegrade.dataset.placeholders`); a case with ``turns`` also needs the trace's user
   inputs to start with those turns;
4. a case with ``turns`` that no rule above matched: the conversations its turns were
   recorded in, one trace per turn, each merged into one trace (:mod:`tracegrade.scoring.turns`).

A case may match several traces (repeated runs); each pair is one result. A case that
matches none is a failed result with the reason. Without a dataset every trace is scored by
the reference-free scorers. A scorer that raises fails that case (its reason says so), never
the run.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable, Mapping, Sequence

from tracegrade.attributes import CASE_ID_ATTR
from tracegrade.config import Config
from tracegrade.dataset import Case, Dataset, Tier
from tracegrade.dataset.placeholders import has_placeholder, same_message
from tracegrade.scoring.goals import SIMULATION_SCORES
from tracegrade.scoring.labels import reason_line
from tracegrade.scoring.overall import combine
from tracegrade.scoring.parallel import ordered_map
from tracegrade.scoring.results import (
    CaseResult,
    RunResult,
)
from tracegrade.scoring.score import Score, Scorer
from tracegrade.scoring.summary import summarize
from tracegrade.scoring.turns import follows_turns, joined_conversations, turn_of
from tracegrade.scoring.usage import measure
from tracegrade.trace import AgentTrace

# --- matching ---------------------------------------------------------------------------------


def _normalized(text: str | None) -> str:
    return " ".join((text or "").split())


def case_id_of(trace: AgentTrace) -> str | None:
    """The ``tracegrade.case_id`` attribute of the trace's root span or resource."""
    value = trace.root_attributes.get(CASE_ID_ATTR, trace.resource_attributes.get(CASE_ID_ATTR))
    return None if value is None else str(value)


def _by_input(by_input: Mapping[str, list[AgentTrace]], text: str | None) -> list[AgentTrace]:
    """The traces whose first user input is ``text``: looked up, or for a case input with a
    placeholder of redacted data (:mod:`tracegrade.dataset.placeholders`) matched."""
    if not has_placeholder(text):
        return by_input.get(_normalized(text), [])
    return [t for first, found in by_input.items() if same_message(text, first) for t in found]


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
    free = [t for t in traces if (i := case_id_of(t)) is None or i not in case_ids]
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
            or [
                t
                for t in _by_input(by_input, case.input)
                if case.input is not None and follows_turns(t, case)  # a simulated user's
            ]  # case may have no input to match by
        )
        if not matched and (turns := [t for t in free if turn_of(t, case)]):
            joined = joined_conversations(case, turns)
            matched = [merged for merged, _ in joined]
            used.update(i for _, ids in joined for i in ids)
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
    extra: Sequence[Score] = (),
) -> CaseResult:
    """All scorers on one trace, combined (see :mod:`tracegrade.scoring.overall`);
    ``extra`` are scores from outside the trace (a simulated user's verdict:
    :mod:`tracegrade.scoring.goals`), combined with them."""
    scores = {s.name: s for s in (run_scorer(scorer, trace, case) for scorer in scorers)}
    scores.update((s.name, s) for s in extra)
    content = trace.gap("message_content")
    overall = combine(scores, weights, threshold, with_fallback=content is not None)
    reasons = [*overall.hard_failures]
    reasons += [
        reason_line(name, score.reason)
        for name, score in scores.items()
        if score.value is not None and score.value < 1.0 and name in _reported(weights)
    ]
    notes = tuple(f"{axis} not scored: {why}" for axis, why in overall.excluded.items())
    if overall.fallback:
        notes += (f"scored on {' and '.join(overall.fallback)} only: no weighted axis could be",)
    if content is not None:
        notes = (content.reason, *notes)  # first: what a report says before anything else
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
        span_id=trace.evaluated_span_id,
    )


def _reported(weights: Mapping[str, float]) -> set[str]:
    names = {a for a, w in weights.items() if w > 0}
    if "correctness" in names:
        names |= {"tool_correctness", "tool_arguments"}
    return names | {"hallucination", "budgets", "judge", "faithfulness", *SIMULATION_SCORES}


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
