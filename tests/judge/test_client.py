"""The judge client against the scripted OpenAI-compatible server: well-formed verdicts,
malformed JSON, out-of-range scores, 429/5xx then success, timeouts, servers without
structured output."""

from __future__ import annotations

import json

import pytest

from tests.judge.conftest import settings_for
from tests.support.judge_replies import verdict
from tests.support.openai_server import delayed, error, json_reply, raw, text
from tracegrade.config import ModelPrice, Pricing
from tracegrade.errors import ConfigError
from tracegrade.judge.client import JudgeClient, JudgeError, parse_reply
from tracegrade.judge.rubrics import VERDICT_SCHEMA, Verdict
from tracegrade.judge.settings import JudgeSettings

MESSAGES = [{"role": "system", "content": "grade"}, {"role": "user", "content": "evidence"}]


def ask(server, **overrides):
    client = JudgeClient(settings_for(server, **overrides))
    return client.ask(MESSAGES, Verdict, VERDICT_SCHEMA)


def test_well_formed_verdict_with_structured_output_request(judge_server):
    server = judge_server([json_reply(verdict(0.8, "fine", ["a"], ["b"]))])
    result, usage = ask(server)
    assert (result.score, result.reasoning, result.met, result.missed) == (
        0.8,
        "fine",
        ["a"],
        ["b"],
    )
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (1, 25, 12)
    sent = server.requests[0]
    assert sent["response_format"]["type"] == "json_schema"
    assert sent["response_format"]["json_schema"]["strict"] is True
    assert sent["response_format"]["json_schema"]["schema"]["required"] == [
        "reasoning",
        "score",
        "met",
        "missed",
    ]
    assert sent["temperature"] == 0.0


def test_text_answer_in_a_markdown_fence_is_accepted(judge_server):
    fenced = "Here is my verdict:\n```json\n" + json.dumps(verdict(0.5)) + "\n```"
    server = judge_server([text(fenced)])
    result, _ = ask(server)
    assert result.score == 0.5


def test_malformed_json_is_asked_again_with_the_problem(judge_server):
    server = judge_server([text("{score: high"), json_reply(verdict(0.9))])
    result, usage = ask(server)
    assert result.score == 0.9 and usage.calls == 2
    retry = server.requests[1]["messages"]
    assert retry[-2] == {"role": "assistant", "content": "{score: high"}
    assert "not a JSON object" in retry[-1]["content"]


def test_malformed_every_time_is_a_judge_error_after_the_attempts(judge_server):
    server = judge_server(lambda body: text("I think it is pretty good"))
    with pytest.raises(
        JudgeError, match=r"no valid answer from gpt-4o in 3 attempt\(s\): not a JSON object"
    ):
        ask(server)
    assert len(server.requests) == 3


def test_out_of_range_score_is_retried_then_a_judge_error(judge_server):
    server = judge_server(lambda body: json_reply(verdict(7)))
    with pytest.raises(JudgeError, match=r"field 'score'.*less than or equal to 1") as raised:
        ask(server, attempts=2)
    assert len(server.requests) == 2
    assert raised.value.usage.calls == 2 and raised.value.usage.input_tokens == 50


def test_out_of_range_then_valid_is_accepted(judge_server):
    server = judge_server([json_reply(verdict(-0.2)), json_reply(verdict(0.3))])
    result, _ = ask(server)
    assert result.score == 0.3
    assert "greater than or equal to 0" in server.requests[1]["messages"][-1]["content"]


def test_unreadable_response_body_counts_as_a_malformed_answer(judge_server):
    server = judge_server([raw("{not json"), json_reply(verdict(1.0))])
    result, usage = ask(server)
    assert result.score == 1.0 and usage.calls == 2


def test_429_then_success_is_retried_by_the_client(judge_server):
    server = judge_server([error(429, "slow down", retry_after=0.01), json_reply(verdict(0.6))])
    result, usage = ask(server)
    assert result.score == 0.6 and len(server.requests) == 2
    assert usage.calls == 1  # the 429 returned no completion


def test_5xx_then_success_is_retried(judge_server):
    server = judge_server(
        [error(503, retry_after=0.01), error(500, retry_after=0.01), json_reply(verdict(0.7))]
    )
    result, _ = ask(server)
    assert result.score == 0.7 and len(server.requests) == 3


def test_429_after_all_retries_is_a_judge_error_naming_the_status(judge_server):
    server = judge_server(lambda body: error(429, "rate limited", retry_after=0.01))
    with pytest.raises(JudgeError, match=r"HTTP 429 \(after 1 retries\): rate limited"):
        ask(server, max_retries=1)
    assert len(server.requests) == 2


def test_timeout_is_a_judge_error(judge_server):
    server = judge_server(lambda body: delayed(1.0, json_reply(verdict(1.0))))
    with pytest.raises(JudgeError, match=r"timed out \(0.2 s per request, after 1 retries\)"):
        ask(server, timeout_s=0.2, max_retries=1)
    assert len(server.requests) == 2


def test_server_rejecting_response_format_is_asked_without_it(judge_server):
    script = [
        error(400, "Invalid parameter: 'response_format' of type 'json_schema' is not supported"),
        json_reply(verdict(0.4)),
    ]
    server = judge_server(script)
    result, _ = ask(server)
    assert result.score == 0.4
    assert "response_format" in server.requests[0] and "response_format" not in server.requests[1]


def test_cost_from_the_pricing_table(judge_server):
    pricing = Pricing({"judge-x": ModelPrice(input=2.0, output=10.0)})
    server = judge_server([json_reply(verdict(1.0))])
    _, usage = ask(server, model="judge-x", pricing=pricing)
    assert usage.cost_usd == pytest.approx((25 * 2.0 + 12 * 10.0) / 1e6)


def test_no_api_key_is_a_config_error():
    with pytest.raises(ConfigError, match="TRACEGRADE_JUDGE_API_KEY"):
        JudgeClient(JudgeSettings(api_key=None))


def test_parse_reply_finds_json_inside_prose():
    assert (
        parse_reply(
            'Verdict: {"reasoning": "r", "score": 0.25, "met": [], "missed": []} done', Verdict
        ).score
        == 0.25
    )
