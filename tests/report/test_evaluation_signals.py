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
    figures = window_figures(rows, 300, None, 1_800_000_000.0, {"shop": 0.012})
    shop = {f.instrument: f.value for f in figures if f.attributes["tracegrade.service"] == "shop"}
    starts = {f.attributes["tracegrade.window.start"] for f in figures}
    assert starts == {"2027-01-15T08:00:00+00:00"}
    assert shop == {
        "tracegrade.evaluation.cases": 2,
        "tracegrade.evaluation.pass_rate": 0.5,
        "tracegrade.evaluation.score": 0.5,  # an unscored result counts 0
        "tracegrade.evaluation.hallucination_rate": 0.5,
        "tracegrade.trace.duration.p50": 0.2,
        "tracegrade.trace.duration.p95": pytest.approx(0.29),
        "tracegrade.trace.cost": pytest.approx(0.04),
        "tracegrade.trace.tool_error_rate": 0.25,
        "tracegrade.judge.cost": 0.012,
        "tracegrade.judge.skipped": 0,
    }
    other = [f for f in figures if f.attributes["tracegrade.service"] == "unknown_service"]
    assert {f.attributes["tracegrade.window"] for f in other} == {"300s"}
    assert "tracegrade.trace.cost" not in {f.instrument for f in other}  # no cost known


def _evaluator():
    from tracegrade.scoring.identity import Evaluator, ScorerIdentity

    scorers = (
        ScorerIdentity("tool_correctness", "0.1.0"),
        ScorerIdentity("judge", "0.1.0", "llm_judge", "gpt-4o"),
    )
    return Evaluator(scorers, "shop", "f" * 16, "c" * 16, "0.1.0")


def test_records_carry_the_evaluator_and_the_result_s_identity():
    evaluator = _evaluator()
    context = RunContext(None, "shop", evaluator)
    first = evaluation_records(_result(), context, version=1)
    again = evaluation_records(_result(passed=True, score=0.9), context, version=2)
    tools, _, judge, overall = (r.attributes for r in first)
    assert tools["tracegrade.evaluator.id"] == evaluator.id
    assert tools["tracegrade.version"] == "0.1.0"
    assert tools["tracegrade.dataset.fingerprint"] == "f" * 16
    assert tools["tracegrade.config.fingerprint"] == "c" * 16
    assert tools["gen_ai.evaluation.evaluator.id"] == "tracegrade/tool_correctness"
    assert tools["gen_ai.evaluation.evaluator.type"] == "deterministic"
    assert tools["gen_ai.evaluation.evaluator.version"] == "0.1.0"
    assert judge["gen_ai.evaluation.evaluator.type"] == "llm_judge"
    assert overall["gen_ai.evaluation.evaluator.id"] == "tracegrade/overall"
    # the same evaluator's result on the same trace and case, re-scored: the same identity,
    # the next version (a backend keeps the highest)
    ids = {r.attributes["tracegrade.result.id"] for r in [*first, *again]}
    assert len(ids) == 1
    assert [r.attributes["tracegrade.result.version"] for r in (first[-1], again[-1])] == [1, 2]
    other_run = evaluation_records(_result(), RunContext("run-9", "shop", evaluator))
    assert other_run[0].attributes["tracegrade.result.id"] not in ids  # a run's own result


def test_a_judge_score_skipped_for_the_budget_is_exported_as_skipped():
    skipped = {
        "value": None,
        "reason": "judge skipped: judge budget spent: $0.0100 of $0.01 in the last hour",
        "details": {"skipped": "judge_budget"},
    }
    result = _result(details={"judge": skipped}, scores={"judge": None})
    judge = evaluation_records(result, RunContext(evaluator=_evaluator()))[0].attributes
    assert judge["gen_ai.evaluation.score.label"] == "skipped"
    assert judge["tracegrade.skipped"] == "judge_budget"
    assert judge["gen_ai.evaluation.explanation"].startswith("judge skipped: judge budget spent")
    assert "gen_ai.evaluation.score.value" not in judge and "error.type" not in judge
