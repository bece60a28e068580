"""The simulated user's conversation loop on a stand-in session (no agent, no receiver): how
a conversation ends (goal, give up, max_turns), revivals before simulated turns, facts asked
again (the scripted user's answer, the model's own word), the model's steps from the cache,
and the goal-reached rate over repeats with the flaky flag."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.dataset import Case
from tracegrade.judge.client import JudgeUsage
from tracegrade.judge.simulate import Step
from tracegrade.runner.agents import Attempt, Message, Session
from tracegrade.runner.conversation import Conversation, converse
from tracegrade.runner.simulation import Simulation, Simulators, goal_fields
from tracegrade.scoring.goals import GoalOutcome

ORDER = "550e8400-e29b-41d4-a716-446655440004"


@dataclass
class Scripted(Session):
    """Answers each turn with the next reply; counts revivals."""

    replies: list[str]
    sent: list[list[Message]] = field(default_factory=list)
    revived: int = 0

    async def send(self, messages: list[Message]) -> str:
        self.sent.append([dict(m) for m in messages])
        return self.replies.pop(0)

    async def revive(self) -> None:
        self.revived += 1


def _case(**user: Any) -> Case:
    fields = {
        "goal": "a refund",
        "facts": {"order_number": ORDER},
        "max_turns": 3,
        "replies": {"shall i": "Yes.", "order number": "It's {order_number}."},
        "stop_when": "refund is confirmed",
        **user,
    }
    return Case.model_validate({"id": "c", "input": "I want a refund.", "user": fields})


def _play(
    case: Case, replies: list[str], simulators: Simulators | None = None
) -> tuple[Simulation, Scripted]:
    session = Scripted(list(replies))
    simulation = Simulation(case, Attempt("run", "c", 1), simulators or Simulators(), None)
    asyncio.run(converse(session, case, None, Conversation(), simulation.play))
    return simulation, session


def test_the_goal_ends_the_conversation():
    simulation, session = _play(
        _case(), ["Which order number?", "Shall I refund it?", "Your refund is confirmed."]
    )
    assert simulation.outcome is not None and simulation.outcome.reached
    assert simulation.outcome.turns == 3 and len(session.sent) == 3
    assert [s.sent for s in simulation.steps] == [True, True, False]


def test_a_reply_the_script_cannot_answer_gives_up():
    simulation, _ = _play(_case(), ["What's the weather?"])
    assert simulation.outcome is not None and simulation.outcome.ended_by == "gave_up"
    assert "no scripted reply fits the agent's message" in simulation.outcome.reason


def test_max_turns_ends_it_and_the_last_reply_is_still_judged():
    simulation, session = _play(
        _case(max_turns=2), ["Which order number?", "Which order number again?"]
    )
    outcome = simulation.outcome
    assert outcome is not None and outcome.ended_by == "max_turns" and outcome.turns == 2
    assert [a.fact for a in outcome.asked_again] == ["order_number"]
    assert (outcome.asked_again[0].given_at, outcome.asked_again[0].asked_at) == (2, 2)
    assert len(session.sent) == 2


def test_a_revival_comes_before_the_simulated_turn_and_sends_from_there():
    case = _case().model_copy(update={"revive": [2]})
    simulation, session = _play(
        case, ["Which order number?", "Shall I?", "Your refund is confirmed."]
    )
    assert session.revived == 1
    assert session.sent[1] == [{"role": "user", "content": f"It's {ORDER}."}]  # only the new turn
    assert simulation.outcome is not None and simulation.outcome.reached


def test_the_simulated_user_goes_on_after_the_scripted_turns_which_count_in_max_turns():
    case = Case.model_validate(
        {
            "id": "c",
            "turns": ["Hello.", "I want a refund for my laptop."],
            "user": {
                "goal": "a refund",
                "facts": {"order_number": ORDER},
                "max_turns": 3,
                "replies": {"order number": "It's {order_number}."},
                "stop_when": "refund is confirmed",
            },
        }
    )
    replies = ["Hi! How can I help?", "Which order number?", "Which order number, please?"]
    simulation, session = _play(case, replies)
    sent = [turn[-1]["content"] for turn in session.sent]
    assert sent == ["Hello.", "I want a refund for my laptop.", f"It's {ORDER}."]
    outcome = simulation.outcome
    assert outcome is not None and outcome.ended_by == "max_turns" and outcome.turns == 3
    # the scripted turns are not the simulated user's: its first step judges turn 2's reply
    assert [(s.turn, s.sent) for s in simulation.steps] == [(2, True), (3, False)]
    assert [(a.fact, a.given_at, a.asked_at) for a in outcome.asked_again] == [
        ("order_number", 3, 3)
    ]


@dataclass
class Model:
    """Stands in for the judge client: the next step each call."""

    steps: list[Step]
    calls: int = 0

    def ask(self, messages: Sequence[Any], output: Any, schema: Any, **_: Any):
        self.calls += 1
        return self.steps.pop(0), JudgeUsage(1, 10, 5, 0.001)


def _step(message: str | None, **verdict: Any) -> Step:
    fields = {"reasoning": "r", "goal_reached": False, "give_up": False, **verdict}
    return Step(message=message, **fields)


def test_the_model_opens_names_facts_asked_again_and_is_cached_by_prompt():
    case = Case.model_validate(
        {"id": "c", "user": {"goal": "a refund", "facts": {"order_number": ORDER}}}
    )
    model = Model(
        [
            _step("I want a refund."),
            _step("I gave it already.", asked_for_given_facts=["order_number", "unknown"]),
            _step(None, give_up=True),
        ]
    )
    simulators = Simulators("llm", client=model)  # type: ignore[arg-type]
    replies = [f"Sure, order {ORDER}?", "Which order number?"]
    simulation, session = _play(case, replies, simulators)
    assert session.sent[0] == [{"role": "user", "content": "I want a refund."}]
    outcome = simulation.outcome
    assert outcome is not None and outcome.ended_by == "gave_up"
    # the model said the agent asked again, but no user message had given the order number
    assert outcome.asked_again == ()
    assert simulators.usage.calls == 3 and simulation.usage.cost_usd == 0.003
    again = Model([])
    simulators_again = Simulators("llm", client=again)  # type: ignore[arg-type]
    simulators_again.memory = simulators.memory  # the same cache
    simulation_again, _ = _play(case, replies, simulators_again)
    assert again.calls == 0 and simulation_again.usage.cached == 3
    assert simulation_again.outcome == outcome


@dataclass(frozen=True)
class _Attempt:
    simulation: Simulation | None


def _attempt(reached: bool, turns: int) -> _Attempt:
    simulation = Simulation(_case(), Attempt("r", "c", 1), Simulators())
    simulation.outcome = GoalOutcome(reached, "goal" if reached else "max_turns", turns, 3, "x")
    return _Attempt(simulation)


def test_repeats_that_disagree_on_the_goal_are_flagged():
    goal = goal_fields([_attempt(True, 3), _attempt(False, 3), _attempt(True, 2)])["goal"]
    assert (goal["reached"], goal["conversations"], goal["flaky"]) == (2, 3, True)
    assert goal["turns"] == [3, 3, 2] and goal["low"] < goal["rate"] < goal["high"]
    assert goal_fields([_attempt(True, 3)] * 2)["goal"]["flaky"] is False
    assert goal_fields([_Attempt(None)]) == {}
