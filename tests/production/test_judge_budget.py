"""A judge budget for online judging (issue 36), on SQLite and the real PostgreSQL server: a
follower judges every trace (``--judge``) through a scripted judge model whose calls cost
$0.037 each; with ``--judge-budget 0.1/h`` it stops judging at the limit (three calls, the
third taking it past $0.10), skips the judge on the other traces with the reason (counted,
shown on the line, in the window's figures) while the deterministic scorers go on; a second
worker on the same store finds the budget spent and asks the judge nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.judge_replies import verdict
from tests.support.openai_server import ScriptedOpenAI, json_reply
from tests.support.sdk import agent_turn, trace_request
from tracegrade.cli.follow import line, summary
from tracegrade.errors import ConfigError
from tracegrade.judge.budget import BudgetLimits, parse_budget
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.follow import make_follower
from tracegrade.pipeline.judging import JudgeOptions
from tracegrade.report.windows import window_start
from tracegrade.store import follow as shared
from tracegrade.store.judge_spend import spent_between
from tracegrade.store.traces import Store

MODEL = "scripted-judge"
PRICED = f"""
pricing:
  models:
    {MODEL}: {{input: 1000.0, output: 1000.0}}
"""
CALL_USD = (25 + 12) * 1000.0 / 1e6
"""What one scripted judge call costs: 25 input and 12 output tokens at $1000 per million."""


@pytest.fixture
def judge(monkeypatch):
    with ScriptedOpenAI(lambda body: json_reply(verdict(0.9))) as server:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test-key")
        yield server


def _options(db: str, tmp_path: Path, **changes) -> ScoreOptions:
    config = tmp_path / "tracegrade.yaml"
    config.write_text(PRICED)
    values = {
        "db": db,
        "judge": JudgeOptions(mode=True, model=MODEL, concurrency=1),
        "config": str(config),
        "since": None,
        **changes,
    }
    return ScoreOptions(**values)


def _turns(count: int, offset: int = 0):
    return [
        trace_request(lambda t, i=i: agent_turn(t, f"find shoes {offset + i}", "Found shoes"))
        for i in range(count)
    ]


def test_the_judge_stops_at_the_budget_and_the_rest_is_scored_without_it(
    store_location, tmp_path, judge
):
    follower, _ = make_follower(
        _options(store_location, tmp_path),
        quiet_s=0.0,
        window="1h",
        lease_s=60,
        judge_budget=BudgetLimits(per_hour_usd=0.1),
    )
    with Store(store_location) as store:
        store.write(_turns(8))
        results = [r for r, _ in follower.poll(store)]
        spent = spent_between(store.db, 0, 4e9)
        anchor = window_start(
            store.db.execute("SELECT MIN(scored_at) FROM follow_results").fetchone()[0], 3600
        )
        follower.close_windows(store, anchor + 1)
        lines = follower.close_windows(store, anchor + 3601)
    judged = [r for r in results if r.scores.get("judge") is not None]
    skipped = [r for r in results if r.scores.get("judge") is None]
    assert len(results) == 8 and len(judged) == 3 and len(judge.requests) == 3
    assert spent == pytest.approx(3 * CALL_USD)  # stopped once past $0.10, no call after
    for result in skipped:  # the reason, and the deterministic scorers went on
        reason = result.details["judge"]["reason"]
        assert reason.startswith("judge skipped: judge budget spent: $0.1110 of $0.1")
        assert result.details["judge"]["details"]["skipped"] == "judge_budget"
        assert result.scores["production_rules"] is not None and result.passed
        assert line(result).endswith("(judge skipped: budget)")
    budget = follower.judge_budget
    assert budget is not None and budget.skipped == 5
    assert summary(follower, {r.trace_id: r.passed for r in results}) == (
        "8 traces scored, 0 failed, judge spent $0.1110 ($0.1/h), 5 judge scores skipped (budget)"
    )
    [window] = [text for text in lines if text.startswith("WINDOW")]
    assert "traces=8" in window and "judge_skipped=5" in window
    assert "judge_cost_usd=0.1110" in window

    other, _ = make_follower(  # another worker of the same store: the budget is shared
        _options(store_location, tmp_path),
        quiet_s=0.0,
        window=None,
        lease_s=60,
        judge_budget=BudgetLimits(per_hour_usd=0.1),
    )
    with Store(store_location) as store:
        store.write(_turns(3, 100))
        more = [r for r, _ in other.poll(store)]
        assert set(shared.result_counts(store.db).values()) == {1}
    assert len(more) == 3 and all(r.scores.get("judge") is None for r in more)
    assert len(judge.requests) == 3


def test_budget_values_and_what_a_budget_needs(tmp_path, judge):
    assert parse_budget(["2/h,20/d"]) == BudgetLimits(2.0, 20.0)
    assert parse_budget(["$0.50/hour", "5/day"]) == BudgetLimits(0.5, 5.0)
    assert parse_budget([]) is None
    with pytest.raises(ConfigError, match="--judge-budget 'lots'"):
        parse_budget(["lots"])
    with pytest.raises(ConfigError, match="hourly limit twice"):
        parse_budget(["1/h", "2/h"])
    db = str(tmp_path / "b.db")
    with pytest.raises(ConfigError, match="has no price"):
        make_follower(
            _options(db, tmp_path, judge=JudgeOptions(True, "unpriced-model", 1)),
            quiet_s=0.0,
            window=None,
            lease_s=60,
            judge_budget=BudgetLimits(1.0),
        )
    with pytest.raises(ConfigError, match="no trace is judged"):
        make_follower(
            _options(db, tmp_path, judge=JudgeOptions(mode=None, model=MODEL, concurrency=1)),
            quiet_s=0.0,
            window=None,
            lease_s=60,
            judge_budget=BudgetLimits(1.0),
        )
