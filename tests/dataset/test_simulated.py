"""A case's simulated user: its fields, the scripted user's replies, facts given, and located
errors (file, line, field) for every bad field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracegrade.dataset import Case, load_dataset
from tracegrade.dataset.simulated import SimulatedUser, given_at
from tracegrade.errors import DatasetError

ORDER = "550e8400-e29b-41d4-a716-446655440004"


def _user(**fields) -> SimulatedUser:
    return SimulatedUser.model_validate({"goal": "a refund", **fields})


def test_a_case_may_be_a_simulated_user_alone():
    case = Case.model_validate({"id": "x", "user": {"goal": "a refund"}})
    assert case.input is None and case.user is not None
    assert case.user.max_turns == 8 and case.user.stop_condition == "a refund"
    assert case.turn_count == 8


def test_revivals_reach_up_to_max_turns():
    case = Case.model_validate(
        {"input": "hi", "revive": True, "user": {"goal": "a refund", "max_turns": 3}}
    )
    assert case.revived_turns == (2, 3)


def test_the_scripted_user_answers_the_first_matching_pattern_with_its_facts():
    user = _user(
        facts={"order_number": ORDER},
        replies={"shall i": "Yes.", "order (number|id)": "It's order {order_number}."},
        stop_when="refund is confirmed",
    )
    assert user.scripted
    assert user.reply_to("What is the ORDER NUMBER?") == f"It's order {ORDER}."
    assert user.reply_to("Shall I refund order id 4?") == "Yes."  # the first pattern wins
    assert user.reply_to("Anything else?") is None
    assert user.meets_goal("Your Refund is confirmed.")
    assert not user.meets_goal("Shall I?")


def test_a_fact_is_given_by_the_first_user_message_holding_its_value():
    user = _user(facts={"order_number": ORDER, "budget": 300})
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": f"Is it {ORDER}?"},  # the agent's words give nothing
        {"role": "user", "content": f"It's  {ORDER.upper()}, budget 300"},
        {"role": "user", "content": f"again {ORDER}"},
    ]
    assert given_at(user, messages) == {"order_number": 2, "budget": 2}


def _errors(tmp_path: Path, text: str) -> list[str]:
    path = tmp_path / "users.yaml"
    path.write_text(text)
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    return str(caught.value).replace(str(path), "F").splitlines()


def test_bad_simulated_user_fields_name_the_file_line_and_field(tmp_path: Path):
    errors = _errors(
        tmp_path,
        """\
cases:
  - id: a
    input: hi
    user:
      goal: a refund
      facts: {order-number: 1}
      max_turns: 0
      stop_when: "("
  - id: b
    input: hi
    user:
      goal: a refund
      replies: {"order": "It's {order_id}"}
      stop_when: done
  - id: c
    input: hi
    user:
      goal: a refund
      replies: {"x": "y"}
  - id: d
    input: hi
    user: {goal: a refund, mood: grumpy}
  - id: e
    input: hi
    user: {goal: ""}
""",
    )
    assert errors[0].startswith("F:6: case 1 (id 'a'): field 'user.facts': ")
    assert "fact names ['order-number'] must be identifiers" in errors[0]
    assert errors[1] == (
        "F:7: case 1 (id 'a'): field 'user.max_turns': Input should be greater than or equal to 1"
    )
    assert errors[2].startswith("F:8: case 1 (id 'a'): field 'user.stop_when': ")
    assert "stop_when '(' is not a valid regular expression" in errors[2]
    assert errors[3].startswith("F:13: case 2 (id 'b'): field 'user.replies': ")
    assert "the reply to 'order' names ['order_id'], not among the facts []" in errors[3]
    assert errors[4].startswith("F:18: case 3 (id 'c'): field 'user.stop_when': ")
    assert "a scripted user (replies) needs stop_when" in errors[4]
    assert errors[5] == "F:22: case 4 (id 'd'): field 'user.mood': unknown field"
    assert errors[6].startswith("F:25: case 5 (id 'e'): field 'user.goal': ")


def test_a_simulated_user_and_the_rest_of_the_case_must_agree(tmp_path: Path):
    errors = _errors(
        tmp_path,
        """\
- id: short
  turns: [one, two, three]
  user: {goal: a refund, max_turns: 2}
- id: both
  input: hi
  user: {goal: a refund}
  clarifications: {which: that one}
- id: late
  input: hi
  revive: [9]
  user: {goal: a refund, max_turns: 4}
""",
    )
    assert errors[0].startswith("F:3: case 1 (id 'short'): field 'user': ")
    assert "max_turns 2 is below the case's 3 scripted turn(s)" in errors[0]
    assert errors[1].startswith("F:7: case 2 (id 'both'): field 'clarifications': ")
    assert "give scripted answers as user.replies, not clarifications" in errors[1]
    assert "'revive' lists turn(s) [9]: give true, or turn numbers from 2 to 4" in errors[2]


def test_the_shipped_simulated_dataset_loads():
    dataset = load_dataset(Path(__file__).parents[2] / "datasets" / "ecommerce" / "simulated.yaml")
    assert [c.id for c in dataset.cases] == [
        "refund-laptop-simulated",
        "refund-laptop-simulated-revived",
    ]
    assert all(c.user is not None and c.user.scripted for c in dataset.cases)
