"""The overall score: a weighted mean of axes, and the pass rule.

Axes are scorer names, plus ``correctness``, which is ``tool_correctness`` with
``tool_arguments`` folded in (their mean) when the case gives expected arguments. Defaults:
groundedness 0.4, correctness 0.4, completeness 0.2, hallucination 0.5, judge 0.4
(``config/scoring.yaml``); without a golden case the reference-free weights apply.

The overall score is the weighted mean of the axes that were scored. An axis whose scorer
did not run (or does not apply to the case) is left out and the remaining weights
re-normalised; the result lists it under ``excluded`` with the reason, which is a note, not
a failure reason. The ``hallucination`` axis is the fraction of ``must_contain`` phrases
found, so it counts only for a case with ``must_contain`` (a ``must_not_contain`` hit is a
hard failure either way); at weight 0.5, missing every required phrase fails a case that is
otherwise perfect (1.0 / 1.5 < 0.7). The ``judge`` axis counts when the case has a rubric and
the judge produced a score; with weights that name no ``judge`` it weighs
:data:`DEFAULT_JUDGE_WEIGHT` (a weight of 0 leaves it out). Neither of these two is noted as
not scored on the cases that do not ask for it. When no weighted axis could be scored on a
trace without message content (``with_fallback``: a case that checks only the answer, say),
the score is the mean of the :data:`FALLBACK_AXES` that were: what a trace shows without
content. A case
passes when its score is at least the threshold and no scorer reported a hard failure; a case
where not even those could be scored does not pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tracegrade.scoring.score import Score

CORRECTNESS = "correctness"
HALLUCINATION = "hallucination"
JUDGE = "judge"
DEFAULT_JUDGE_WEIGHT = 0.4
"""The judge axis's weight when the weights in force do not name ``judge``."""
CASE_AXES = frozenset({HALLUCINATION, JUDGE})
"""Axes that exist only for cases that ask for them (``must_contain``, a rubric): left out
without a note elsewhere (a judge error is a hard failure on its own)."""
FALLBACK_AXES = ("errors", "budgets")
"""Scored, equally weighted, when no weighted axis could be: failed calls and budgets read
from spans alone (no message content needed)."""


@dataclass(frozen=True)
class Overall:
    """The combined score: ``value`` (None when no axis ran), the axes used with their
    values, the axes excluded with reasons, and the pass verdict with its reasons."""

    value: float | None
    axes: Mapping[str, float]
    excluded: Mapping[str, str]
    passed: bool
    hard_failures: tuple[str, ...]
    fallback: tuple[str, ...] = ()
    """The :data:`FALLBACK_AXES` the value was made of, when no weighted axis was scored."""


def axis_value(axis: str, scores: Mapping[str, Score]) -> tuple[float | None, str]:
    """(value, reason when None) of one axis."""
    if axis == CORRECTNESS:
        parts = [
            scores[n]
            for n in ("tool_correctness", "tool_arguments")
            if n in scores and scores[n].ran
        ]
        if parts:
            return sum(s.value for s in parts) / len(parts), ""  # type: ignore[misc]
        reason = (
            scores["tool_correctness"].reason
            if "tool_correctness" in scores
            else "tool_correctness did not run"
        )
        return None, reason
    score = scores.get(axis)
    if score is None:
        return None, f"no scorer named {axis!r} ran"
    if axis == HALLUCINATION and score.ran and not score.details.get("required"):
        return None, "the case has no must_contain phrase"
    return score.value, score.reason


def effective_weights(
    scores: Mapping[str, Score], weights: Mapping[str, float]
) -> dict[str, float]:
    """``weights`` plus the judge axis at :data:`DEFAULT_JUDGE_WEIGHT` when the judge scored
    this case and ``weights`` does not name it."""
    judged = JUDGE in scores and scores[JUDGE].ran
    return (
        {**weights, JUDGE: DEFAULT_JUDGE_WEIGHT} if judged and JUDGE not in weights else {**weights}
    )


def combine(
    scores: Mapping[str, Score],
    weights: Mapping[str, float],
    threshold: float,
    *,
    with_fallback: bool = False,
) -> Overall:
    """Weighted mean over the axes that ran (over the :data:`FALLBACK_AXES` when none did and
    ``with_fallback``), and the pass verdict (see the module docstring)."""
    weights = effective_weights(scores, weights)
    axes: dict[str, float] = {}
    excluded: dict[str, str] = {}
    for axis, weight in weights.items():
        if weight <= 0:
            continue
        value, reason = axis_value(axis, scores)
        if value is None and axis in CASE_AXES:
            continue
        if value is None:
            excluded[axis] = reason
        else:
            axes[axis] = value
    total = sum(weights[a] for a in axes)
    value = sum(weights[a] * v for a, v in axes.items()) / total if total else None
    fallback: tuple[str, ...] = ()
    if value is None and with_fallback:
        found = {a: s.value for a in FALLBACK_AXES if (s := scores.get(a)) and s.value is not None}
        if found:
            fallback, value = tuple(found), sum(found.values()) / len(found)
            axes.update(found)
    hard = tuple(h for s in scores.values() for h in s.hard_failures)
    passed = value is not None and value >= threshold and not hard
    return Overall(value, axes, excluded, passed, hard, fallback)
