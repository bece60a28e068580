"""Summary additions of the run document: mean and total latency, the hallucination rate (one
definition, :func:`tracegrade.compare.hallucinated`), and a breakdown by tag (the breakdown by
case category is the summary's ``categories``)."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from tracegrade.compare import hallucination_rate

Case = Mapping[str, Any]


def _group_stats(cases: Sequence[Case]) -> dict[str, Any]:
    scores = [c["score"] for c in cases if c.get("score") is not None]
    passed = sum(bool(c["passed"]) for c in cases)
    return {
        "cases": len(cases),
        "passed": passed,
        "pass_rate": passed / len(cases),
        "score": statistics.fmean(scores) if scores else None,
        "hallucination_rate": hallucination_rate(cases),
    }


def breakdown(cases: Iterable[Case], keys: Callable[[Case], Iterable[str]]) -> dict[str, Any]:
    """``{group: {"cases", "passed", "pass_rate", "score" (mean), "hallucination_rate"}}``
    over the groups ``keys`` puts each case in (a case may be in several), sorted by name."""
    groups: dict[str, list[Case]] = {}
    for case in cases:
        for key in keys(case):
            groups.setdefault(key, []).append(case)
    return {name: _group_stats(groups[name]) for name in sorted(groups)}


def _tags(case: Case) -> list[str]:
    return [str(t) for t in case.get("tags") or []]


def summary_additions(cases: Sequence[Case]) -> dict[str, Any]:
    """``latency_mean_ms``, ``latency_total_ms`` (over the cases' trace durations),
    ``hallucination_rate`` and ``by_tag`` (see :func:`breakdown`)."""
    durations = [d for c in cases if (d := (c.get("usage") or {}).get("duration_ms")) is not None]
    return {
        "latency_mean_ms": statistics.fmean(durations) if durations else None,
        "latency_total_ms": sum(durations) if durations else None,
        "hallucination_rate": hallucination_rate(cases),
        "by_tag": breakdown(cases, _tags),
    }
