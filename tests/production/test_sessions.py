"""Whole conversations (issue 36), on SQLite and the real PostgreSQL server: with
``--sessions`` a three-turn conversation (by its ``gen_ai.conversation.id``, or by history
continuity without one) is scored as one once quiet, beside its three per-trace results:
``context_preserved`` over every turn, the judge's conversation rubric (a scripted judge
model, asked once with every turn), the reference-free rules over all turns. A fourth turn
makes it score again, as the next version of the same result: with the id, the fourth turn's
agent lost the earlier turns, and the conversation fails."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.judge_replies import verdict
from tests.support.openai_server import ScriptedOpenAI, json_reply
from tests.support.sdk import trace_request
from tracegrade.cli.follow import line, summary
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.follow import make_follower
from tracegrade.pipeline.judging import JudgeOptions
from tracegrade.report.evaluation_signals import RunContext, evaluation_records
from tracegrade.store import sessions
from tracegrade.store.traces import Store

TURNS = ["I need running shoes", "Size 42 please", "In blue", "Ship it to my office"]
ANSWERS = ["Which size?", "Which colour?", "Blue runners it is. Shall I order them?", "Done."]


def _turn(number: int, conversation_id: str | None, keeps_context: bool = True) -> Any:
    """Turn ``number`` (0-based) as its own trace: an agent span (with the conversation id,
    when given) and the LLM call, given the earlier turns when the agent kept them."""
    earlier: list[dict[str, Any]] = []
    for question, answer in zip(TURNS[:number], ANSWERS[:number], strict=True):
        earlier += [
            {"role": "user", "parts": [{"type": "text", "content": question}]},
            {"role": "assistant", "parts": [{"type": "text", "content": answer}]},
        ]
    given = [*(earlier if keeps_context else []), _user(TURNS[number])]
    agent = {"gen_ai.operation.name": "invoke_agent"}
    if conversation_id:
        agent["gen_ai.conversation.id"] = conversation_id

    def build(tracer: Any) -> None:
        with tracer.start_as_current_span("invoke_agent shop", attributes=agent):
            attributes = {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(given),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": ANSWERS[number]}]}]
                ),
            }
            with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
                pass

    return trace_request(build, {"service.name": "shop"})


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


@pytest.fixture
def judge(monkeypatch):
    with ScriptedOpenAI(lambda body: json_reply(verdict(0.8, "kept the thread"))) as server:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test-key")
        yield server


def _follower(db: str, tmp_path: Path):
    config = tmp_path / "tracegrade.yaml"
    config.write_text("sessions:\n  rubric: conversation\n")
    options = ScoreOptions(db=db, config=str(config), judge=JudgeOptions(concurrency=1))
    follower, _ = make_follower(options, quiet_s=0.0, window=None, lease_s=60, session_quiet_s=0.0)
    follower.since = 0.0
    return follower


@pytest.mark.parametrize("by", ["conversation id", "history"])
def test_a_conversation_is_scored_whole_and_again_when_a_turn_arrives(
    store_location, tmp_path, judge, by
):
    conversation = "conv-1" if by == "conversation id" else None
    follower = _follower(store_location, tmp_path)
    with Store(store_location) as store:
        turns = [_turn(number, conversation) for number in range(3)]
        for turn in turns:
            store.write([turn])
        opened = turns[0].resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
        first = follower.poll(store)
        traces = [r for r, _ in first if "tracegrade.session" not in r.metadata]
        [(whole, updated)] = [(r, u) for r, u in first if "tracegrade.session" in r.metadata]
        key = whole.metadata["tracegrade.session"]
        assert len(traces) == 3 and not updated  # three turns, one conversation
        assert key == ("id:conv-1" if conversation else f"trace:{opened}")
        assert whole.passed and whole.metadata["turns"] == 3
        assert whole.scores["context_preserved"] == 1.0
        assert whole.scores["judge"] == 0.8 and whole.scores["production_rules"] is not None
        assert line(whole).startswith("SESSION PASS") and f"{key} turns=3" in line(whole)
        [asked] = judge.requests  # once, with every turn
        prompt = json.dumps(asked["messages"])
        assert all(turn in prompt for turn in TURNS[:3]) and "whole conversation" in prompt

        store.write([_turn(3, conversation, keeps_context=conversation is None)])
        second = follower.poll(store)
        [(again, updated)] = [(r, u) for r, u in second if "tracegrade.session" in r.metadata]
        assert updated and again.metadata["turns"] == 4 and again.metadata["version"] == 2
        stored = [(v, passed, turns) for v, passed, _, turns in sessions.results(store.db, key)]
        assert len(judge.requests) == 2 and TURNS[3] in json.dumps(judge.requests[1]["messages"])
    if conversation:  # the fourth turn's agent lost the conversation: the whole one fails
        assert not again.passed and again.scores["context_preserved"] == pytest.approx(2 / 3)
        assert any("context lost at turn 4" in r for r in again.reasons)
        assert stored == [(1, True, 3), (2, False, 4)]
    else:  # it replayed the earlier turns: the same conversation, and it still holds
        assert again.passed and again.scores["context_preserved"] == 1.0
        assert stored == [(1, True, 3), (2, True, 4)]
    assert summary(follower, follower.passed).startswith(
        "4 traces scored, 0 failed, 1 conversations scored"
    )
    context = RunContext(evaluator=follower.session_identity)
    records = [
        evaluation_records(result, context, version=result.metadata["version"])[-1].attributes
        for result in (whole, again)
    ]
    assert {r["tracegrade.session"] for r in records} == {key}
    assert len({r["tracegrade.result.id"] for r in records}) == 1  # the same result, replaced
    assert [r["tracegrade.result.version"] for r in records] == [1, 2]
