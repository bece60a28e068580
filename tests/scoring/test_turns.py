"""A multi-turn case scored against a conversation recorded one trace per turn (matching
rule 4, tracegrade.scoring.turns), on real framework recordings (tests/data/frameworks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade.config import load_config
from tracegrade.dataset import Dataset
from tracegrade.pipeline import evaluate_dataset
from tracegrade.pipeline.reading import from_files
from tracegrade.scoring import build_scorers
from tracegrade.scoring.evaluation import evaluate
from tracegrade.scoring.streaming import evaluate_batches
from tracegrade.trace import AgentTrace

RECORDINGS = Path(__file__).parents[1] / "data" / "frameworks"
TURN_1 = "What is the status of order D400?"
TURN_2 = "Which carrier is delivering it?"


def _dataset(turns: list[str], must_contain: list[str]) -> Dataset:
    return Dataset.model_validate(
        {
            "name": "two-turns",
            "cases": [
                {
                    "id": "d400-carrier",
                    "turns": turns,
                    "expected_tool_calls": [
                        {"name": "get_order", "arguments": {"order_id": "D400"}},
                        {"name": "track_shipment", "arguments": {"tracking_id": "TRK-D400"}},
                    ],
                    "order": "in_order",
                    "must_contain": must_contain,
                }
            ],
        }
    )


def _traces(setup: str) -> list[AgentTrace]:
    files = sorted(p for p in (RECORDINGS / setup).iterdir() if p.name.startswith("traces."))
    return from_files(files).traces


def _turn_traces(traces: list[AgentTrace]) -> list[AgentTrace]:
    return [t for t in traces if TURN_1 in (*t.history, *t.user_inputs)]


SETUPS = ["langgraph-openinference", "strands-default", "js-vercel-ai", "adk-semconv"]


@pytest.mark.parametrize("setup", SETUPS)
def test_a_two_turn_case_passes_on_its_conversation_of_two_traces(setup: str) -> None:
    traces = _traces(setup)
    turns = _turn_traces(traces)
    assert len(turns) == 2, "each turn is its own trace in this recording"
    run = evaluate_dataset(traces, _dataset([TURN_1, TURN_2], ["UPS"]), judge=False)
    (result,) = run.results
    assert result.passed, result.reasons
    assert result.trace_id == min(turns, key=lambda t: t.start_unix_nano).trace_id
    assert result.scores["tool_correctness"] == 1.0
    assert run.summary.unmatched_traces == len(traces) - 2


@pytest.mark.parametrize("setup", ["langgraph-openinference", "strands-default"])
def test_the_merged_conversation_is_scored_in_worker_processes_too(setup: str) -> None:
    traces = _traces(setup)
    dataset = _dataset([TURN_1, TURN_2], ["UPS"])
    config = load_config(None)
    scorers = build_scorers(config)
    alone = evaluate(traces, dataset, scorers, config)

    streamed, _ = evaluate_batches([traces[:5], traces[5:]], dataset, scorers, config, workers=2)
    assert [r.case_id for r in streamed.results] == ["d400-carrier"]
    assert streamed.results == alone.results


def test_a_conversation_that_did_not_take_the_case_turns_does_not_match() -> None:
    traces = _traces("langgraph-openinference")
    run = evaluate_dataset(
        traces, _dataset([TURN_1, "Can I return it instead?"], ["UPS"]), judge=False
    )
    (result,) = run.results
    assert not result.passed
    assert result.trace_id is None
    assert "no trace matched this case" in result.reasons


def test_an_answer_from_the_last_turn_is_what_the_case_checks() -> None:
    traces = _traces("strands-default")
    run = evaluate_dataset(traces, _dataset([TURN_1, TURN_2], ["FedEx"]), judge=False)
    (result,) = run.results
    assert not result.passed
    assert any("FedEx" in reason for reason in result.reasons)
