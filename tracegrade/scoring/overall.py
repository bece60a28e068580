"""The overall score: a weighted mean of axes, and the pass rule.

Axes are scorer names, plus ``correctness``, which is ``tool_correctness`` with
``tool_arguments`` folded in (their mean) when the case gives expected arguments. Defaults:
groundedness 0.4, correctness 0.4, completeness 0.2 (``config/scoring.yaml``); without a
golden case the reference-free weights apply. An axis whose scorer did not run is left out
and the remaining weights re-normalised; the result lists it under ``excluded`` with the
reason. A case passes when its score is at least the threshold and no scorer reported a hard
failure; a case where no axis could run does not pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tracegrade.scoring.score import Score

CORRECTNESS = "correctness"


@dataclass(frozen=True)
class Overall:
    """The combined score: ``value`` (None when no axis ran), the axes used with their
    values, the axes excluded with reasons, and the pass verdict with its reasons."""

    value: float | None
    axes: Mapping[str, float]
    excluded: Mapping[str, str]
    passed: bool
    hard_failures: tuple[str, ...]


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
    return score.value, score.reason


def combine(scores: Mapping[str, Score], weights: Mapping[str, float], threshold: float) -> Overall:
    """Weighted mean over the axes that ran, and the pass verdict (see the module docstring)."""
    axes: dict[str, float] = {}
    excluded: dict[str, str] = {}
    for axis, weight in weights.items():
        if weight <= 0:
            continue
        value, reason = axis_value(axis, scores)
        if value is None:
            excluded[axis] = reason
        else:
            axes[axis] = value
    total = sum(weights[a] for a in axes)
    value = sum(weights[a] * v for a, v in axes.items()) / total if total else None
    hard = tuple(h for s in scores.values() for h in s.hard_failures)
    passed = value is not None and value >= threshold and not hard
    return Overall(value, axes, excluded, passed, hard)
