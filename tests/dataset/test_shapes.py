"""Issue 13 item 2: every design document's case shape loads as-is (the case editor's
``prompt``/``judge_prompt``/``judge_threshold`` with multi-turn judge prompts, and the
regression alerts' ``EvalCase``), JSON or YAML; ``category`` reaches the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.traces import make_trace, tool
from tracegrade.config import defaults
from tracegrade.dataset import load_dataset
from tracegrade.errors import DatasetError
from tracegrade.scoring import build_scorers, evaluate

SHAPES = Path(__file__).parents[1] / "data" / "design-shapes"


def test_13_2_the_case_editor_shape_loads_as_is():
    recent, status, multi = load_dataset(SHAPES / "case_editor.yaml").cases
    assert recent.name == "Recent orders" and recent.input == "Show me my recent orders"
    assert (
        recent.judge.rubric.startswith("Lists the user's orders") and recent.judge.threshold == 0.8
    )
    assert status.judge.threshold == 0.7  # the default when the document gives none


def test_13_2_a_multi_turn_case_editor_case_keeps_each_turns_judge_prompt():
    multi = load_dataset(SHAPES / "case_editor.yaml").cases[2]
    assert multi.turns == [
        "I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004",
        "It has a defective screen",
    ]
    assert multi.input == multi.turns[0]
    rubric = multi.judge.rubric.splitlines()
    assert rubric[0].startswith("After turn 1 (") and rubric[0].endswith("before promising one.")
    assert rubric[1].endswith("Starts the return and tells the user what happens next.")
    assert multi.judge.threshold == 0.75  # the strictest turn's


@pytest.mark.parametrize("name", ["regression_alerts.json", "regression_alerts.yaml"])
def test_13_2_the_regression_alert_eval_case_loads_as_is(name):
    orders, returns = load_dataset(SHAPES / name).cases
    assert (orders.id, orders.name, orders.category) == (
        "orders-recent",
        "Recent orders",
        "order-management",
    )
    assert orders.input == "Show me my recent orders" and orders.turns is None
    assert orders.must_contain == ["order"] and orders.must_not_contain == ["I cannot access"]
    assert orders.expected_tools == ["get_user_orders"] and orders.max_latency_ms == 15000
    assert orders.tags == ["orders", "smoke"] and orders.weight == 2
    assert returns.turns == [  # the user's messages; system and assistant ones are context
        "I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004",
        "It has a defective screen",
    ]


def test_13_2_an_unknown_expected_output_key_is_named_with_a_suggestion(tmp_path):
    case = json.loads((SHAPES / "regression_alerts.json").read_text())[0]
    case["expectedOutput"]["mustContian"] = ["x"]
    path = tmp_path / "alerts.json"
    path.write_text(json.dumps([case], indent=2))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    line = next(
        n for n, text in enumerate(path.read_text().splitlines(), 1) if "mustContian" in text
    )
    assert str(info.value) == (
        f"{path}:{line}: case 1 (id 'orders-recent'): field 'expectedOutput.mustContian': "
        "unknown field; did you mean 'mustContain'?"
    )


def test_13_2_category_is_on_every_result_and_summarised():
    dataset = load_dataset(SHAPES / "regression_alerts.json")
    trace = make_trace(
        trace_id="t1",
        user_inputs=["Show me my recent orders"],
        tool_calls=[tool("get_user_orders", {}, result='[{"order_id": 1}]')],
        final_output="You have one order.",
    )
    config = defaults()
    result = evaluate([trace], dataset, build_scorers(config, with_plugins=False), config)
    by_id = {r.case_id: r for r in result.results}
    assert by_id["orders-recent"].category == "order-management" and by_id["orders-recent"].passed
    assert by_id["return-laptop"].category == "returns"  # unmatched, still categorised
    assert result.summary.categories == {
        "order-management": {"results": 1, "passed": 1, "pass_rate": 1.0, "score": 1.0},
        "returns": {
            "results": 1,
            "passed": 0,
            "pass_rate": 0.0,
            "score": 0.0,
        },  # unmatched: counts 0 (issue 24),
    }


def test_13_2_a_misspelt_case_editor_key_gets_a_suggestion(tmp_path):
    path = tmp_path / "editor.yaml"
    path.write_text("- name: x\n  prompt: hi\n  judge_promt: Polite\n")
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert str(info.value) == (
        f"{path}:3: case 1: field 'judge_promt': unknown field; did you mean 'judge_prompt'?"
    )


def test_the_case_editors_agent_revival_shape_loads_as_is():
    laptop, third = load_dataset(SHAPES / "agent_revival.yaml").cases
    assert laptop.turns == [
        "I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004",
        "It has a defective screen",
    ]  # "rounds" are the turns
    assert laptop.revive is True and laptop.revived_turns == (2,)
    assert laptop.judge.rubric.splitlines()[1].startswith("After turn 2 (")
    assert third.revive == [3] and third.revived_turns == (3,)  # a turn object's revive


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ({"input": "hi", "revive": True}, "'revive' needs 'turns' with at least two"),
        ({"turns": ["a", "b"], "revive": [1]}, "'revive' lists turn(s) [1]: give true, or"),
        ({"turns": ["a", "b"], "revive": [3]}, "turn numbers from 2 to 2"),
        (
            {"turns": ["a", "b"], "revive": "x"},
            "field 'revive': Value error, expected true, false or a list of turn numbers",
        ),
    ],
)
def test_a_revival_that_cannot_happen_is_a_dataset_error(tmp_path, case, message):
    path = tmp_path / "d.json"
    path.write_text(json.dumps([case]))
    with pytest.raises(DatasetError) as info:
        load_dataset(path)
    assert message in str(info.value)
