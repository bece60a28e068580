"""A simulated user's verdict on its conversation, as scores beside the trace's.

``tracegrade run`` lets a simulated user (:mod:`tracegrade.dataset.simulated`) talk to the
agent; its traces are scored as any multi-turn case, and what the simulator saw adds:

- ``goal_reached``: 1.0 when the simulated user said the goal was met (the scripted user's
  ``stop_when``, the LLM user's verdict), else 0.0 and a hard failure saying how the
  conversation ended (``gave_up``, ``max_turns``, ``error``), after how many turns, and why;
- ``facts_remembered``: 1.0 when the agent never asked for a fact the user had already given,
  else 0.0 naming each fact, the turn that gave it and the turn the agent asked again
  (a score, not a failure: weight it to make it count);
- ``goal_judge``, when a judge model is configured: the judge's verdict on the goal, from the
  trace (:func:`goal_rubric`), a hard failure below its threshold.

The runner records the simulator's side (:class:`GoalOutcome`); these functions are pure.
:func:`reached_rate` is the goal-reached rate of a case's repeats, or of a run, with its
interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from tracegrade._util.extras import available, import_extra
from tracegrade.dataset.simulated import SimulatedUser
from tracegrade.scoring.score import Score

GOAL_REACHED = "goal_reached"
FACTS_REMEMBERED = "facts_remembered"
GOAL_JUDGE = "goal_judge"
SIMULATION_SCORES = (GOAL_REACHED, FACTS_REMEMBERED, GOAL_JUDGE)
"""The score names a simulated conversation adds (reported beside the weighted axes)."""

EndedBy = Literal["goal", "gave_up", "max_turns", "error"]


@dataclass(frozen=True)
class AskedAgain:
    """The agent asked at ``asked_at`` (a user turn, 1-based: the user's answer would have
    been that turn's message) for ``fact``, which turn ``given_at`` already gave."""

    fact: str
    given_at: int
    asked_at: int


@dataclass(frozen=True)
class GoalOutcome:
    """How a simulated conversation ended: ``turns`` user messages sent (at most
    ``max_turns``), whether the goal was reached, what ended it, the simulator's reason,
    the facts the agent asked for again, and who played the user (``scripted`` or
    ``llm:MODEL``)."""

    reached: bool
    ended_by: EndedBy
    turns: int
    max_turns: int
    reason: str
    asked_again: tuple[AskedAgain, ...] = ()
    simulator: str = "scripted"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: every field, ``asked_again`` as a list of objects."""
        data = asdict(self)
        data["asked_again"] = [asdict(a) for a in self.asked_again]
        return data


_ENDINGS = {
    "gave_up": "the simulated user gave up",
    "max_turns": "max_turns reached",
    "error": "the simulated user failed",
}


def goal_score(outcome: GoalOutcome) -> Score:
    """``goal_reached`` (see the module docstring)."""
    details = outcome.to_dict()
    used = f"{outcome.turns}/{outcome.max_turns} turn(s)"
    if outcome.reached:
        return Score(GOAL_REACHED, 1.0, f"goal reached in {used}: {outcome.reason}", (), details)
    why = f"goal not reached ({_ENDINGS[outcome.ended_by]} after {used}): {outcome.reason}"
    return Score(GOAL_REACHED, 0.0, why, (why,), details)


def facts_score(outcome: GoalOutcome) -> Score:
    """``facts_remembered`` (see the module docstring)."""
    if not outcome.asked_again:
        return Score(FACTS_REMEMBERED, 1.0, "the agent never asked for a fact already given")
    said = "; ".join(
        f"{a.fact} (given at turn {a.given_at}, asked again at turn {a.asked_at})"
        for a in outcome.asked_again
    )
    details = {"asked_again": [asdict(a) for a in outcome.asked_again]}
    return Score(FACTS_REMEMBERED, 0.0, f"the agent asked again for {said}", (), details)


def simulation_scores(outcome: GoalOutcome) -> tuple[Score, ...]:
    """``goal_reached`` and ``facts_remembered`` of one simulated conversation."""
    return goal_score(outcome), facts_score(outcome)


def goal_rubric(user: SimulatedUser) -> str:
    """The judge's rubric for a simulated user's goal."""
    facts = ", ".join(f"{name} = {value}" for name, value in user.facts.items())
    return (
        f"The user's goal: {user.goal}. The conversation succeeds when: {user.stop_condition}."
        + (f" Facts the user gave when asked: {facts}." if facts else "")
        + " Score 1.0 when, by its final answer, the agent met the goal through what it did "
        "(tool calls and their results) and said; 0.5 when it met part of it; 0.0 when it did "
        "not, or only claimed to without a tool call doing it."
    )


CONFIDENCE = 0.95
"""The confidence of the goal-reached rate's interval."""


def reached_rate(reached: Sequence[bool]) -> dict[str, Any]:
    """The goal-reached rate of ``reached`` (one verdict per simulated conversation) with its
    Wilson score interval at :data:`CONFIDENCE` (:meth:`scipy.stats.binomtest`'s
    ``proportion_ci``, with the ``[stats]`` extra; without it the bounds are None):
    ``{"reached", "conversations", "rate", "low", "high"}``, rate and bounds None without a
    conversation."""
    count, hits = len(reached), sum(bool(r) for r in reached)
    out: dict[str, Any] = {
        "reached": hits,
        "conversations": count,
        "rate": round(hits / count, 4) if count else None,
        "low": None,
        "high": None,
    }
    if count and available("scipy"):
        stats = import_extra("scipy.stats", "the goal-reached rate's interval")  # 1 s: on need
        interval = stats.binomtest(hits, count).proportion_ci(
            confidence_level=CONFIDENCE, method="wilson"
        )
        out.update(low=round(float(interval.low), 4), high=round(float(interval.high), 4))
    return out
