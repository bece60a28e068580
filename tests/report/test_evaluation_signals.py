"""What ``--export-otlp`` sends, as data: a case result's ``gen_ai.evaluation.result`` records
(labels, errors, attributes) and the figures of a run and of a production window."""

from __future__ import annotations

import pytest

from tracegrade.report.evaluation_signals import (
    RunContext,
    evaluation_records,
    label_of,
    run_figures,
    window_figures,
)
from tracegrade.run_document import RunSummaryEntry
from tracegrade.scoring.results import CaseResult
from tracegrade.store.follow import ResultRow

TRACE, SPAN = "ab" * 16, "cd" * 8


def _result(**changes) -> CaseResult:
    fields = {
        "case_id": "c1",
        "trace_id": TRACE,
        "passed": False,
        "score": 0.4,
        "scores": {"tool_correctness": 0.5, "custom": None, "judge": None},
        "reasons": ("tool_correctness: 1 of 2 expected tools", "judge error: timeout"),
        "details": {
            "tool_correctness": {"value": 0.5, "reason": "1 of 2 expected tools", "details": {}},
            "custom": {
                "value": None,
                "reason": "scorer crashed: KeyError: 'x' at custom.py:3",
                "details": {},
            },
            "judge": {"value": None, "reason": "judge error: timeout", "details": {"error": "t"}},
        },
        "span_id": SPAN,
    }
    return CaseResult(**{**fields, **changes})


def test_one_record_per_scorer_and_one_for_the_case():
    records = evaluation_records(_result(), RunContext("run-1", "shop"), repeat=2)
    assert [r.attributes["gen_ai.evaluation.name"] for r in records] == [
        "tool_correctness",
        "custom",
        "judge",
        "overall",
    ]
    assert {(r.trace_id, r.span_id) for r in records} == {(TRACE, SPAN)}
    tools, crashed, judge, overall = (r.attributes for r in records)
    common = {
        "tracegrade.run_id": "run-1",
        "tracegrade.case_id": "c1",
        "tracegrade.repeat": 2,
        "tracegrade.dataset": "shop",
        "tracegrade.verdict": "fail",
    }
    assert tools == {
        "gen_ai.evaluation.name": "tool_correctness",
        "gen_ai.evaluation.score.value": 0.5,
        "gen_ai.evaluation.score.label": "partial",
        "gen_ai.evaluation.explanation": "1 of 2 expected tools",
        **common,
    }
    assert crashed["error.type"] == "KeyError" and "gen_ai.evaluation.score.value" not in crashed
    assert judge["error.type"] == "judge_error"
    assert overall["gen_ai.evaluation.score.value"] == 0.4
    assert overall["gen_ai.evaluation.score.label"] == "fail"
    assert overall["gen_ai.evaluation.explanation"].startswith("tool_correctness: 1 of 2")


def test_a_result_without_a_trace_sends_nothing_and_reference_free_has_no_case():
    assert evaluation_records(_result(trace_id=None), RunContext()) == []
    records = evaluation_records(_result(case_id=None, passed=True, reasons=()), RunContext())
    overall = records[-1].attributes
    assert overall == {
        "gen_ai.evaluation.name": "overall",
        "gen_ai.evaluation.score.value": 0.4,
        "gen_ai.evaluation.score.label": "pass",
        "tracegrade.verdict": "pass",
    }


@pytest.mark.parametrize(
    ("value", "label"), [(1.0, "pass"), (0.0, "fail"), (0.3, "partial"), (None, None)]
)
def test_score_labels(value, label):
    assert label_of(value) == label


def test_run_figures_from_the_summary():
    summary = RunSummaryEntry.model_validate(
        {
            "results": 4,
            "pass_rate": 0.75,
            "score": 0.8,
            "hallucination_rate": 0.25,
            "latency_p50_ms": 1200.0,
            "latency_p95_ms": None,
            "cost_usd": 0.02,
            "axes": {"groundedness": 0.9, "correctness": 0.7},
        }
    )
    figures = {
        (f.instrument, f.attributes.get("tracegrade.axis")): f for f in run_figures(summary, "shop")
    }
    assert figures[("tracegrade.trace.duration.p50", None)].value == 1.2
    assert ("tracegrade.trace.duration.p95", None) not in figures  # unknown: not sent
    assert figures[("tracegrade.evaluation.axis_score", "correctness")].value == 0.7
    assert {f.attributes["tracegrade.dataset"] for f in figures.values()} == {"shop"}
    assert len(figures) == 8


def _row(service, passed, score, duration_ms, cost=None, tools=(0, 0), hallucinated=False):
    return ResultRow(service, passed, score, hallucinated, *tools, duration_ms, cost, {})


def test_window_figures_per_service():
    rows = [
        _row("shop", True, 1.0, 100.0, 0.01, (2, 0)),
        _row("shop", False, None, 300.0, 0.03, (2, 1), hallucinated=True),
        _row(None, True, 0.9, 50.0),
    ]
    figures = window_figures(rows, 300, None)
    shop = {f.instrument: f.value for f in figures if f.attributes["tracegrade.service"] == "shop"}
    assert shop == {
        "tracegrade.evaluation.cases": 2,
        "tracegrade.evaluation.pass_rate": 0.5,
        "tracegrade.evaluation.score": 0.5,  # an unscored result counts 0
        "tracegrade.evaluation.hallucination_rate": 0.5,
        "tracegrade.trace.duration.p50": 0.2,
        "tracegrade.trace.duration.p95": pytest.approx(0.29),
        "tracegrade.trace.cost": pytest.approx(0.04),
        "tracegrade.trace.tool_error_rate": 0.25,
    }
    other = [f for f in figures if f.attributes["tracegrade.service"] == "unknown_service"]
    assert {f.attributes["tracegrade.window"] for f in other} == {"300s"}
    assert "tracegrade.trace.cost" not in {f.instrument for f in other}  # no cost known
