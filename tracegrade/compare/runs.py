"""Compare two run documents case by case and decide whether CURRENT regressed
(:func:`compare_runs`; the rules are in :mod:`tracegrade.compare.rules`).

Cases pair by case id. A case's status (:data:`~tracegrade.compare.model.CaseStatus`): ``new``
/ ``removed`` when unpaired; ``flaky`` when its attempts disagree on pass/fail in either run;
else ``regressed`` when it passed and now fails, or its score fell by more than
``case_score_tolerance`` (with several attempts in both runs, only when the paired test over
attempts is significant); ``improved`` the other way round; ``unchanged`` otherwise.

Tests (``scipy.stats.wilcoxon``, two-sided, zero differences dropped, exact up to
:data:`EXACT_UP_TO` pairs): per case, over attempt
i of BASE with attempt i of CURRENT (vectorised over the cases with the same number of
attempts); per run, over the paired cases' scores. Three attempts can never reach p < 0.05, so
with three repeats only consistent flips (every attempt passed before, every attempt fails now)
regress a case: that is the point, one flip in three is noise.

Each run's cases come from a :class:`~tracegrade.compare.run_cases.RunCases` (a run document
in memory, or a temporary SQLite file for ``score --baseline``), a chunk of case keys at a
time (the per-case tests vectorised within a chunk); the run-level numbers (overviews, the
paired test's scores, the verdict's flipped cases) are tallied as the chunks pass, so a
comparison read from disk holds one chunk of cases and ~40 bytes a case.
"""

from __future__ import annotations

import gc
import warnings
from array import array
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from tracegrade._util.extras import available, import_extra
from tracegrade.compare.diff import delta, diff_traces
from tracegrade.compare.model import CaseComparison, CaseStatus, Comparison, Delta, StatTest
from tracegrade.compare.overviews import CaseGroup, OverviewTally, group_entries
from tracegrade.compare.rules import RegressionRules
from tracegrade.compare.run_cases import (
    ComparedCases,
    RunCases,
    as_run_cases,
    chunks,
)
from tracegrade.config import Pricing
from tracegrade.run_document import CaseEntry, read_head
from tracegrade.trace import AgentTrace

_Array = Any
"""A numpy array (the ``[stats]`` extra; imported only when a test runs)."""

EXACT_UP_TO = 25
"""Up to this many pairs the Wilcoxon p-value comes from the exact null distribution (ties not
corrected; scipy's permutation fallback for ties takes seconds), above it from the normal
approximation with tie correction."""

RUN_METRICS = (
    "pass_rate",
    "score",
    "hallucination_rate",
    "latency_p50_ms",
    "latency_p95_ms",
    "latency_mean_ms",
    "cost_usd",
)


_TESTS = "the paired Wilcoxon tests of runs with repeats"


def _wilcoxon(base: _Array, current: _Array) -> tuple[_Array, _Array]:
    """Row-wise two-sided Wilcoxon signed-rank (statistic, p); p = 1 for rows without any
    difference (nothing to test).

    Raises:
        MissingExtraError: the ``[stats]`` extra (numpy, scipy) is not installed.
    """
    np = import_extra("numpy", _TESTS)
    wilcoxon = import_extra("scipy.stats", _TESTS).wilcoxon  # 1 s to import: only when needed

    stats, pvalues = np.full(len(base), np.nan), np.ones(len(base))
    moved = np.any(base != current, axis=1)
    if moved.any():
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            method = "exact" if base.shape[1] <= EXACT_UP_TO else "approx"
            result = wilcoxon(base[moved], current[moved], axis=1, method=method)
        stats[moved] = result.statistic
        pvalues[moved] = np.nan_to_num(result.pvalue, nan=1.0)
    return stats, pvalues


def paired_test(
    base: Sequence[float], current: Sequence[float], alpha: float, *, required: bool = True
) -> StatTest:
    """Wilcoxon signed-rank over pairs (``none`` with fewer than 2 pairs, and when the test is
    not ``required`` and the ``[stats]`` extra is not installed).

    Raises:
        MissingExtraError: ``required`` and the ``[stats]`` extra is not installed.
    """
    if len(base) < 2 or not (required or available("scipy")):
        return StatTest("none", len(base), None, None, alpha, False)
    np = import_extra("numpy", _TESTS)
    stats, p = _wilcoxon(np.array([base], dtype=float), np.array([current], dtype=float))
    statistic = None if np.isnan(stats[0]) else float(stats[0])
    return StatTest("wilcoxon", len(base), statistic, float(p[0]), alpha, bool(p[0] < alpha))


def _attempt_scores(group: CaseGroup) -> list[float]:
    return [0.0 if s is None else float(s) for _, s in group.attempts]


def _case_tests(pairs: Sequence[tuple[CaseGroup, CaseGroup]], alpha: float) -> dict[str, StatTest]:
    """The per-case test for every pair with several attempts in both runs, vectorised over
    the pairs sharing an attempt count."""
    by_n: dict[int, list[tuple[CaseGroup, CaseGroup]]] = {}
    for base, current in pairs:
        n = min(len(base.attempts), len(current.attempts))
        if n >= 2:
            by_n.setdefault(n, []).append((base, current))
    tests = {}
    np = import_extra("numpy", _TESTS) if by_n else None
    for n, group in by_n.items():
        assert np is not None
        old = np.array([_attempt_scores(b)[:n] for b, _ in group])
        new = np.array([_attempt_scores(c)[:n] for _, c in group])
        stats, pvalues = _wilcoxon(old, new)
        for (base, _), s, p in zip(group, stats, pvalues, strict=True):
            statistic = None if np.isnan(s) else float(s)
            tests[base.case_id] = StatTest(
                "wilcoxon", n, statistic, float(p), alpha, bool(p < alpha)
            )
    return tests


def _status(
    base: CaseGroup, current: CaseGroup, test: StatTest | None, rules: RegressionRules
) -> tuple[CaseStatus, list[str]]:
    if base.flaky or current.flaky:
        where = [name for name, g in (("base", base), ("current", current)) if g.flaky]
        return "flaky", [f"repeats disagree on pass/fail in {' and '.join(where)}"]
    was, now = base.entry.passed, current.entry.passed
    if was != now:
        return ("regressed" if was else "improved"), [
            f"{'passed' if was else 'failed'} -> {'passed' if now else 'failed'}"
        ]
    old, new = base.entry.score, current.entry.score
    if old is None or new is None or abs(new - old) <= rules.case_score_tolerance:
        return "unchanged", []
    if test is not None and not test.significant:
        return "unchanged", [f"score {old:.2f} -> {new:.2f} not significant (p={test.p_value:.2f})"]
    return ("regressed" if new < old else "improved"), [f"score {old:.2f} -> {new:.2f}"]


def _axes(base: _Values | None, current: _Values | None) -> dict[str, Delta]:
    def values(case: _Values | None) -> dict[str, float | None]:
        return {} if case is None else {**case.scores, **case.axes}

    old, new = values(base), values(current)
    return {name: delta(old.get(name), new.get(name)) for name in sorted({*old, *new})}


class _Values(Protocol):
    """What :func:`_axes` reads: a case entry's, or a run summary's, scores and axes."""

    @property
    def scores(self) -> Mapping[str, float | None]: ...

    @property
    def axes(self) -> Mapping[str, float]: ...


def _unpaired(group: CaseGroup, status: CaseStatus) -> CaseComparison:
    entry = group.entry
    score, passed = entry.score, entry.passed
    base = status == "removed"
    return CaseComparison(
        case_id=group.case_id,
        status=status,
        base_score=score if base else None,
        current_score=None if base else score,
        base_passed=passed if base else None,
        current_passed=None if base else passed,
        axes=_axes(entry, None) if base else _axes(None, entry),
        base_attempts=len(group.attempts) if base else 0,
        current_attempts=0 if base else len(group.attempts),
    )


def needs_diff(status: CaseStatus) -> bool:
    """THE rule for which cases get a structural diff (:func:`diff_traces`, with both runs'
    traces when at hand): those that regressed or improved."""
    return status in ("regressed", "improved")


_Paired = tuple[CaseStatus, list[str], StatTest | None]
"""A paired case's status, the reasons for it and its per-case test (if any)."""


def _paired(
    base: Mapping[str, CaseGroup], current: Mapping[str, CaseGroup], rules: RegressionRules
) -> dict[str, _Paired]:
    """Every case in both runs (by key): its status, reasons and test (module docstring)."""
    pairs = [(base[k], current[k]) for k in current if k in base]
    tests = _case_tests(pairs, rules.alpha)
    return {
        b.case_id: (*_status(b, c, tests.get(b.case_id), rules), tests.get(b.case_id))
        for b, c in pairs
    }


def _case(
    base: CaseGroup,
    current: CaseGroup,
    paired: _Paired,
    traces: Mapping[str, AgentTrace],
    pricing: Pricing | None,
) -> CaseComparison:
    status, reasons, test = paired
    reasons = list(reasons)
    old, new = base.entry, current.entry
    if status == "regressed":
        reasons += [str(r) for r in new.reasons]
    diff = None
    if needs_diff(status):
        diff = diff_traces(
            old,
            new,
            traces.get(old.trace_id or ""),
            traces.get(new.trace_id or ""),
            pricing,
        )
    return CaseComparison(
        case_id=base.case_id,
        status=status,
        base_score=old.score,
        current_score=new.score,
        base_passed=old.passed,
        current_passed=new.passed,
        axes=_axes(old, new),
        base_attempts=len(base.attempts),
        current_attempts=len(current.attempts),
        flaky_in=tuple(n for n, g in (("base", base), ("current", current)) if g.flaky),
        test=test,
        reasons=tuple(dict.fromkeys(reasons)),
        diff=diff,
    )


class _Tally:
    """What the run-level verdict reads of the cases, gathered while they stream: each run's
    overview counts, the paired scores (8 bytes a case each), whether any case has repeats,
    and the cases that passed before and fail now (the first :data:`FLIPPED_NAMED` named)."""

    def __init__(self) -> None:
        self.base, self.current = OverviewTally(), OverviewTally()
        self.base_scores, self.current_scores = array("d"), array("d")
        self.repeats = False
        self.flipped = 0
        self.flipped_named: list[str] = []

    def group(self, group: CaseGroup, tally: OverviewTally) -> None:
        tally.add(group.entry)
        self.repeats = self.repeats or len(group.attempts) > 1

    def case(self, case: CaseComparison) -> None:
        if case.base_score is not None and case.current_score is not None:
            self.base_scores.append(case.base_score)
            self.current_scores.append(case.current_score)
        if case.status == "regressed" and case.base_passed and not case.current_passed:
            self.flipped += 1
            if len(self.flipped_named) < FLIPPED_NAMED:
                self.flipped_named.append(case.case_id)


FLIPPED_NAMED = 10
"""Cases named in the verdict's "passed before and fail now" reason."""


def _compare_chunks(
    base: RunCases,
    current: RunCases,
    rules: RegressionRules,
    traces: Mapping[str, AgentTrace],
    pricing: Pricing | None,
    out: list[CaseComparison] | ComparedCases,
) -> _Tally:
    """Every case of either run into ``out``: CURRENT's order, then the removed ones (see the
    module docstring), a chunk of case keys at a time; returns the run-level tally."""
    tally = _Tally()
    for keys, old, new, paired in _chunked(base, current, rules):
        for key in keys:
            group = new[key]
            tally.group(group, tally.current)
            if key in old:
                case = _case(old[key], group, paired[key], traces, pricing)
            else:
                case = _unpaired(group, "new")
            tally.case(case)
            out.append(case)
    for keys in chunks(base.keys()):
        old, present = base.groups(keys), current.among(keys)
        for key in keys:
            tally.group(old[key], tally.base)
            if key not in present:
                out.append(_unpaired(old[key], "removed"))
    return tally


def _chunked(
    base: RunCases, current: RunCases, rules: RegressionRules
) -> Iterator[tuple[Sequence[str], dict[str, CaseGroup], dict[str, CaseGroup], dict[str, _Paired]]]:
    """CURRENT's case keys a chunk at a time, with both runs' groups of them (BASE's, then
    CURRENT's) and the paired ones' status (:func:`_paired`)."""
    for keys in chunks(current.keys()):
        old, new = base.groups(keys), current.groups(keys)
        yield keys, old, new, _paired(old, new, rules)


def diff_trace_ids(
    base: Mapping[str, Any] | RunCases,
    current: Mapping[str, Any] | RunCases,
    rules: RegressionRules | None = None,
) -> tuple[set[str], set[str]]:
    """The trace ids :func:`compare_runs` (same arguments) looks up in its ``traces`` for the
    structural diffs (the cases :func:`needs_diff` picks): (BASE's, CURRENT's), without
    cases that have no trace.

    Raises:
        KeyError: as :func:`compare_runs`.
    """
    base_ids: set[str] = set()
    current_ids: set[str] = set()
    chunked = _chunked(as_run_cases(base), as_run_cases(current), rules or RegressionRules())
    for _, old, new, paired in chunked:
        for key, (status, _, _) in paired.items():
            if needs_diff(status):
                base_ids.update(_trace_id(old[key]))
                current_ids.update(_trace_id(new[key]))
    return base_ids, current_ids


class DiffCandidates:
    """Which results of a run still being scored may have their trace diffed against BASE:
    :meth:`wanted` applies :func:`needs_diff` to a result as if it were its case's only one
    (exact then; with several results for a case, :func:`diff_trace_ids` of the finished run
    says which are needed). Reads BASE's cases from ``base`` (a run document or a
    :class:`~.run_cases.RunCases`), a case at a time."""

    def __init__(
        self, base: Mapping[str, Any] | RunCases, rules: RegressionRules | None = None
    ) -> None:
        self.base = as_run_cases(base)
        self.rules = rules or RegressionRules()

    def wanted(self, entry: CaseEntry | Mapping[str, Any]) -> bool:
        """Whether CURRENT's case entry ``entry`` (``case_id``, ``trace_id``, ``passed``,
        ``score``, as in the run document), alone for its case, needs a structural diff.

        Raises:
            InputError: ``entry`` is not a case entry (lacks ``passed``, say).
        """
        current = group_entries([entry])
        base = self.base.groups(current)
        return any(
            needs_diff(status) for status, _, _ in _paired(base, current, self.rules).values()
        )


def _trace_id(group: CaseGroup) -> list[str]:
    """The trace id of a case's representative entry, none when it has no trace."""
    trace_id = group.entry.trace_id
    return [str(trace_id)] if trace_id else []


def _ratio_reason(name: str, d: Delta, limit: float | None) -> list[str]:
    if limit is None or not d.base or d.current is None or d.current / d.base <= limit:
        return []
    return [f"{name} {d.base:.4g} -> {d.current:.4g} (x{d.current / d.base:.2f} > x{limit:g})"]


def _verdict(
    tally: _Tally,
    deltas: Mapping[str, Delta],
    test: StatTest,
    rules: RegressionRules,
) -> list[str]:
    reasons = []
    if rules.fail_on_case_regression and tally.flipped:
        more = tally.flipped - len(tally.flipped_named)
        reasons.append(
            f"{tally.flipped} case(s) passed before and fail now: "
            + ", ".join(tally.flipped_named)
            + (f" and {more} more" if more > 0 else "")
        )
    repeats = tally.repeats
    score = deltas["score"]
    drop = -score.delta if score.delta is not None else 0.0
    if drop > rules.max_score_drop and (not repeats or test.significant):
        # the paired test decides only over repeats: cited then, as the evidence it is
        cited = f"; {test.name} p={_p(test)}" if repeats else ""
        reasons.append(
            f"mean score {score.base:.3f} -> {score.current:.3f} (down {drop:.3f} > "
            f"{rules.max_score_drop:g}{cited})"
        )
    rate = deltas["hallucination_rate"]
    if rate.delta is not None and rate.delta > rules.max_hallucination_rise:
        reasons.append(
            f"hallucination rate {rate.base:.1%} -> {rate.current:.1%} (up "
            f"{rate.delta * 100:.1f} points > {rules.max_hallucination_rise * 100:g})"
        )
    reasons += _ratio_reason(
        "latency p95 ms", deltas["latency_p95_ms"], rules.max_latency_p95_ratio
    )
    reasons += _ratio_reason("cost USD", deltas["cost_usd"], rules.max_cost_ratio)
    return reasons


def _p(test: StatTest) -> str:
    return "n/a" if test.p_value is None else f"{test.p_value:.3g}"


def compare_runs(
    base: Mapping[str, Any] | RunCases,
    current: Mapping[str, Any] | RunCases,
    rules: RegressionRules | None = None,
    *,
    traces: Mapping[str, AgentTrace] | None = None,
    pricing: Pricing | None = None,
    base_is_baseline: bool = False,
) -> Comparison:
    """Compare two ``tracegrade.run/1`` documents, or two runs' :class:`~.run_cases.RunCases`
    (see the module docstring).

    ``traces``: trace id -> AgentTrace of either run, for the structural diff of changed cases
    (without them, diffs come from the case results only). ``pricing`` prices each LLM call
    in those diffs. With two documents the cases are a tuple; with a source (a
    :class:`~.run_cases.TableCases`, a run of any size) they are written to a temporary file as
    they are compared (:class:`~.run_cases.ComparedCases`), and the comparison holds ~40 bytes
    a case (the paired scores, durations and offsets), not the cases.

    Raises:
        KeyError: a document lacks ``cases`` or a case lacks ``passed`` (not a run document).
    """
    spill = not (isinstance(base, Mapping) and isinstance(current, Mapping))
    with _gc_paused():
        return _compare(
            as_run_cases(base),
            as_run_cases(current),
            rules or RegressionRules(),
            {} if traces is None else traces,
            pricing,
            base_is_baseline,
            ComparedCases() if spill else [],
        )


@contextmanager
def _gc_paused() -> Iterator[None]:
    """The comparison allocates ~10 objects per case, in memory held until it returns: pausing
    the cyclic garbage collector meanwhile saves ~30% of the time of a 10,000-case comparison."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _compare(
    base: RunCases,
    current: RunCases,
    rules: RegressionRules,
    traces: Mapping[str, AgentTrace],
    pricing: Pricing | None,
    base_is_baseline: bool,
    cases: list[CaseComparison] | ComparedCases,
) -> Comparison:
    tally = _compare_chunks(base, current, rules, traces, pricing, cases)
    base_view = tally.base.overview(base.head, baseline=base_is_baseline)
    current_view = tally.current.overview(current.head)
    deltas = {m: delta(getattr(base_view, m), getattr(current_view, m)) for m in RUN_METRICS}
    test = paired_test(tally.base_scores, tally.current_scores, rules.alpha, required=tally.repeats)
    reasons = _verdict(tally, deltas, test, rules)
    return Comparison(
        base=base_view,
        current=current_view,
        cases=tuple(cases) if isinstance(cases, list) else cases,
        deltas=deltas,
        test=test,
        regression=bool(reasons),
        reasons=tuple(reasons),
        rules=rules.to_dict(),
        axes=_axes(_SummaryValues(base.head), _SummaryValues(current.head)),
    )


class _SummaryValues:
    """A run summary's mean per scorer and per axis, as :func:`_axes` reads them."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        summary = read_head(doc).summary
        self.scores: Mapping[str, float | None] = summary.scorers
        self.axes: Mapping[str, float] = summary.axes
