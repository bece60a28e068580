"""A simulated user's verdict as scores: goal reached (a hard failure saying how and why
when not), facts remembered, the goal-reached rate with its Wilson interval, and
context_preserved on a simulated conversation that ended before its revived turn."""

from __future__ import annotations

import pytest

from tests.support.traces import make_case, make_trace
from tracegrade.dataset.simulated import SimulatedUser
from tracegrade.scoring.context import ContextPreserved
from tracegrade.scoring.goals import (
    AskedAgain,
    GoalOutcome,
    goal_rubric,
    reached_rate,
    simulation_scores,
)


def test_a_reached_goal_scores_one_with_the_turns_used():
    goal, facts = simulation_scores(GoalOutcome(True, "goal", 3, 5, "the refund is confirmed"))
    assert goal.value == 1.0 and not goal.hard_failures
    assert goal.reason == "goal reached in 3/5 turn(s): the refund is confirmed"
    assert goal.details["turns"] == 3 and goal.details["ended_by"] == "goal"
    assert facts.value == 1.0


@pytest.mark.parametrize(
    ("ended", "said"),
    [
        ("max_turns", "max_turns reached"),
        ("gave_up", "the simulated user gave up"),
        ("error", "the simulated user failed"),
    ],
)
def test_a_goal_not_reached_is_a_hard_failure_saying_how_it_ended(ended, said):
    goal, _ = simulation_scores(GoalOutcome(False, ended, 3, 3, "the agent asked again"))
    assert goal.value == 0.0
    assert goal.hard_failures == (
        f"goal not reached ({said} after 3/3 turn(s)): the agent asked again",
    )


def test_facts_asked_again_are_named_with_their_turns_but_fail_nothing():
    outcome = GoalOutcome(
        False, "max_turns", 3, 3, "x", (AskedAgain("order_number", 2, 3),), "llm:gpt-4o-mini"
    )
    _, facts = simulation_scores(outcome)
    assert facts.value == 0.0 and not facts.hard_failures
    assert facts.reason == (
        "the agent asked again for order_number (given at turn 2, asked again at turn 3)"
    )
    assert outcome.to_dict()["asked_again"] == [
        {"fact": "order_number", "given_at": 2, "asked_at": 3}
    ]


def test_the_goal_rate_has_a_wilson_interval():
    rate = reached_rate([True, True, False, True])
    assert (rate["reached"], rate["conversations"], rate["rate"]) == (3, 4, 0.75)
    assert rate["low"] == pytest.approx(0.3006, abs=1e-4)  # Wilson, 95%: (0.3006, 0.9544)
    assert rate["high"] == pytest.approx(0.9544, abs=1e-4)
    assert reached_rate([])["rate"] is None


def test_the_judges_rubric_states_the_goal_stop_and_facts():
    user = SimulatedUser(goal="A refund.", stop="The refund is confirmed.", facts={"order": "o-1"})
    rubric = goal_rubric(user)
    assert "The user's goal: A refund." in rubric
    assert "The conversation succeeds when: The refund is confirmed." in rubric
    assert "order = o-1" in rubric


def test_context_preserved_skips_a_revival_the_conversation_never_reached():
    case = make_case(
        turns=["I want a refund", "It's order o-1"],
        revive=[3],
        user={"goal": "a refund", "max_turns": 4},
    )
    score = ContextPreserved()(make_trace(), case)
    assert score.value is None
    assert "ended before a revived turn" in score.reason
