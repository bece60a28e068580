"""Reading run documents for comparison: cases grouped with their attempts, the hallucination
rate, and a run's headline numbers (:class:`~tracegrade.compare.model.RunOverview`).

A case's *attempts* are its repeats: the ``attempts`` list ``tracegrade run --repeat N``
writes, or several results with the same case id (``tracegrade score`` on a case matched by
several traces). The representative result is the case's own entry (runs) or, for several
entries, the median one ordered by (passed, score), as :mod:`tracegrade.runner.results` does.
"""

from __future__ import annotations

import statistics
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.compare.model import RunOverview
from tracegrade.scoring.results import HALLUCINATION_AXES, percentile
from tracegrade.scoring.results import hallucinated as scoring_hallucinated

__all__ = [
    "HALLUCINATION_AXES",
    "CaseGroup",
    "OverviewTally",
    "case_group",
    "case_key",
    "group_cases",
    "group_entries",
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


def case_key(case: Mapping[str, Any]) -> str:
    """The key a case entry pairs by: its case id, else its trace id (reference-free runs)."""
    return str(case["case_id"] if case.get("case_id") is not None else case.get("trace_id"))


def _median_entry(entries: Sequence[Mapping[str, Any]]) -> Mapping[str, Any]:
    ordered = sorted(entries, key=lambda c: (bool(c["passed"]), _num(c.get("score"))))
    return ordered[(len(ordered) - 1) // 2]


def _num(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def group_cases(doc: Mapping[str, Any]) -> dict[str, CaseGroup]:
    """The document's cases by case id (trace id for reference-free runs), in document order."""
    return group_entries(doc.get("cases") or [])


def group_entries(cases: Iterable[Mapping[str, Any]]) -> dict[str, CaseGroup]:
    """:func:`group_cases` of a run document's case entries (any iterable, read once)."""
    entries: dict[str, list[Mapping[str, Any]]] = {}
    for case in cases:
        entries.setdefault(case_key(case), []).append(case)
    return {key: case_group(key, found) for key, found in entries.items()}


def case_group(key: str, found: Sequence[Mapping[str, Any]]) -> CaseGroup:
    """The group of a case's entries ``found`` (document order; see the module docstring)."""
    if len(found) == 1 and found[0].get("attempts"):
        attempts = tuple((bool(a["passed"]), a.get("score")) for a in found[0]["attempts"])
        return CaseGroup(key, found[0], attempts)
    entry = _median_entry(found) if len(found) > 1 else found[0]
    if len(found) > 1:
        scores = [c["score"] for c in found if c.get("score") is not None]
        entry = {**entry, "score": statistics.median(scores) if scores else None}
    return CaseGroup(key, entry, tuple((bool(c["passed"]), c.get("score")) for c in found))


def _duration(case: Mapping[str, Any]) -> float | None:
    usage = case.get("usage") or {}
    return usage.get("duration_ms")


class OverviewTally:
    """The running counts behind a :class:`RunOverview`: :meth:`add` each case group's
    representative entry once (any order), then :meth:`overview`. Holds 8 bytes per case
    with a duration (the latency percentiles are exact)."""

    def __init__(self) -> None:
        self.cases = self.passed = self.traced = self.hallucinated = 0
        self.durations = array("d")
        self.cost_usd: float | None = None

    def add(self, entry: Mapping[str, Any]) -> None:
        """Count one case (its representative entry, see :class:`CaseGroup`)."""
        self.cases += 1
        self.passed += bool(entry["passed"])
        if (duration := _duration(entry)) is not None:
            self.durations.append(duration)
        usage = entry.get("usage")
        if usage and usage.get("cost_usd") is not None:
            self.cost_usd = (self.cost_usd or 0) + usage["cost_usd"]
        if entry.get("trace_id") is not None:
            self.traced += 1
            self.hallucinated += hallucinated(entry)

    def overview(self, doc: Mapping[str, Any], *, baseline: bool = False) -> RunOverview:
        """The overview of the run document ``doc`` (its ``run`` and ``summary``; its cases
        are those added)."""
        run, summary = doc.get("run") or {}, doc.get("summary") or {}
        durations = sorted(self.durations)
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
            cases=self.cases,
            repeat=int(run.get("repeat") or 1),
            passed=self.passed,
            pass_rate=self.passed / self.cases if self.cases else None,
            score=summary.get("score"),
            hallucination_rate=self.hallucinated / self.traced if self.traced else None,
            latency_p50_ms=percentile(durations, 50),
            latency_p95_ms=percentile(durations, 95),
            latency_mean_ms=statistics.fmean(durations) if durations else None,
            latency_total_ms=sum(durations) if durations else None,
            cost_usd=self.cost_usd,
            run_passed=run.get("passed"),
            baseline=baseline,
        )


def overview(
    doc: Mapping[str, Any],
    *,
    baseline: bool = False,
    groups: Mapping[str, CaseGroup] | None = None,
) -> RunOverview:
    """The headline numbers of a run document (see :class:`RunOverview`); ``groups`` are its
    :func:`group_cases` when already computed."""
    tally = OverviewTally()
    for group in (group_cases(doc) if groups is None else groups).values():
        tally.add(group.entry)
    return tally.overview(doc, baseline=baseline)
