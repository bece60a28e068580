"""What scoring produces: one :class:`CaseResult` per case and trace, the run's
:class:`RunSummary`, both in a :class:`RunResult`."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.scoring.usage import Usage


@dataclass(frozen=True)
class CaseResult:
    """One case scored against one trace (``case_id`` None without a dataset; ``trace_id``
    None when no trace matched the case). ``reasons`` say why the case failed or lost score;
    ``notes`` what was not scored and why ("groundedness not scored: ..."), never a failure
    reason by itself."""

    case_id: str | None
    trace_id: str | None
    passed: bool
    score: float | None
    scores: Mapping[str, float | None]
    reasons: tuple[str, ...]
    hard_failures: tuple[str, ...] = ()
    excluded: Mapping[str, str] = field(default_factory=dict)
    axes: Mapping[str, float] = field(default_factory=dict)
    details: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    usage: Usage | None = None
    weight: float = 1.0
    tags: tuple[str, ...] = ()
    tier: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    category: str | None = None
    """The case's ``category`` (for per-category breakdowns in reports)."""
    span_id: str | None = None
    """The span of the trace this result evaluates (hex,
    :attr:`~tracegrade.trace.AgentTrace.evaluated_span_id`): the parent of its
    ``gen_ai.evaluation.result`` records (``--export-otlp``); None without a trace or such a
    span. Not part of the run document."""

    @property
    def hallucinated(self) -> bool:
        """See :func:`hallucinated` (the one definition every hallucination rate uses)."""
        return hallucinated(self.scores, self.details)

    @property
    def hallucination_checked(self) -> bool:
        """See :func:`hallucination_checked` (the rates' denominator)."""
        return self.trace_id is not None and hallucination_checked(self.notes)


HALLUCINATION_AXES = ("hallucination", "value_grounding", "faithfulness")

CONTENT_NOTE = "message content "
"""How a result's note that its trace carries no message content begins (the trace's
``message_content`` gap, first among the notes: "message content not captured: set ...")."""


def content_note(notes: Sequence[str]) -> str | None:
    """The note saying the trace carries no message content, and the switch that records it;
    None when the content was captured."""
    return next((n for n in notes if n.startswith(CONTENT_NOTE)), None)


def hallucination_checked(notes: Sequence[str]) -> bool:
    """Whether :func:`hallucinated` could tell, from a result's ``notes``: not when its trace
    carries no message content (:func:`content_note`; no answer to read). Such a result is
    left out of every hallucination rate's denominator, so a run where none could tell
    reports the rate as unknown (None, "n/a"), never 0%. A trace whose run ended without an
    answer stated nothing invented: it counts, as not hallucinated."""
    return content_note(notes) is None


def hallucinated(
    scores: Mapping[str, float | None], details: Mapping[str, Mapping[str, Any]]
) -> bool:
    """THE hallucination test behind every hallucination rate tracegrade reports (run summary,
    comparison, history, dashboard): the ``hallucination`` or ``value_grounding`` score is
    below 1 (``faithfulness`` too: it runs on RAG traces only), or the answer hit a
    ``must_not_contain`` phrase. ``scores`` maps scorer names to
    values in [0, 1] (None when not scored); ``details`` scorer names to their Score documents."""
    if any((v := scores.get(axis)) is not None and v < 1.0 for axis in HALLUCINATION_AXES):
        return True
    found = ((details.get("hallucination") or {}).get("details") or {}).get("forbidden_found")
    return bool(found)


@dataclass(frozen=True)
class RunSummary:
    """Totals of a run. Latency percentiles are in ms over trace durations, and over single
    LLM and tool calls; cost sums the traces whose cost is known."""

    results: int
    passed: int
    failed: int
    pass_rate: float
    score: float | None
    threshold: float
    unmatched_cases: int
    unmatched_traces: int
    axes: Mapping[str, float]
    scorers: Mapping[str, float]
    excluded: Mapping[str, int]
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    llm_latency_p50_ms: float | None
    llm_latency_p95_ms: float | None
    tool_latency_p50_ms: float | None
    tool_latency_p95_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    hallucination_rate: float | None
    judge: Mapping[str, Any] | None = None
    """The LLM judge's own usage, apart from the agent's: ``{"calls", "cached", "input_tokens",
    "output_tokens", "cost_usd", "errors", "models"}``; None when no case was judged."""
    categories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per case ``category``: ``{"results", "passed", "pass_rate", "score"}`` (weighted mean
    score, None when none was scored); empty when no case has a category."""


@dataclass(frozen=True)
class RunResult:
    """Every case result and the summary."""

    results: tuple[CaseResult, ...]
    summary: RunSummary


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100) by linear interpolation; None for no values."""
    if not values:
        return None
    if len(values) == 1:
        return values[0]
    return (
        statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]
        if 1 <= q <= 99
        else max(values)
    )
