"""``context_preserved``: after an agent revival, the revived turn's first LLM call carries the
earlier turns, or the agent's memory spans show them loaded. Traces go through the real
normaliser (GenAI semconv spans built with explicit ids and times)."""

from __future__ import annotations

import json

from tests.support.spanfactory import TraceBuilder
from tests.support.traces import make_case
from tracegrade.config import defaults
from tracegrade.scoring import build_scorers
from tracegrade.scoring.context import ContextPreserved
from tracegrade.scoring.evaluation import score_trace
from tracegrade.trace import AgentTrace

SYSTEM = {"role": "system", "content": "You are the shop assistant."}
TURNS = ["I'm looking for running shoes under $150", "Is the first one in stock?"]
U1, U2 = ({"role": "user", "content": t} for t in TURNS)
A1 = {"role": "assistant", "content": "The Nike Pegasus 41 at $129.99."}
CASE = make_case(turns=TURNS, revive=True)


class Shop:
    """A conversation recorded as one agent span per turn under a case span."""

    def __init__(self) -> None:
        self.builder = TraceBuilder()
        self.root = self.builder.add("tracegrade case shoes", duration_ms=100)
        self.clock = 0.0

    def turn(self, *messages: dict, load: str | None = None, content: bool = True) -> None:
        agent = self.builder.add(
            "invoke_agent shop",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
            parent=self.root,
            start_ms=self.clock,
            duration_ms=9,
        )
        if load is not None:  # the agent's own memory span: its thread loaded from its store
            self.builder.add(
                "execute_tool load_thread",
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": "load_thread",
                    "gen_ai.tool.call.result": load,
                },
                parent=agent,
                start_ms=self.clock + 1,
            )
        attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
        if content:
            attributes["gen_ai.input.messages"] = json.dumps(list(messages))
            attributes["gen_ai.output.messages"] = json.dumps([A1])
        self.builder.add("chat gpt-4o", attributes, parent=agent, start_ms=self.clock + 2)
        self.clock += 10

    def trace(self) -> AgentTrace:
        return self.builder.normalize()


def _scored(shop: Shop, case=CASE):
    return ContextPreserved()(shop.trace(), case)


def test_a_revived_turn_that_replays_the_earlier_turns_kept_its_context():
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U1, A1, U2)
    score = _scored(shop)
    assert (score.value, score.hard_failures) == (1.0, ())
    assert score.reason == "1 revived turn(s) kept the earlier turns"


def test_a_revived_turn_that_lost_the_earlier_turns_fails_naming_them():
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U2)
    score = _scored(shop)
    assert score.value == 0.0
    assert score.hard_failures == (
        "context lost after the agent was revived before turn 2 ('Is the first one in "
        "stock?'): its first LLM call lacked \"I'm looking for running shoes under $150\"",
    )
    assert score.details["lost"] == [{"turn": 2, "message": TURNS[1], "missing": [TURNS[0]]}]


def test_a_memory_span_that_loaded_the_earlier_turns_counts():
    thread = json.dumps({"thread": [U1, A1]})  # a JSON result: its strings are searched
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U2, load=thread)  # summarised into the prompt, not replayed as messages
    score = _scored(shop)
    assert (score.value, score.hard_failures) == (1.0, ())
    assert score.details["loaded_by"] == {2: ["tool load_thread"]}


def test_a_memory_span_that_loaded_something_else_does_not_count():
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U2, load=json.dumps({"thread": []}))
    assert _scored(shop).value == 0.0


def test_a_clarification_sent_before_the_revival_is_an_earlier_message_too():
    answer = {"role": "user", "content": "Size 42 please"}
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U1, A1, answer)  # the runner's follow-up, same session
    shop.turn(SYSTEM, U1, A1, U2)  # revived: kept turn 1, lost the follow-up
    score = _scored(shop)
    assert score.details["lost"][0]["missing"] == ["Size 42 please"]


def test_only_the_revived_turns_are_checked():
    three = [*TURNS, "And the second one?"]
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U2)  # forgot, but not revived here
    shop.turn(SYSTEM, U2, A1, {"role": "user", "content": three[2]})
    assert (
        _scored(shop, make_case(turns=three, revive=[3]))
        .hard_failures[0]
        .startswith("context lost after the agent was revived before turn 3")
    )  # turn 1 is missing from turn 3's history
    assert _scored(shop, make_case(turns=three)).value is None


def test_without_message_content_the_scorer_cannot_tell():
    shop = Shop()
    shop.turn(SYSTEM, U1, content=False)
    shop.turn(SYSTEM, U2, content=False)
    score = _scored(shop)
    assert score.value is None and score.reason.startswith("cannot tell: ")


def test_a_revived_turn_no_llm_call_was_given_cannot_be_told():
    shop = Shop()
    shop.turn(SYSTEM, U1)
    score = _scored(shop)
    assert score.value is None
    assert (
        score.reason == "cannot tell: no LLM call was given turn 2 ('Is the first one in stock?')"
    )


def test_a_lost_context_fails_the_case_whatever_its_score():
    shop = Shop()
    shop.turn(SYSTEM, U1)
    shop.turn(SYSTEM, U2)
    config = defaults()
    result = score_trace(
        shop.trace(), CASE, build_scorers(config, with_plugins=False), config, config.weights, 0.7
    )
    assert not result.passed
    assert result.hard_failures[0].startswith("context lost after the agent was revived")


def test_a_trace_holding_only_the_revived_turn_is_held_to_the_cases_earlier_turns():
    # tracegrade score matches each session's trace on its own: the second one must still
    # show turn 1 in its history
    forgot, kept = Shop(), Shop()
    forgot.turn(SYSTEM, U2)
    kept.turn(SYSTEM, U1, A1, U2)
    assert _scored(forgot).details["lost"] == [
        {"turn": 2, "message": TURNS[1], "missing": [TURNS[0]]}
    ]
    assert _scored(kept).value == 1.0
