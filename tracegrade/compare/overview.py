"""Reading run documents for comparison: cases grouped with their attempts, the hallucination
rate, and a run's headline numbers (:class:`~tracegrade.compare.model.RunOverview`).

A case's *attempts* are its repeats: the ``attempts`` list ``tracegrade run --repeat N``
writes, or several results with the same case id (``tracegrade score`` on a case matched by
several traces). The representative result is the case's own entry (runs) or, for several
entries, the median one ordered by (passed, score), as :mod:`tracegrade.runner.results` does.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.compare.model import RunOverview
from tracegrade.scoring.evaluate import HALLUCINATION_AXES, percentile
from tracegrade.scoring.evaluate import hallucinated as scoring_hallucinated

__all__ = [
    "HALLUCINATION_AXES",
    "CaseGroup",
    "group_cases",
    "hallucinated",
    "hallucination_rate",
    "overview",
]


def hallucinated(case: Mapping[str, Any]) -> bool:
    """:func:`tracegrade.scoring.evaluate.hallucinated` of a run document's case entry."""
    return scoring_hallucinated(case.get("scores") or {}, case.get("details") or {})


def hallucination_rate(cases: Sequence[Mapping[str, Any]]) -> float | None:
    """Share of the cases with a trace that :func:`hallucinated`; None without such cases."""
    traced = [c for c in cases if c.get("trace_id") is not None]
    return sum(hallucinated(c) for c in traced) / len(traced) if traced else None


@dataclass(frozen=True)
class CaseGroup:
    """One case of a run: its representative entry and its attempts' (passed, score)."""

    case_id: str
    entry: Mapping[str, Any]
    attempts: tuple[tuple[bool, float | None], ...]
    flaky: bool = field(init=False)
    """The attempts disagree on pass/fail (or the run marked the case flaky)."""

    def __post_init__(self) -> None:
        flaky = bool(self.entry.get("flaky")) or len({p for p, _ in self.attempts}) > 1
        object.__setattr__(self, "flaky", flaky)


def _key(case: Mapping[str, Any]) -> str:
    return str(case["case_id"] if case.get("case_id") is not None else case.get("trace_id"))


def _median_entry(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    ordered = sorted(entries, key=lambda c: (bool(c["passed"]), _num(c.get("score"))))
    return ordered[(len(ordered) - 1) // 2]


def _num(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def group_cases(doc: Mapping[str, Any]) -> dict[str, CaseGroup]:
    """The document's cases by case id (trace id for reference-free runs), in document order."""
    entries: dict[str, list[Mapping[str, Any]]] = {}
    for case in doc.get("cases") or []:
        entries.setdefault(_key(case), []).append(case)
    groups = {}
    for key, found in entries.items():
        if len(found) == 1 and found[0].get("attempts"):
            attempts = tuple((bool(a["passed"]), a.get("score")) for a in found[0]["attempts"])
            groups[key] = CaseGroup(key, found[0], attempts)
            continue
        entry = _median_entry(found) if len(found) > 1 else found[0]
        if len(found) > 1:
            scores = [c["score"] for c in found if c.get("score") is not None]
            entry = {**entry, "score": statistics.median(scores) if scores else None}
        groups[key] = CaseGroup(
            key, entry, tuple((bool(c["passed"]), c.get("score")) for c in found)
        )
    return groups


def _duration(case: Mapping[str, Any]) -> float | None:
    usage = case.get("usage") or {}
    return usage.get("duration_ms")


def overview(
    doc: Mapping[str, Any],
    *,
    baseline: bool = False,
    groups: Mapping[str, CaseGroup] | None = None,
) -> RunOverview:
    """The headline numbers of a run document (see :class:`RunOverview`); ``groups`` are its
    :func:`group_cases` when already computed."""
    run, summary = doc.get("run") or {}, doc.get("summary") or {}
    cases = [g.entry for g in (group_cases(doc) if groups is None else groups).values()]
    durations = sorted(d for c in cases if (d := _duration(c)) is not None)
    costs = [
        u["cost_usd"] for c in cases if (u := c.get("usage")) and u.get("cost_usd") is not None
    ]
    passed = sum(bool(c["passed"]) for c in cases)
    dataset = run.get("dataset") or {}
    return RunOverview(
        run_id=str(run.get("run_id", "?")),
        created_at=run.get("created_at"),
        dataset=dataset.get("name"),
        dataset_digest=dataset.get("digest"),
        label=run.get("label"),
        git_sha=run.get("git_sha"),
        git_branch=run.get("git_branch"),
        agent_version=run.get("agent_version"),
        models=tuple(run.get("models") or ()),
        cases=len(cases),
        repeat=int(run.get("repeat") or 1),
        passed=passed,
        pass_rate=passed / len(cases) if cases else None,
        score=summary.get("score"),
        hallucination_rate=hallucination_rate(cases),
        latency_p50_ms=percentile(durations, 50),
        latency_p95_ms=percentile(durations, 95),
        latency_mean_ms=statistics.fmean(durations) if durations else None,
        latency_total_ms=sum(durations) if durations else None,
        cost_usd=sum(costs) if costs else None,
        run_passed=run.get("passed"),
        baseline=baseline,
    )
