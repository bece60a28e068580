"""The comparison of two runs, as plain frozen dataclasses (the JSON shape is their ``to_json``).

A :class:`Comparison` pairs the cases of a BASE and a CURRENT run document (``tracegrade.run/1``,
:mod:`tracegrade.report.document`) by case id. Each :class:`CaseComparison` has a status
(:data:`CaseStatus`), score and per-axis deltas and, for a regressed case, a :class:`TraceDiff`
of the two traces. The run level holds a :class:`RunOverview` of each run, the deltas of the
headline metrics, the paired test over cases (:class:`StatTest`), and the verdict with its
reasons. Scores are in [0, 1]; latencies in milliseconds; costs in USD; rates are fractions.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Literal

SCHEMA_VERSION = "tracegrade.comparison/1"
"""Version of the comparison JSON shape; bumped on any incompatible change."""

CaseStatus = Literal["regressed", "improved", "unchanged", "new", "removed", "flaky"]
"""``new``: only in CURRENT; ``removed``: only in BASE; ``flaky``: repeats disagree on
pass/fail in either run (never counted as a regression); else ``regressed`` / ``improved`` when
the verdict flipped or the score moved by more than the rules' case tolerance, ``unchanged``."""


@dataclass(frozen=True)
class StatTest:
    """One statistical test: which, on how many pairs, its p-value, and whether p < alpha."""

    name: str
    """``wilcoxon`` (signed-rank over paired values) or ``none`` (too few pairs)."""
    n: int
    """Number of pairs (cases for the run-level test, attempts for a case)."""
    statistic: float | None
    p_value: float | None
    alpha: float
    significant: bool


@dataclass(slots=True)
class Delta:
    """One metric in both runs; ``delta`` is current - base (None when either is None).
    Treat it as a value (not frozen only because frozen dataclasses are 3x slower to build,
    and a comparison of 10,000 cases builds ~50,000)."""

    base: float | None
    current: float | None
    delta: float | None


@dataclass(frozen=True)
class ArgumentChange:
    """An argument of a tool call whose value differs between the runs (calls paired by tool
    name and occurrence)."""

    tool: str
    occurrence: int
    """0 for the first call of ``tool`` in the trace, 1 for the second, ..."""
    argument: str
    base: Any
    current: Any
    """A missing argument is ``None`` on that side."""


@dataclass(frozen=True)
class CallDelta:
    """Usage of the n-th LLM call (``kind='llm'``, named by its model) or of the n-th call of a
    tool (``kind='tool'``, named by the tool) in both traces. Missing on one side: that side's
    fields are None."""

    kind: Literal["llm", "tool"]
    name: str
    occurrence: int
    tokens: Delta
    """Input + output tokens (tool calls: always None)."""
    cost_usd: Delta
    latency_ms: Delta


@dataclass(frozen=True)
class TraceDiff:
    """What changed structurally between the BASE and CURRENT trace of one case.

    Tool lists are multisets: a tool called twice before and once now appears once in
    ``tools_removed``. ``source`` says what the diff was built from: ``traces`` (both traces
    were available) or ``results`` (only the stored case results: tool and call deltas empty).
    """

    source: Literal["traces", "results"]
    base_trace_id: str | None
    current_trace_id: str | None
    tools_added: tuple[str, ...] = ()
    tools_removed: tuple[str, ...] = ()
    arguments_changed: tuple[ArgumentChange, ...] = ()
    newly_ungrounded: tuple[str, ...] = ()
    """Answer values (prices, numbers, ids, dates) ungrounded now and not before."""
    newly_forbidden: tuple[str, ...] = ()
    """must_not_contain phrases hit now and not before."""
    calls: tuple[CallDelta, ...] = ()
    tokens: Delta = field(default_factory=lambda: Delta(None, None, None))
    cost_usd: Delta = field(default_factory=lambda: Delta(None, None, None))
    latency_ms: Delta = field(default_factory=lambda: Delta(None, None, None))

    @property
    def empty(self) -> bool:
        """True when nothing structural changed (usage deltas aside)."""
        return not (
            self.tools_added
            or self.tools_removed
            or self.arguments_changed
            or self.newly_ungrounded
            or self.newly_forbidden
        )


@dataclass(frozen=True)
class CaseComparison:
    """One case in both runs (see :data:`CaseStatus`)."""

    case_id: str
    status: CaseStatus
    base_score: float | None
    current_score: float | None
    base_passed: bool | None
    current_passed: bool | None
    axes: Mapping[str, Delta]
    """Per scoring axis and scorer (``groundedness``, ``tool_correctness``, ...)."""
    base_attempts: int = 0
    current_attempts: int = 0
    flaky_in: tuple[str, ...] = ()
    """``base`` and/or ``current``: the runs whose repeats disagree on pass/fail."""
    test: StatTest | None = None
    """The paired test over attempts (repeat i with repeat i), when both runs have several."""
    reasons: tuple[str, ...] = ()
    """Why the status: e.g. ``passed -> failed``, ``score 0.95 -> 0.60``; and the CURRENT
    run's failure reasons for a regressed case."""
    diff: TraceDiff | None = None
    """For ``regressed`` (and ``improved``) cases."""

    @property
    def score_delta(self) -> float | None:
        if self.base_score is None or self.current_score is None:
            return None
        return self.current_score - self.base_score


@dataclass(frozen=True)
class RunOverview:
    """The headline numbers of one run (``tracegrade runs``, ``history``, comparisons).

    ``hallucination_rate``: see :func:`tracegrade.compare.overviews.hallucinated`. Latencies
    are over the cases' trace durations (ms); ``cost_usd`` sums the known case costs.
    """

    run_id: str
    created_at: str | None
    dataset: str | None
    dataset_digest: str | None
    label: str | None
    git_sha: str | None
    git_branch: str | None
    agent_version: str | None
    models: tuple[str, ...]
    cases: int
    repeat: int
    passed: int
    pass_rate: float | None
    score: float | None
    hallucination_rate: float | None
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    latency_mean_ms: float | None
    latency_total_ms: float | None
    cost_usd: float | None
    run_passed: bool | None = None
    baseline: bool = False
    """True when this run is its dataset's baseline in the store."""


@dataclass(frozen=True)
class Comparison:
    """BASE against CURRENT: cases, run-level deltas, the paired test and the verdict."""

    base: RunOverview
    current: RunOverview
    cases: Sequence[CaseComparison]
    """Every case: a tuple, or for a comparison of runs read from disk a
    :class:`~tracegrade.compare.run_cases.ComparedCases` (read back from a temporary file)."""
    deltas: Mapping[str, Delta]
    """``pass_rate``, ``score``, ``hallucination_rate``, ``latency_p50_ms``,
    ``latency_p95_ms``, ``latency_mean_ms``, ``cost_usd``."""
    test: StatTest
    """The paired test over the cases' scores (run level)."""
    regression: bool
    reasons: tuple[str, ...]
    """Every rule that fired, in words (empty when ``regression`` is False)."""
    rules: Mapping[str, Any]
    """The regression rules applied (:class:`tracegrade.compare.rules.RegressionRules`)."""
    axes: Mapping[str, Delta] = field(default_factory=dict)
    """Run-level mean of each scoring axis and scorer (the summaries' ``axes`` and
    ``scorers``)."""

    def by_status(self, status: CaseStatus) -> list[CaseComparison]:
        """The cases with ``status``, in comparison order."""
        return [c for c in self.cases if c.status == status]

    def counts(self) -> dict[str, int]:
        """Number of cases per status (every status present, zeros included)."""
        names = ("regressed", "improved", "unchanged", "flaky", "new", "removed")
        return {s: sum(1 for c in self.cases if c.status == s) for s in names}

    def to_json(self) -> dict[str, Any]:
        """The JSON document (schema :data:`SCHEMA_VERSION`)::

        {"schema_version", "base": {run overview}, "current": {run overview},
         "deltas": {metric: {"base", "current", "delta"}}, "test": {...},
         "counts": {status: n}, "cases": [{"case_id", "status", "base_score",
         "current_score", "score_delta", "axes": {axis: {"base", "current", "delta"}},
         "diff": {...} | null, ...}], "regression": bool, "reasons": [...], "rules": {...}}
        """
        return {**self._head(), "cases": [_case_json(c) for c in self.cases]}

    def write_json(self, out: IO[bytes]) -> None:
        """:meth:`to_json`'s document as UTF-8 JSON to ``out``, one case at a time (so a
        comparison read from disk is never built whole); ``cases`` comes last."""
        head = json.dumps(self._head(), ensure_ascii=False)
        out.write(head[:-1].encode() + b', "cases": [')
        for n, case in enumerate(self.cases):
            out.write((", " if n else "").encode() + json.dumps(_case_json(case)).encode())
        out.write(b"]}")

    def _head(self) -> dict[str, Any]:
        """:meth:`to_json` without ``cases``."""
        return {
            "schema_version": SCHEMA_VERSION,
            "base": dataclasses.asdict(self.base),
            "current": dataclasses.asdict(self.current),
            "deltas": {k: dataclasses.asdict(v) for k, v in self.deltas.items()},
            "axes": {k: dataclasses.asdict(v) for k, v in self.axes.items()},
            "test": dataclasses.asdict(self.test),
            "counts": self.counts(),
            "regression": self.regression,
            "reasons": list(self.reasons),
            "rules": dict(self.rules),
        }


def _case_json(case: CaseComparison) -> dict[str, Any]:
    data = dataclasses.asdict(case)
    data["score_delta"] = case.score_delta
    data["axes"] = {k: dataclasses.asdict(v) for k, v in case.axes.items()}
    if case.diff is not None:
        data["diff"]["empty"] = case.diff.empty
    return data
