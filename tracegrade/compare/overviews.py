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
from tracegrade.run_document import CaseEntry, RunHead, StreamedDocument, read_cases, read_head
from tracegrade.scoring.results import HALLUCINATION_AXES, percentile
from tracegrade.scoring.results import hallucinated as scoring_hallucinated
from tracegrade.scoring.results import hallucination_checked as scoring_checked

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


def hallucinated(case: CaseEntry | Mapping[str, Any]) -> bool:
    """:func:`tracegrade.scoring.evaluation.hallucinated` of a run document's case entry (a
    :class:`~tracegrade.run_document.CaseEntry`, or its JSON-ready data)."""
    if isinstance(case, CaseEntry):
        found = case.details.get("hallucination")
        details = {"hallucination": {"details": found.details}} if found else {}
        return scoring_hallucinated(case.scores, details)
    return scoring_hallucinated(case.get("scores") or {}, case.get("details") or {})


def checked(case: CaseEntry) -> bool:
    """Whether the case entry's trace could tell if it :func:`hallucinated`
    (:func:`tracegrade.scoring.results.hallucination_checked`)."""
    return case.trace_id is not None and scoring_checked(case.notes)


def hallucination_rate(cases: Sequence[CaseEntry]) -> float | None:
    """Share of the cases that :func:`checked` and :func:`hallucinated`; None without such
    cases (unknown, never 0%)."""
    traced = [c for c in cases if checked(c)]
    return sum(hallucinated(c) for c in traced) / len(traced) if traced else None


@dataclass(frozen=True)
class CaseGroup:
    """One case of a run: its representative entry and its attempts' (passed, score)."""

    case_id: str
    entry: CaseEntry
    attempts: tuple[tuple[bool, float | None], ...]
    flaky: bool = field(init=False)
    """The attempts disagree on pass/fail (or the run marked the case flaky)."""

    def __post_init__(self) -> None:
        flaky = bool(self.entry.flaky) or len({p for p, _ in self.attempts}) > 1
        object.__setattr__(self, "flaky", flaky)


def case_key(case: CaseEntry) -> str:
    """The key a case entry pairs by: its case id, else its trace id (reference-free runs)."""
    return str(case.case_id if case.case_id is not None else case.trace_id)


def _median_entry(entries: Sequence[CaseEntry]) -> CaseEntry:
    ordered = sorted(entries, key=lambda c: (c.passed, _num(c.score)))
    return ordered[(len(ordered) - 1) // 2]


def _num(value: float | None) -> float:
    return -1.0 if value is None else float(value)


def group_cases(doc: StreamedDocument | Mapping[str, Any]) -> dict[str, CaseGroup]:
    """The document's cases by case id (trace id for reference-free runs), in document order."""
    return group_entries(doc.cases if isinstance(doc, StreamedDocument) else doc.get("cases") or [])


def group_entries(cases: Iterable[CaseEntry | Mapping[str, Any]]) -> dict[str, CaseGroup]:
    """:func:`group_cases` of a run document's case entries (any iterable, read once, each
    entry through :func:`~tracegrade.run_document.read_cases`).

    Raises:
        InputError: an entry is not a case entry (the field named).
    """
    entries: dict[str, list[CaseEntry]] = {}
    for case in read_cases(cases):
        entries.setdefault(case_key(case), []).append(case)
    return {key: case_group(key, found) for key, found in entries.items()}


def case_group(key: str, typed: Sequence[CaseEntry]) -> CaseGroup:
    """The group of a case's entries (document order; see the module docstring)."""
    if len(typed) == 1 and typed[0].attempts:
        attempts = tuple((a.passed, a.score) for a in typed[0].attempts)
        return CaseGroup(key, typed[0], attempts)
    entry = _median_entry(typed) if len(typed) > 1 else typed[0]
    if len(typed) > 1:
        scores = [c.score for c in typed if c.score is not None]
        entry = entry.model_copy(update={"score": statistics.median(scores) if scores else None})
    return CaseGroup(key, entry, tuple((c.passed, c.score) for c in typed))


def _duration(case: CaseEntry) -> float | None:
    return case.usage.duration_ms if case.usage else None


class OverviewTally:
    """The running counts behind a :class:`RunOverview`: :meth:`add` each case group's
    representative entry once (any order), then :meth:`overview`. Holds 8 bytes per case
    with a duration (the latency percentiles are exact)."""

    def __init__(self) -> None:
        self.cases = self.passed = self.traced = self.hallucinated = 0
        self.durations = array("d")
        self.cost_usd: float | None = None

    def add(self, entry: CaseEntry) -> None:
        """Count one case (its representative entry, see :class:`CaseGroup`)."""
        self.cases += 1
        self.passed += entry.passed
        if (duration := _duration(entry)) is not None:
            self.durations.append(duration)
        if entry.usage and entry.usage.cost_usd is not None:
            self.cost_usd = (self.cost_usd or 0) + entry.usage.cost_usd
        if checked(entry):
            self.traced += 1
            self.hallucinated += hallucinated(entry)

    def overview(
        self, doc: RunHead | StreamedDocument | Mapping[str, Any], *, baseline: bool = False
    ) -> RunOverview:
        """The overview of the run document ``doc`` (its ``run`` and ``summary``, read through
        :func:`~tracegrade.run_document.read_head`; its cases are those added).

        Raises:
            InputError: ``doc`` is not a ``tracegrade.run/1`` head (the field named).
        """
        head = read_head(doc)
        run = head.run
        durations = sorted(self.durations)
        return RunOverview(
            run_id=run.run_id,
            created_at=run.created_at,
            dataset=run.dataset.name if run.dataset else None,
            dataset_digest=run.dataset.digest if run.dataset else None,
            label=run.label,
            git_sha=run.git_sha,
            git_branch=run.git_branch,
            agent_version=run.agent_version,
            models=tuple(run.models),
            cases=self.cases,
            repeat=run.repeat or 1,
            passed=self.passed,
            pass_rate=self.passed / self.cases if self.cases else None,
            score=head.summary.score,
            hallucination_rate=self.hallucinated / self.traced if self.traced else None,
            latency_p50_ms=percentile(durations, 50),
            latency_p95_ms=percentile(durations, 95),
            latency_mean_ms=statistics.fmean(durations) if durations else None,
            latency_total_ms=sum(durations) if durations else None,
            cost_usd=self.cost_usd,
            run_passed=run.passed,
            baseline=baseline,
        )


def overview(
    doc: StreamedDocument | Mapping[str, Any],
    *,
    baseline: bool = False,
    groups: Mapping[str, CaseGroup] | None = None,
) -> RunOverview:
    """The headline numbers of a run document (see :class:`RunOverview`); ``groups`` are its
    :func:`group_cases` when already computed.

    Raises:
        InputError: ``doc`` is not a ``tracegrade.run/1`` document (the field named).
    """
    tally = OverviewTally()
    for group in (group_cases(doc) if groups is None else groups).values():
        tally.add(group.entry)
    return tally.overview(doc, baseline=baseline)
