"""Issue 23 rule 8: a conversation a framework spread over one trace per turn becomes one
multi-turn case (``dataset build``): Strands, LangGraph and the Vercel AI SDK, recorded from
the real packages in tests/data/frameworks."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade.curate.build import BuildOptions, build_dataset
from tracegrade.normalize.conversations import merge_traces
from tracegrade.pipeline.reading import from_files

FRAMEWORKS = Path(__file__).parents[1] / "data" / "frameworks"
TURNS = ["What is the status of order D400?", "Which carrier is delivering it?"]


def _traces(setup: str):
    return from_files(sorted((FRAMEWORKS / setup).glob("traces.*"))).traces


@pytest.mark.parametrize("setup", ["strands-default", "langgraph-openinference", "js-vercel-ai"])
def test_a_two_trace_conversation_becomes_one_multi_turn_case(setup):
    report = build_dataset(_traces(setup), BuildOptions())
    (case,) = [c for c in report.cases if c.get("turns")]
    assert case["turns"] == TURNS
    assert case["expected_tools"] == ["get_order", "track_shipment"]
    assert len(case["metadata"]["source_traces"]) == 2


def test_merged_traces_keep_each_call_with_its_llm_call():
    traces = [t for t in _traces("strands-default") if t.conversation_id == "conv-two_turns"]
    merged = merge_traces(traces)
    assert list(merged.user_inputs) == TURNS and merged.history == ()
    assert len(merged.llm_calls) == 4
    assert [(c.name, c.llm_call_index) for c in merged.tool_calls] == [
        ("get_order", 0),
        ("track_shipment", 2),
    ]
    assert merged.input_tokens == sum(t.input_tokens or 0 for t in traces)


@pytest.mark.parametrize("setup", ["strands-default", "langgraph-openinference", "js-vercel-ai"])
def test_the_built_multi_turn_case_scores_on_the_traces_it_came_from(setup):
    from tracegrade.dataset import Dataset
    from tracegrade.pipeline import evaluate_dataset

    traces = _traces(setup)
    report = build_dataset(traces, BuildOptions())
    dataset = Dataset.model_validate({"name": setup, "cases": report.cases})
    run = evaluate_dataset(traces, dataset, judge=False)
    by_case = {r.case_id: r for r in run.results}
    (multi,) = [c for c in report.cases if c.get("turns")]
    result = by_case[multi["id"]]
    assert result.trace_id == multi["metadata"]["source_traces"][0]
    assert result.passed, result.reasons
