"""Clarification follow-ups: scripted ``clarifications`` first, a judge clarifier as fallback,
at most ``max_followups``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from tests.runner.conftest import run_cli, write_dataset
from tests.support.openai_server import Reply, ScriptedOpenAI, error, json_reply
from tracegrade.dataset import Case
from tracegrade.runner.agents import Session
from tracegrade.runner.conversation import (
    FollowUps,
    JudgeClarifications,
    ScriptedClarifications,
    converse,
)

SHOP = "tests.runner.shop_agent:answer"
VAGUE = {
    "id": "vague",
    "input": "I want headphones. What do they cost?",
    "expected_tools": ["get_price"],
}


def test_a_scripted_clarification_answers_the_agents_question(model, tmp_path: Path) -> None:
    path = write_dataset(
        tmp_path / "d.yaml",
        [
            {
                **VAGUE,
                "clarifications": {
                    r"which (head)?phones": "The Sony WH-1000XM5 please",
                    "shipping": "Standard",
                },
            }
        ],
    )
    ran = run_cli(tmp_path, path, "--agent", SHOP)
    assert ran.exit_code == 0, ran.stdout
    attempt = ran.case("vague")["attempts"][0]
    assert (
        attempt["followups"] == 1
        and attempt["followup_writers"] == ["script"]
        and not attempt["gave_up"]
    )
    (sent,) = attempt["followup_messages"]
    assert sent["reply"] == "The Sony WH-1000XM5 please" and "which" in sent["question"].lower()
    assert "follow-up (script) vague: agent asked" in ran.stdout  # the report shows what was sent


def test_the_runner_gives_up_after_max_followups(model, tmp_path: Path) -> None:
    path = write_dataset(
        tmp_path / "d.yaml",
        [{**VAGUE, "max_followups": 2, "clarifications": {"which headphones": "Not sure, any"}}],
    )
    ran = run_cli(tmp_path, path, "--agent", SHOP)
    assert ran.exit_code == 1
    attempt = ran.case("vague")["attempts"][0]
    assert attempt["followups"] == 2 and attempt["gave_up"]
    assert len(model.requests) == 3  # the input and two follow-ups; the third question stands


def _judge(body: dict[str, Any]) -> Reply:
    prompt = body["messages"][-1]["content"]
    exchange = json.loads(prompt.split("<exchange>\n", 1)[1].split("\n</exchange>", 1)[0])
    asking = "Which headphones" in exchange["agent_latest_reply"]
    return json_reply(
        {
            "reasoning": "scripted",
            "is_clarifying_question": asking,
            "user_reply": "The Bose QC Ultra" if asking else None,
        }
    )


def test_the_judge_clarifier_answers_when_no_script_matches(
    model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_dataset(
        tmp_path / "d.yaml", [{**VAGUE, "clarifications": {"shipping": "Standard"}}]
    )
    with ScriptedOpenAI(_judge) as judge:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test")
        ran = run_cli(tmp_path, path, "--agent", SHOP, "--judge-model", "judge-model")
        decisions = len(judge.requests)
    assert ran.exit_code == 0, ran.stdout
    attempt = ran.case("vague")["attempts"][0]
    assert attempt["followup_writers"] == ["judge"]
    assert decisions == 2  # the question (answered), then the final answer (left standing)
    assert ran.doc["summary"]["clarifier"]["calls"] == 2


def test_10_9_a_judge_failure_deciding_a_follow_up_is_printed(
    model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 10 item 9: the clarifier's judge error reaches the console, not only the JSON."""
    path = write_dataset(tmp_path / "d.yaml", [VAGUE])
    with ScriptedOpenAI(lambda body: error(400, "no such model: judge-model")) as judge:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test")
        ran = run_cli(tmp_path, path, "--agent", SHOP, "--judge-model", "judge-model")
    assert ran.exit_code == 1
    (logged,) = ran.doc["summary"]["clarifier"]["errors"]
    assert logged.startswith("vague: clarifier failed")
    assert "judge error on a follow-up: vague: clarifier failed" in ran.stdout
    assert "no such model" in ran.stdout


def test_no_judge_turns_the_judge_clarifier_off(
    model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_dataset(tmp_path / "d.yaml", [VAGUE])
    ran = run_cli(tmp_path, path, "--agent", SHOP, "--judge-model", "judge-model", "--no-judge")
    assert ran.exit_code == 1 and ran.case("vague")["attempts"][0]["followups"] == 0


class _Echo(Session):
    """Replies with a question until told the product."""

    async def send(self, messages: list[dict[str, str]]) -> str:
        return (
            "Done: $279.99."
            if "sony" in messages[-1]["content"].lower()
            else "Which one do you mean?"
        )


class _FakeClarifier:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[dict[str, str]], str]] = []

    def follow_up(
        self, case_input: str, conversation: list[dict[str, str]], reply: str
    ) -> str | None:
        self.calls.append((case_input, conversation, reply))
        return "The Sony one" if reply.endswith("?") else None


def test_scripts_come_first_and_the_clarifier_only_after_the_last_turn() -> None:
    clarifier = _FakeClarifier()
    hook = FollowUps([ScriptedClarifications(), JudgeClarifications(clarifier)])
    case = Case(
        id="c", turns=["hi", "what does it cost?"], clarifications={"^nothing matches$": "x"}
    )
    conversation = asyncio.run(converse(_Echo(), case, hook))
    assert [f.written_by for f in conversation.followups] == ["judge"]
    assert [c[2] for c in clarifier.calls] == [
        "Which one do you mean?",
        "Done: $279.99.",
    ]  # not after turn 1
    assert clarifier.calls[0][0] == "hi" and [m["role"] for m in clarifier.calls[0][1]] == [
        "user",
        "assistant",
        "user",
    ]
    assert [m["content"] for m in conversation.messages if m["role"] == "user"] == [
        "hi",
        "what does it cost?",
        "The Sony one",
    ]
    assert json.dumps(conversation.messages)  # plain data, as sent to agents
