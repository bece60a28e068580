"""``dataset build --simulated-user``: a recorded conversation becomes a case with a simulated
user (the opening, a goal to restate, the facts the user gave, max_turns), its personal data
redacted, marked for review, and loadable as it is."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from click.testing import CliRunner

from tests.curate.conftest import turn
from tracegrade.cli import cli
from tracegrade.curate.simulated import REVIEW_GOAL, user_facts
from tracegrade.dataset import load_dataset
from tracegrade.store.traces import Store


def test_user_facts_are_the_values_given_named_by_kind():
    facts = user_facts(["A lamp for $49.99 on 2026-11-02", "Order ORD-55, not ORD-55 again"])
    assert facts == {"price_1": "$49.99", "date_1": "2026-11-02", "id_1": "ORD-55"}


TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def test_the_facts_hold_every_id_a_real_user_gave():
    """On the 100 tau-bench airline conversations (datasets/tau-bench, MIT): every user id
    and every reservation id of a gold action that the (simulated) customer said is a fact of
    the case built from the conversation, so a simulated user replaying it can give them."""
    said: dict[str, int] = {"user_id": 0, "reservation_id": 0}
    kept = dict(said)
    for record in json.loads(TAU.read_text(encoding="utf-8")):
        users = [m["content"] for m in record["traj"] if m["role"] == "user"]
        values = set(user_facts(users).values())
        task = record["info"]["task"]
        ids = {("user_id", task["user_id"])} | {
            ("reservation_id", a["kwargs"]["reservation_id"])
            for a in task["actions"]
            if "reservation_id" in a["kwargs"]
        }
        for kind, value in ids:
            if any(value in text for text in users):
                said[kind] += 1
                kept[kind] += value in values
    assert said == {"user_id": 80, "reservation_id": 54}
    assert kept == said


def test_a_recorded_conversation_becomes_a_simulated_user_to_review(tmp_path: Path):
    db = str(tmp_path / "s.db")
    conversation = {"gen_ai.conversation.id": "conv-42"}
    first = "I want to return my lamp, it cost $49.99"
    with Store(db) as store:
        store.write(
            [
                turn(first, "Which order? And your e-mail?", root=conversation),
                turn(
                    "Order ORD-55, I'm ann@example.org",
                    "Return opened for ORD-55.",
                    [("open_return", {"order_id": "ORD-55"}, '{"return": "ORD-55"}', None)],
                    root=conversation,
                    history=[("user", first), ("assistant", "Which order? And your e-mail?")],
                ),
            ]
        )
    out = tmp_path / "c.yaml"
    result = CliRunner().invoke(
        cli,
        [
            "dataset",
            "build",
            "--db",
            db,
            "--out",
            str(out),
            "--exact-args",
            "open_return",
            "--simulated-user",
        ],
    )
    assert result.exit_code == 0, result.output
    (case,) = yaml.safe_load(out.read_text())["cases"]
    assert list(case)[:3] == ["id", "input", "user"]
    assert case["input"] == first and "turns" not in case
    assert case["user"] == {
        "goal": REVIEW_GOAL + first,
        "facts": {"price_1": "$49.99", "id_1": "ORD-55"},
        "max_turns": 4,
    }
    assert case["expected_tool_calls"][0]["arguments"] == {"order_id": "ORD-55"}
    metadata = case["metadata"]
    assert metadata["recorded_turns"] == [first, "Order ORD-55, I'm [REDACTED:email:1]"]
    assert metadata["recorded_answer"] == "Return opened for ORD-55."
    assert metadata["review"] == "pending" and list(metadata)[-1] == "review"
    (loaded,) = load_dataset(out).cases
    assert loaded.user is not None and not loaded.user.scripted  # a model plays it until then
    assert loaded.user.facts["id_1"] == "ORD-55"


def test_personal_data_in_the_goal_and_facts_is_redacted(tmp_path: Path):
    from tracegrade.otlp.files import write_jsonl

    traces = tmp_path / "t.jsonl"
    write_jsonl(traces, [turn("I'm bo@example.net, refund order ORD-9", "Refunded ORD-9.")])
    out = tmp_path / "d.yaml"
    result = CliRunner().invoke(
        cli, ["dataset", "build", str(traces), "--out", str(out), "--simulated-user"]
    )
    assert result.exit_code == 0, result.output
    (case,) = yaml.safe_load(out.read_text())["cases"]
    assert case["input"] == "I'm [REDACTED:email:1], refund order ORD-9"
    assert case["user"]["goal"] == REVIEW_GOAL + "I'm [REDACTED:email:1], refund order ORD-9"
    assert case["user"]["facts"] == {"id_1": "ORD-9"}
    assert case["metadata"]["recorded_turns"] == ["I'm [REDACTED:email:1], refund order ORD-9"]
