"""Issue 10 item 10: conventions that replay the whole history on every LLM call report the
conversation's distinct user turns once each, in order.

Data: the real tau-bench Traceloop traces (datasets/tau-bench-otlp, derived from
sierra-research/tau-bench, MIT) re-recorded in OpenLLMetry's legacy flattened format by the
real OpenTelemetry SDK (see ``legacy_openllmetry``); the ground truth is the dataset's manifest.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tests.normalize.legacy_openllmetry import legacy_traces
from tracegrade.normalize import normalize_all
from tracegrade.normalize.assemble import merge_user_inputs
from tracegrade.normalize.messages import Message, Part
from tracegrade.trace import AgentTrace

MANIFEST = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "manifest.json.gz"
TASKS = json.loads(gzip.decompress(MANIFEST.read_bytes()))["variants"]["traceloop"]["tasks"]


@pytest.fixture(scope="module")
def traces() -> list[AgentTrace]:
    return normalize_all(legacy_traces())


def _task(trace: AgentTrace) -> dict:
    return TASKS[str(trace.root_attributes["tau.task_id"])]


def test_legacy_flattened_user_inputs_are_the_distinct_turns_in_order(traces):
    assert len(traces) == len(TASKS)
    for trace in traces:
        assert list(trace.user_inputs) == _task(trace)["user_messages"], trace.trace_id


def test_the_data_replays_long_histories_past_the_attribute_limit(traces):
    # the case that broke: later LLM spans lost their earliest prompt messages (the SDK drops
    # the oldest attribute at 128), so their histories no longer start with the first turn
    truncated = [t for t in traces if t.gap("attributes")]
    assert len(truncated) >= 5
    assert max(len(t.user_inputs) for t in truncated) >= 10


def test_legacy_flattened_tool_calls_and_final_answer_still_match(traces):
    for trace in traces:
        task = _task(trace)
        assert [(c.name, c.call_id, c.arguments) for c in trace.tool_calls] == [
            (c["name"], c["call_id"], c["arguments"]) for c in task["tool_calls"]
        ]
        assert trace.final_output == task["final_assistant_text"]


def _user(text: str, position: int | None = None) -> Message:
    return Message("user", [Part("text", content=text)], position=position)


def _system(text: str) -> Message:
    return Message("system", [Part("text", content=text)])


def test_a_replay_under_another_system_prompt_is_not_a_new_turn():
    first = [_user("hi")]
    handed_off = [_system("you are agent2"), _user("hi")]
    assert merge_user_inputs([first, handed_off]) == ["hi"]


def test_the_same_words_at_a_new_position_are_a_new_turn():
    turn1 = [_user("yes", 0)]
    turn2 = [
        _user("yes", 0),
        Message("assistant", [Part("text", content="sure?")]),
        _user("yes", 2),
    ]
    assert merge_user_inputs([turn1, turn2]) == ["yes", "yes"]


def test_a_history_that_lost_its_first_messages_adds_only_its_new_turns():
    full = [_user("a", 0), _user("b", 2)]
    truncated = [_user("b", 2), _user("c", 4)]
    assert merge_user_inputs([full, truncated]) == ["a", "b", "c"]
