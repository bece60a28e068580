"""What ``--export-otlp`` sends, as plain data: per case, ``gen_ai.evaluation.result`` log
records; per run or window, metric figures. :mod:`tracegrade.report.otlp_export` hands them
to the OpenTelemetry SDK.

**Evaluation records** (GenAI semconv event ``gen_ai.evaluation.result``, parented to the
evaluated span: :attr:`~tracegrade.trace.AgentTrace.evaluated_span_id`, the trace's
outermost agent span, else its first LLM call). One record per scorer of a case result, and
one named ``overall`` for the case itself:

- ``gen_ai.evaluation.name``: the scorer (``tool_correctness``, ``hallucination``,
  ``judge``...), or ``overall``;
- ``gen_ai.evaluation.score.value``: its score in [0, 1]; absent when it did not apply;
- ``gen_ai.evaluation.score.label``: ``pass`` (1), ``partial`` (between), ``fail`` (0) for a
  scorer; the case's verdict (``pass``/``fail``, by the run's threshold) for ``overall``;
- ``gen_ai.evaluation.explanation``: the scorer's reason; the case's reasons for ``overall``;
- ``error.type``: the exception's type when a scorer crashed, ``judge_error`` when the LLM
  judge could not give a verdict;
- ``tracegrade.run_id``, ``tracegrade.case_id``, ``tracegrade.repeat``, ``tracegrade.dataset``
  and ``tracegrade.verdict`` (the case's ``pass``/``fail``) where they apply;
- the evaluator's identity (:mod:`tracegrade.scoring.identity`): ``tracegrade.evaluator.id``,
  ``tracegrade.version``, ``tracegrade.dataset.fingerprint``,
  ``tracegrade.config.fingerprint``, and per scorer the attributes the GenAI conventions are
  adding (semantic-conventions-genai PR #359, open; Pydantic's extension for the version):
  ``gen_ai.evaluation.evaluator.id`` (``tracegrade/<scorer>``),
  ``gen_ai.evaluation.evaluator.type`` (``llm_judge`` or ``deterministic``) and
  ``gen_ai.evaluation.evaluator.version``;
- the result's identity: ``tracegrade.result.id`` (the same for every version of one
  evaluator's result on one trace and case: a backend keeps the record with the highest
  ``tracegrade.result.version``, the trace version it scored, where given);
- a judge score skipped for the judge budget: ``gen_ai.evaluation.score.label`` ``skipped``
  and ``tracegrade.skipped`` ``judge_budget``.

A result without a trace (no trace matched its case, the agent failed) has nothing to be
parented to and sends no record; it counts in the figures. ``tracegrade.verdict`` marks a
record as tracegrade's own: a tracegrade receiver never takes it for end-user feedback
(:mod:`tracegrade.store.feedback`).

**Figures** (metric data points; instruments in :data:`INSTRUMENTS`, units by the UCUM
conventions OpenTelemetry uses: ``1`` for ratios, ``s`` for durations, ``{USD}`` for cost):
a run's from its summary, with ``tracegrade.dataset``; a production window's (``score
--follow --window``) per ``service.name`` of the agent, with ``tracegrade.service``,
``tracegrade.window``, ``tracegrade.window.start`` and ``tracegrade.dataset``, counting each
trace once by its current result (a window revised after late results is sent again with
the same start), with what the judge spent and how many judge scores the budget skipped.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.attributes import (
    AXIS_ATTR,
    CASE_ID_ATTR,
    CONFIG_FINGERPRINT_ATTR,
    DATASET_ATTR,
    DATASET_FINGERPRINT_ATTR,
    EVALUATOR_ID_ATTR,
    REPEAT_ATTR,
    RESULT_ID_ATTR,
    RESULT_VERSION_ATTR,
    RUN_ID_ATTR,
    SERVICE_ATTR,
    SESSION_ATTR,
    SKIPPED_ATTR,
    VERDICT_ATTR,
    VERSION_ATTR,
    WINDOW_ATTR,
    WINDOW_START_ATTR,
)
from tracegrade.judge.budget import BUDGET_SKIP
from tracegrade.report import windows
from tracegrade.run_document import RunSummaryEntry
from tracegrade.scoring.identity import DETERMINISTIC, Evaluator, result_id
from tracegrade.scoring.results import CaseResult, percentile
from tracegrade.store.feedback import EXPLANATION_ATTR, LABEL_ATTR, NAME_ATTR, SCORE_ATTR
from tracegrade.store.follow import ResultRow

__all__ = [
    "INSTRUMENTS",
    "OVERALL",
    "EvaluationRecord",
    "Figure",
    "RunContext",
    "evaluation_records",
    "run_figures",
    "window_figures",
]

ERROR_TYPE = "error.type"
"""Why an evaluation itself failed (GenAI semconv ``error.type``)."""
OVERALL = "overall"
"""``gen_ai.evaluation.name`` of a case's own record (its overall score and verdict)."""
EVALUATOR_ID = "gen_ai.evaluation.evaluator.id"
"""Which evaluator produced the record (semantic-conventions-genai PR #359, open)."""
EVALUATOR_TYPE = "gen_ai.evaluation.evaluator.type"
"""``llm_judge`` or ``deterministic`` (semantic-conventions-genai PR #359, open)."""
EVALUATOR_VERSION = "gen_ai.evaluation.evaluator.version"
"""The evaluator's version (Pydantic Evals' extension of the evaluation event)."""
SKIPPED_LABEL = "skipped"
_CRASHED = "scorer crashed: "
_JUDGE_ERROR = "judge_error"


@dataclass(frozen=True)
class RunContext:
    """What every record of a run carries besides its result (None: not sent)."""

    run_id: str | None = None
    dataset: str | None = None
    evaluator: Evaluator | None = None
    """The evaluator of every result (its identity goes on each record)."""


@dataclass(frozen=True)
class EvaluationRecord:
    """One ``gen_ai.evaluation.result`` log record: its trace context (hex) and attributes."""

    trace_id: str
    span_id: str | None
    attributes: Mapping[str, str | bool | int | float]


def label_of(value: float | None) -> str | None:
    """A scorer's ``gen_ai.evaluation.score.label``: ``pass`` at 1, ``fail`` at 0,
    ``partial`` between; None when it did not apply."""
    if value is None:
        return None
    return "pass" if value >= 1.0 else "fail" if value <= 0.0 else "partial"


def _error_type(detail: Mapping[str, Any]) -> str | None:
    """``error.type`` of a scorer's detail: the exception type of a crash (``scorer crashed:
    KeyError: ...``), ``judge_error`` when the judge failed; None otherwise."""
    reason = str(detail.get("reason") or "")
    if reason.startswith(_CRASHED):
        return reason[len(_CRASHED) :].split(":", 1)[0] or "crash"
    if (detail.get("details") or {}).get("error"):
        return _JUDGE_ERROR
    return None


def _common(
    result: CaseResult, context: RunContext, repeat: int | None, version: int | None
) -> dict[str, str | bool | int | float]:
    evaluator = context.evaluator
    values = {
        RUN_ID_ATTR: context.run_id,
        CASE_ID_ATTR: result.case_id,
        REPEAT_ATTR: repeat,
        DATASET_ATTR: context.dataset,
        VERDICT_ATTR: "pass" if result.passed else "fail",
        RESULT_VERSION_ATTR: version,
    }
    session = result.metadata.get(SESSION_KEY)
    if evaluator is not None:
        scope = context.run_id or "production"
        # a conversation's result is the same result whichever turn came last
        subject, scope = (str(session), f"{scope}/session") if session else (result.trace_id, scope)
        values |= {
            EVALUATOR_ID_ATTR: evaluator.id,
            VERSION_ATTR: evaluator.tracegrade_version,
            DATASET_FINGERPRINT_ATTR: evaluator.dataset_fingerprint,
            CONFIG_FINGERPRINT_ATTR: evaluator.config_fingerprint,
            RESULT_ID_ATTR: result_id(evaluator.id, subject or "", result.case_id, scope),
        }
    if session:
        values[SESSION_ATTR] = str(session)
    return {key: value for key, value in values.items() if value is not None}


SESSION_KEY = "tracegrade.session"
"""A conversation-level result's ``metadata`` key holding its conversation's key."""


def _evaluator(context: RunContext, name: str) -> dict[str, str | None]:
    """The GenAI evaluator attributes of scorer ``name`` (``overall``: tracegrade's own)."""
    evaluator = context.evaluator
    if evaluator is None:
        return {}
    scorer = evaluator.scorer(name)
    return {
        EVALUATOR_ID: f"tracegrade/{name}",
        EVALUATOR_TYPE: scorer.type if scorer else DETERMINISTIC,
        EVALUATOR_VERSION: scorer.version if scorer else evaluator.tracegrade_version,
    }


def _record(
    result: CaseResult,
    common: Mapping[str, str | bool | int | float],
    name: str,
    values: Mapping[str, str | float | None],
) -> EvaluationRecord:
    attributes = {NAME_ATTR: name, **{k: v for k, v in values.items() if v is not None}, **common}
    return EvaluationRecord(result.trace_id or "", result.span_id, attributes)


def _scorer_values(detail: Mapping[str, Any]) -> dict[str, str | float | None]:
    skipped = (detail.get("details") or {}).get("skipped")
    return {
        SCORE_ATTR: detail.get("value"),
        LABEL_ATTR: SKIPPED_LABEL if skipped == BUDGET_SKIP else label_of(detail.get("value")),
        EXPLANATION_ATTR: detail.get("reason") or None,
        ERROR_TYPE: _error_type(detail),
        SKIPPED_ATTR: skipped if skipped == BUDGET_SKIP else None,
    }


def evaluation_records(
    result: CaseResult,
    context: RunContext,
    repeat: int | None = None,
    version: int | None = None,
) -> list[EvaluationRecord]:
    """The records of one case result (module docstring): one per scorer, in the result's
    order, then ``overall``; none for a result without a trace. ``version``: the trace
    version the result scored (a follower's), sent as ``tracegrade.result.version``."""
    if result.trace_id is None:
        return []
    common = _common(result, context, repeat, version)
    records = [
        _record(result, common, name, {**_scorer_values(detail), **_evaluator(context, name)})
        for name, detail in result.details.items()
    ]
    overall = {
        SCORE_ATTR: result.score,
        LABEL_ATTR: "pass" if result.passed else "fail",
        EXPLANATION_ATTR: "; ".join(result.reasons) or None,
        **_evaluator(context, OVERALL),
    }
    return [*records, _record(result, common, OVERALL, overall)]


# --- figures ----------------------------------------------------------------------------------

INSTRUMENTS: Mapping[str, tuple[str, str]] = {
    "tracegrade.evaluation.cases": ("{case}", "Case results (traces in a window) evaluated."),
    "tracegrade.evaluation.pass_rate": ("1", "Share of case results that passed."),
    "tracegrade.evaluation.score": ("1", "Mean overall score; a failed unscored case is 0."),
    "tracegrade.evaluation.hallucination_rate": (
        "1",
        "Share of case results with an invented value or a must_not_contain hit.",
    ),
    "tracegrade.evaluation.axis_score": ("1", "Mean score of one axis (tracegrade.axis)."),
    "tracegrade.trace.duration.p50": ("s", "Median trace duration."),
    "tracegrade.trace.duration.p95": ("s", "95th percentile of trace durations."),
    "tracegrade.trace.cost": ("{USD}", "Total cost of the traces' LLM calls (priced ones)."),
    "tracegrade.trace.tool_error_rate": ("1", "Share of tool calls that failed (windows)."),
    "tracegrade.judge.cost": ("{USD}", "What the LLM judge spent (windows: in the window)."),
    "tracegrade.judge.skipped": (
        "{case}",
        "Judge scores skipped because the judge budget was spent (windows).",
    ),
}
"""Instrument name -> (unit, description): every figure is a gauge of one of these."""


@dataclass(frozen=True)
class Figure:
    """One data point: an instrument of :data:`INSTRUMENTS`, its value and attributes."""

    instrument: str
    value: float
    attributes: Mapping[str, str] = field(default_factory=dict)


def _figures(values: Mapping[str, float | None], attributes: Mapping[str, str]) -> list[Figure]:
    return [Figure(k, float(v), attributes) for k, v in values.items() if v is not None]


def _seconds(ms: float | None) -> float | None:
    return None if ms is None else ms / 1000


def run_figures(summary: RunSummaryEntry, dataset: str | None) -> list[Figure]:
    """A finished run's figures from its document ``summary`` (durations ms -> s)."""
    attributes = {DATASET_ATTR: dataset} if dataset else {}
    values = {
        "tracegrade.evaluation.cases": summary.results,
        "tracegrade.evaluation.pass_rate": summary.pass_rate,
        "tracegrade.evaluation.score": summary.score,
        "tracegrade.evaluation.hallucination_rate": summary.hallucination_rate,
        "tracegrade.trace.duration.p50": _seconds(summary.latency_p50_ms),
        "tracegrade.trace.duration.p95": _seconds(summary.latency_p95_ms),
        "tracegrade.trace.cost": summary.cost_usd,
    }
    axes = [
        Figure("tracegrade.evaluation.axis_score", float(mean), {**attributes, AXIS_ATTR: axis})
        for axis, mean in sorted(summary.axes.items())
    ]
    return [*_figures(values, attributes), *axes]


def window_figures(
    rows: Sequence[ResultRow],
    window_s: float,
    dataset: str | None,
    start_s: float | None = None,
    judge_cost: Mapping[str, float] | None = None,
) -> list[Figure]:
    """A closed window's figures per service (``rows``: the current results of the traces
    it counts), from the window's aggregates (:mod:`tracegrade.report.windows`) and its
    scores and durations; ``start_s`` its start (Unix s), ``judge_cost`` what the judge spent
    in it per service (USD)."""
    import datetime as dt

    figures: list[Figure] = []
    spent = dict(judge_cost or {})
    for service, aggregates in windows.aggregate(rows).items():
        mine = [r for r in rows if (r.service or windows.UNKNOWN_SERVICE) == service]
        attributes = {SERVICE_ATTR: service, WINDOW_ATTR: f"{window_s:g}s"}
        attributes |= {DATASET_ATTR: dataset} if dataset else {}
        if start_s is not None:
            moment = dt.datetime.fromtimestamp(start_s, dt.UTC)
            attributes[WINDOW_START_ATTR] = moment.isoformat(timespec="seconds")
        durations = sorted(r.duration_ms for r in mine if r.duration_ms is not None)
        costs = [r.cost_usd for r in mine if r.cost_usd is not None]
        values = {
            "tracegrade.evaluation.cases": aggregates["traces"],
            "tracegrade.evaluation.pass_rate": 1.0 - aggregates["failure_rate"],
            "tracegrade.evaluation.score": statistics.fmean(r.score or 0.0 for r in mine),
            "tracegrade.evaluation.hallucination_rate": aggregates["hallucination_rate"],
            "tracegrade.trace.duration.p50": _seconds(percentile(durations, 50)),
            "tracegrade.trace.duration.p95": _seconds(aggregates["p95_latency_ms"]),
            "tracegrade.trace.cost": sum(costs) if costs else None,
            "tracegrade.trace.tool_error_rate": aggregates["tool_error_rate"],
            "tracegrade.judge.cost": spent.get(service),
            "tracegrade.judge.skipped": aggregates["judge_skipped"],
        }
        figures += _figures(values, attributes)
    return figures
