"""Clarification follow-ups: the judge model decides whether the agent asked a clarifying
question and writes the user's reply from the case input."""

from __future__ import annotations

import pytest

from tests.judge.conftest import fenced, settings_for
from tests.support.openai_server import json_reply, text
from tracegrade.judge.clarify import Clarifier
from tracegrade.judge.client import JudgeError

CASE_INPUT = "Cancel my order 550e8400-e29b-41d4-a716-446655440003, I found a better deal elsewhere"
CONVERSATION = [{"role": "user", "content": "Please cancel my last order"}]


def test_a_clarifying_question_gets_a_user_reply(judge_server):
    server = judge_server(
        [
            json_reply(
                {
                    "reasoning": "asks which order",
                    "is_clarifying_question": True,
                    "user_reply": " It's order 550e8400-e29b-41d4-a716-446655440003. ",
                }
            )
        ]
    )
    clarifier = Clarifier(settings_for(server))
    reply = clarifier.follow_up(CASE_INPUT, CONVERSATION, "Which order would you like to cancel?")
    assert reply == "It's order 550e8400-e29b-41d4-a716-446655440003."
    prompt = server.requests[0]["messages"][1]["content"]
    exchange = fenced(prompt, "exchange")
    assert exchange["case_input"] == CASE_INPUT
    assert exchange["conversation_so_far"][0]["content"].startswith("Please cancel my last order")
    assert exchange["agent_latest_reply"] == "Which order would you like to cancel?"
    assert server.requests[0]["response_format"]["json_schema"]["name"] == "clarification"
    assert clarifier.usage.calls == 1 and clarifier.usage.input_tokens == 25


def test_an_answer_gets_none(judge_server):
    server = judge_server(
        [
            json_reply(
                {
                    "reasoning": "reports the cancellation",
                    "is_clarifying_question": False,
                    "user_reply": None,
                }
            )
        ]
    )
    assert (
        Clarifier(settings_for(server)).follow_up(
            CASE_INPUT, CONVERSATION, "Order cancelled; refund $20."
        )
        is None
    )


def test_a_question_without_a_reply_is_invalid_and_asked_again(judge_server):
    server = judge_server(
        [
            json_reply({"reasoning": "r", "is_clarifying_question": True, "user_reply": ""}),
            json_reply({"reasoning": "r", "is_clarifying_question": True, "user_reply": "Yes."}),
        ]
    )
    assert Clarifier(settings_for(server)).follow_up(CASE_INPUT, [], "Shall I go ahead?") == "Yes."
    assert "user_reply must be a non-empty string" in server.requests[1]["messages"][-1]["content"]


def test_no_valid_decision_raises_judge_error_and_keeps_the_usage(judge_server):
    server = judge_server(lambda body: text("maybe"))
    clarifier = Clarifier(settings_for(server, attempts=2))
    with pytest.raises(JudgeError, match="no valid answer"):
        clarifier.follow_up(CASE_INPUT, [], "Hmm?")
    assert clarifier.usage.calls == 2


def test_long_conversations_keep_the_latest_turns(judge_server):
    server = judge_server(
        [json_reply({"reasoning": "r", "is_clarifying_question": False, "user_reply": None})]
    )
    conversation = [{"role": "user", "content": f"turn {i} " + "x" * 2000} for i in range(20)]
    Clarifier(settings_for(server)).follow_up(CASE_INPUT, conversation, "Done.")
    prompt = server.requests[0]["messages"][1]["content"]
    shown = fenced(prompt, "exchange")["conversation_so_far"]
    assert "earlier message(s) cut" in shown[0]["content"]
    assert shown[-1]["content"].startswith("turn 19") and "turn 0 " not in prompt
