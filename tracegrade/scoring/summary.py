"""The run summary, the one way it is computed: each case result is added once and dropped.

:class:`RunningSummary` gives the document's ``summary`` (:class:`RunSummary`'s fields, the
mean and total latency, the hallucination rate and the breakdown by tag) without holding the
results: counts, sums and means are updated per result (sums exact as the builtin ``sum``,
means as ``statistics.fmean``); :func:`summarize` is the same over a list. Every face uses it:
``score``, ``run``, the Python API, the pytest plugin. A case that failed without a score (an
agent that crashed, a case no trace matched) counts as 0 in the mean score: a run whose agent
crashed on some cases does not report the mean of the others. The latency percentiles come
from a :class:`Reservoir`: exact while a run has at most :data:`SAMPLE_SIZE` values of a
kind, above that estimated from a uniform sample of that size (the summary's
``latency_sample`` then says so).
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Iterable
from typing import Any

from tracegrade.run_document import (
    CategoryFigures,
    JudgeTotals,
    LatencySample,
    RunSummaryEntry,
    TagFigures,
)
from tracegrade.scoring.results import CaseResult, RunSummary, percentile

__all__ = ["SAMPLE_SIZE", "Reservoir", "RunningMean", "RunningSum", "RunningSummary", "summarize"]

SAMPLE_SIZE = 100_000
"""Values each latency percentile is computed from: every value up to this many, a uniform
random sample of this many above (rank error of a percentile q about
``2 * sqrt(q * (1 - q) / SAMPLE_SIZE)``: +-0.14 percentile points at p95, 95% confidence)."""

_COMPENSATED = sys.version_info >= (3, 12)
"""Python 3.12's ``sum`` adds floats with Neumaier's compensated summation."""
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
"""The C long of CPython's fast integer path (64-bit platforms)."""


class RunningSum:
    """The builtin ``sum`` of a stream of ints and floats, added one at a time: the same
    value ``sum(values)`` gives over the same values in the same order (CPython adds ints
    exactly, then, from the first float on, floats with compensation on 3.12+; an int past
    a C long leaves both fast paths for plain additions)."""

    __slots__ = ("_compensation", "_mode", "_total")

    def __init__(self) -> None:
        self._total: int | float = 0
        self._compensation = 0.0
        self._mode = "int"

    def add(self, value: float) -> None:
        """Add one value (an int, bool or float)."""
        total = self._total
        if self._mode == "int" or not _COMPENSATED:
            self._total = total = total + value
            if type(total) is float:
                self._mode = "float"
            elif not _LONG_MIN <= total <= _LONG_MAX or not _LONG_MIN <= value <= _LONG_MAX:
                self._mode = "generic"
        elif self._mode == "generic":
            self._total = total + value
        elif type(value) is float:
            added = total + value
            if abs(total) >= abs(value):
                self._compensation += (total - added) + value
            else:
                self._compensation += (value - added) + total
            self._total = added
        elif _LONG_MIN <= value <= _LONG_MAX:
            self._total = total + float(value)
        else:
            self._total, self._compensation = self.value + value, 0.0
            self._mode = "generic"

    @property
    def value(self) -> int | float:
        """The sum so far (0 for no values)."""
        compensation = self._compensation
        if compensation and math.isfinite(compensation):
            return self._total + compensation
        return self._total


class RunningMean:
    """Count and sum of a stream; :attr:`value` is ``sum(values) / len(values)`` and
    :attr:`fmean` ``statistics.fmean(values)``, None for no values."""

    __slots__ = ("_partials", "_special", "count", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = RunningSum()
        self._partials: list[float] = []
        """The exact sum of the finite values so far, as non-overlapping floats (Shewchuk's
        algorithm, as ``math.fsum`` keeps it; a few floats, where a ``Fraction`` grew)."""
        self._special: float | None = None
        """The sum of the infinities and NaNs met, if any."""

    def add(self, value: float) -> None:
        """Add one value."""
        self.count += 1
        self.total.add(value)
        x = float(value)
        if not math.isfinite(x):
            self._special = x if self._special is None else self._special + x
            return
        partials, kept = self._partials, 0
        for y in partials:
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            low = y - (high - x)
            if low:
                partials[kept] = low
                kept += 1
            x = high
        partials[kept:] = [x]

    @property
    def value(self) -> float | None:
        """``sum(values) / len(values)``."""
        return self.total.value / self.count if self.count else None

    @property
    def fmean(self) -> float | None:
        """``statistics.fmean(values)`` (the correctly rounded sum over the count)."""
        if not self.count:
            return None
        exact = math.fsum(self._partials)
        return (exact if self._special is None else self._special) / self.count


class Reservoir:
    """A uniform random sample of at most ``size`` values of a stream (Algorithm R, seeded:
    the same stream gives the same sample); every value while there are at most ``size``."""

    __slots__ = ("_random", "seen", "size", "values")

    def __init__(self, size: int = SAMPLE_SIZE, seed: int = 0) -> None:
        self.size = size
        self.seen = 0
        self.values: list[float] = []
        self._random = random.Random(seed)

    def add(self, value: float) -> None:
        """Offer one value."""
        self.seen += 1
        if len(self.values) < self.size:
            self.values.append(value)
        elif (slot := self._random.randrange(self.seen)) < self.size:
            self.values[slot] = value

    @property
    def sampled(self) -> bool:
        """More values were seen than kept."""
        return self.seen > len(self.values)

    def percentile(self, q: float) -> float | None:
        """The q-th percentile (0-100) of the values kept (see
        :func:`tracegrade.scoring.evaluation.percentile`)."""
        return percentile(self.values, q)


def unscored_as_zero(result: CaseResult) -> float | None:
    """The score a result contributes to a mean: its score; 0 for a failed result without
    one (the agent crashed, no trace matched the case, nothing could be scored); None (no
    contribution) for a passed result without one."""
    if result.score is not None:
        return result.score
    return None if result.passed else 0.0


class _Weighted:
    """``_weighted_score`` of :mod:`tracegrade.scoring.evaluation` with running sums: the
    weight-weighted mean of the scored results, None when none carries weight."""

    __slots__ = ("product", "weight")

    def __init__(self) -> None:
        self.product = RunningSum()
        self.weight = RunningSum()

    def add(self, result: CaseResult) -> None:
        score = unscored_as_zero(result)
        if score is not None:
            self.product.add(score * result.weight)
            self.weight.add(result.weight)

    @property
    def value(self) -> float | None:
        weight = self.weight.value
        return self.product.value / weight if weight else None


class _Totals:
    """Totals of one case category or tag: results, passed, weighted score (categories),
    plain mean score and hallucination rate (tags)."""

    __slots__ = ("hallucinated", "passed", "results", "score", "traced", "weighted")

    def __init__(self) -> None:
        self.results = self.passed = self.traced = self.hallucinated = 0
        self.weighted = _Weighted()
        self.score = RunningMean()

    def add(self, result: CaseResult) -> None:
        self.results += 1
        self.passed += bool(result.passed)
        self.weighted.add(result)
        if (score := unscored_as_zero(result)) is not None:
            self.score.add(score)
        if result.hallucination_checked:
            self.traced += 1
            self.hallucinated += result.hallucinated

    def category(self) -> CategoryFigures:
        """The figures of a category (``RunSummary.categories``, ``summary.categories``)."""
        return CategoryFigures(
            results=self.results,
            passed=self.passed,
            pass_rate=self.passed / self.results,
            score=self.weighted.value,
        )

    def tag(self) -> TagFigures:
        """The figures of a tag (``summary.by_tag``)."""
        return TagFigures(
            cases=self.results,
            passed=self.passed,
            pass_rate=self.passed / self.results,
            score=self.score.fmean,
            hallucination_rate=self.hallucination_rate,
        )

    @property
    def hallucination_rate(self) -> float | None:
        """Share of the results whose trace could tell that hallucinated
        (:func:`~tracegrade.scoring.results.hallucination_checked`); None without such results."""
        return self.hallucinated / self.traced if self.traced else None


JUDGED = ("judge", "goal_judge")
"""The scores the LLM judge gives: a case's rubric, a simulated user's goal."""


class _Judge:
    """Totals of the LLM judge's own usage (``RunSummary.judge``), over its every verdict
    (:data:`JUDGED`)."""

    __slots__ = ("cost", "cost_known", "errors", "judged", "models", "sums")

    def __init__(self) -> None:
        self.judged = self.errors = 0
        self.sums = {k: RunningSum() for k in ("calls", "cached", "input_tokens", "output_tokens")}
        self.cost = RunningSum()
        self.cost_known = True
        self.models: set[Any] = set()

    def add(self, result: CaseResult) -> None:
        for name in JUDGED:
            self._add(result.details.get(name))

    def _add(self, judged: Any) -> None:
        if not judged or not (usage := judged["details"].get("usage")):
            return
        details = judged["details"]
        self.judged += 1
        for key, total in self.sums.items():
            total.add(usage.get(key, 0))
        cost = usage.get("cost_usd")
        self.cost_known = self.cost_known and cost is not None
        if self.cost_known:
            self.cost.add(cost)
        self.errors += bool(details.get("error"))
        self.models.add(details["model"])

    def usage(self) -> JudgeTotals | None:
        """The judge's usage over the run (``summary.judge``); None when no case was judged."""
        if not self.judged:
            return None
        sums = self.sums
        return JudgeTotals(
            calls=sums["calls"].value,
            cached=sums["cached"].value,
            input_tokens=sums["input_tokens"].value,
            output_tokens=sums["output_tokens"].value,
            cost_usd=self.cost.value if self.cost_known else None,
            errors=self.errors,
            models=sorted(self.models),
        )


class _Latencies:
    """Trace durations (percentiles, mean, total) and single LLM / tool call durations."""

    __slots__ = ("calls", "mean", "total", "traces")

    def __init__(self, size: int) -> None:
        self.traces = Reservoir(size)
        self.calls = {"llm": Reservoir(size, seed=1), "tool": Reservoir(size, seed=2)}
        self.mean = RunningMean()
        self.total = RunningSum()

    def add(self, result: CaseResult) -> None:
        usage = result.usage
        if usage is None:
            return
        if usage.duration_ms is not None:
            self.traces.add(usage.duration_ms)
            self.mean.add(usage.duration_ms)
            self.total.add(usage.duration_ms)
        for duration in usage.llm_durations_ms:
            self.calls["llm"].add(duration)
        for duration in usage.tool_durations_ms:
            self.calls["tool"].add(duration)

    def percentiles(self) -> dict[str, float | None]:
        """``latency_p50_ms`` ... ``tool_latency_p95_ms``."""
        kinds = {"latency": self.traces, "llm_latency": self.calls["llm"]}
        kinds["tool_latency"] = self.calls["tool"]
        return {f"{k}_p{q}_ms": r.percentile(q) for k, r in kinds.items() for q in (50, 95)}

    def sample(self) -> LatencySample | None:
        """How the percentiles were estimated when one was from a sample, else None."""
        kinds = {"latency": self.traces, "llm_latency": self.calls["llm"]}
        kinds["tool_latency"] = self.calls["tool"]
        if not any(r.sampled for r in kinds.values()):
            return None
        return LatencySample(
            method="uniform reservoir sample",
            size=self.traces.size,
            values={k: r.seen for k, r in kinds.items() if r.sampled},
        )


class RunningSummary:
    """The run document's summary, updated one case result at a time (see the module
    docstring). Holds no result: its size grows with the names of axes, scorers, tags and
    categories, and the latency samples (at most ``sample_size`` values each of 3 kinds)."""

    def __init__(self, threshold: float, sample_size: int = SAMPLE_SIZE) -> None:
        self.threshold = threshold
        self.results = self.passed = self.unmatched_cases = 0
        self.run = _Totals()  # traced and hallucinated over the whole run
        self.axes: dict[str, RunningMean] = {}
        self.scorers: dict[str, RunningMean] = {}
        self.excluded: dict[str, int] = {}
        self.latencies = _Latencies(sample_size)
        self.tokens = {"input_tokens": RunningMean(), "output_tokens": RunningMean()}
        self.cost = RunningMean()
        self.judge = _Judge()
        self.categories: dict[str, _Totals] = {}
        self.tags: dict[str, _Totals] = {}

    def add(self, result: CaseResult) -> None:
        """Count one case result (it is not kept)."""
        self.results += 1
        self.passed += result.passed
        self.unmatched_cases += result.trace_id is None
        self.run.add(result)
        for axis, value in result.axes.items():
            self.axes.setdefault(axis, RunningMean()).add(value)
        for name, score in result.scores.items():
            if score is not None:
                self.scorers.setdefault(name, RunningMean()).add(score)
        for axis in result.excluded:
            self.excluded[axis] = self.excluded.get(axis, 0) + 1
        self.latencies.add(result)
        self._usage(result)
        self.judge.add(result)
        if result.category is not None:
            self.categories.setdefault(result.category, _Totals()).add(result)
        for tag in dict.fromkeys(str(t) for t in result.tags):
            self.tags.setdefault(tag, _Totals()).add(result)

    def _usage(self, result: CaseResult) -> None:
        if (usage := result.usage) is None:
            return
        for key, total in self.tokens.items():
            if (tokens := getattr(usage, key)) is not None:
                total.add(tokens)
        if usage.cost_usd is not None:
            self.cost.add(usage.cost_usd)

    def _figures(self, unmatched_traces: int) -> dict[str, Any]:
        """The figures :meth:`run_summary` and :meth:`summary` share: counts, scores, axes,
        scorers, latency percentiles, tokens, cost and the hallucination rate."""
        return {
            "results": self.results,
            "passed": self.passed,
            "failed": self.results - self.passed,
            "pass_rate": self.passed / self.results if self.results else 0.0,
            "score": self.run.weighted.value,
            "threshold": self.threshold,
            "unmatched_cases": self.unmatched_cases,
            "unmatched_traces": unmatched_traces,
            "axes": {a: self.axes[a].value for a in sorted(self.axes)},
            "scorers": {n: self.scorers[n].value for n in sorted(self.scorers)},
            "excluded": dict(self.excluded),
            **self.latencies.percentiles(),
            "input_tokens": _total(self.tokens["input_tokens"]),
            "output_tokens": _total(self.tokens["output_tokens"]),
            "cost_usd": _total(self.cost),
            "hallucination_rate": self.run.hallucination_rate,
        }

    def run_summary(self, unmatched_traces: int) -> RunSummary:
        """The :class:`RunSummary` :func:`~tracegrade.scoring.evaluation.summarize` gives over
        the results added (its latency percentiles from the samples)."""
        return RunSummary(
            **self._figures(unmatched_traces),
            judge=None if (judge := self.judge.usage()) is None else judge.model_dump(),
            categories={
                c: self.categories[c].category().model_dump() for c in sorted(self.categories)
            },
        )

    def summary(self, unmatched_traces: int) -> RunSummaryEntry:
        """The document's ``summary``: :meth:`run_summary`'s figures, the mean and total
        latency, the hallucination rate and the breakdown by tag; with ``latency_sample``
        (:meth:`_Latencies.sample`) when a percentile was estimated from a sample."""
        latencies = self.latencies
        sample = latencies.sample()
        return RunSummaryEntry(
            **self._figures(unmatched_traces),
            judge=self.judge.usage(),
            categories={c: self.categories[c].category() for c in sorted(self.categories)},
            latency_mean_ms=latencies.mean.fmean,
            latency_total_ms=latencies.total.value if latencies.mean.count else None,
            by_tag={t: self.tags[t].tag() for t in sorted(self.tags)},
            **({} if sample is None else {"latency_sample": sample}),
        )


def _total(values: RunningMean) -> Any:
    """The sum of the values, None for none."""
    return values.total.value if values.count else None


def summarize(results: Iterable[CaseResult], threshold: float, unmatched_traces: int) -> RunSummary:
    """The :class:`RunSummary` of ``results`` (a :class:`RunningSummary` over them)."""
    running = RunningSummary(threshold)
    for result in results:
        running.add(result)
    return running.run_summary(unmatched_traces)
