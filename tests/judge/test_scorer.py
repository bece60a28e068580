"""The judge scorer inside a run: faithfulness on a real tau-bench conversation, judge
errors, threshold, median of repeats, concurrency, skips, the in-memory cache."""

from __future__ import annotations

import threading
import time

from tests.judge.conftest import CONTRADICTION, fenced, settings_for
from tests.support.judge_replies import verdict
from tests.support.openai_server import delayed, error, json_reply, text
from tracegrade.config import defaults
from tracegrade.dataset import Case, Dataset, Judge
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.store.judge_cache import JudgeCache

CONFIG = defaults()


def _dataset(*cases: Case, judge: Judge | None = None) -> Dataset:
    return Dataset(name="judged", cases=list(cases), judge=judge)


def _case(trace, case_id: str = "c1", **judge) -> Case:
    return Case(id=case_id, input=trace.user_inputs[0], judge=Judge(**judge) if judge else None)


def test_faithfulness_judges_a_contradicted_answer_with_the_tool_results_as_evidence(
    judge_server, contradiction
):
    missed = (
        "says $114 was charged, but calculate returned -114.0 (a refund); "
        "says economy, the update returned basic_economy"
    )
    server = judge_server(
        [
            json_reply(
                verdict(
                    0.1, "The answer contradicts two tool results.", ["flight HAT041"], [missed]
                )
            )
        ]
    )
    scorer = JudgeScorer(settings_for(server))
    dataset = _dataset(_case(contradiction, rubric="faithfulness"))
    result = evaluate(
        [contradiction], dataset, [*build_scorers(CONFIG, with_plugins=False), scorer], CONFIG
    )
    case = result.results[0]
    assert case.trace_id == CONTRADICTION and not case.passed
    assert case.scores["judge"] == 0.1
    assert (
        f"judge: 0.10 below threshold 0.70 on the faithfulness rubric (missed: {missed})"
        in case.reasons
    )
    evidence = server.requests[0]["messages"][1]["content"]
    assert "Faithfulness to the trace" in evidence
    assert fenced(evidence, "evidence")["tool_calls"][3]["result"] == "-114.0"
    calls = fenced(evidence, "evidence")["tool_calls"]
    shown = [c.get("result", "") + c["arguments"] for c in calls]
    assert any(
        '"cabin": "basic_economy", "flights": [{"flight_number": "HAT041"' in t for t in shown
    )
    assert (
        "The additional cost of $114 has been charged to your credit card ending in 1777."
        in evidence
    )
    details = case.details["judge"]["details"]
    assert details["missed"] == [missed] and details["evidence"]["truncated"] is False
    assert details["usage"] == {
        "calls": 1,
        "cached": 0,
        "input_tokens": 25,
        "output_tokens": 12,
        "cost_usd": details["usage"]["cost_usd"],
    }


def test_a_judge_error_fails_the_case_as_judge_error_never_a_number(judge_server, contradiction):
    server = judge_server(lambda body: error(503, "overloaded", retry_after=0.01))
    scorer = JudgeScorer(settings_for(server, max_retries=1))
    result = evaluate(
        [contradiction], _dataset(_case(contradiction, rubric="Polite")), [scorer], CONFIG
    )
    case = result.results[0]
    assert case.scores["judge"] is None and not case.passed
    assert case.reasons[0].startswith(
        "judge error: judge endpoint answered HTTP 503 (after 1 retries): overloaded"
    )
    assert result.summary.judge["errors"] == 1


def test_malformed_verdicts_become_a_judge_error_on_the_case(judge_server, contradiction):
    server = judge_server(lambda body: text("score: 0.9"))
    scorer = JudgeScorer(settings_for(server, attempts=2))
    case = evaluate(
        [contradiction], _dataset(_case(contradiction, rubric="Polite")), [scorer], CONFIG
    ).results[0]
    assert case.scores["judge"] is None and not case.passed
    assert case.hard_failures[0].startswith(
        "judge error: no valid answer from gpt-4o in 2 attempt(s)"
    )
    assert case.details["judge"]["details"]["usage"]["calls"] == 2


def test_score_at_threshold_is_no_hard_failure_and_the_judge_is_an_axis(
    judge_server, contradiction
):
    server = judge_server([json_reply(verdict(0.5))])
    scorer = JudgeScorer(settings_for(server))
    case = evaluate(
        [contradiction],
        _dataset(_case(contradiction, rubric="Polite", threshold=0.5)),
        [scorer],
        CONFIG,
    ).results[0]
    assert case.scores["judge"] == 0.5 and case.hard_failures == ()
    assert case.axes["judge"] == 0.5


def test_10_6_a_case_whose_only_expectation_is_a_rubric_passes_on_the_judges_verdict(
    judge_server, contradiction
):
    """Issue 10 item 6: judge 0.9 over threshold 0.7 on a rubric-only case passes at 0.9 with
    the default scorers and weights; the axes that do not apply are notes, not reasons."""
    server = judge_server([json_reply(verdict(0.9))])
    scorers = [*build_scorers(CONFIG, with_plugins=False), JudgeScorer(settings_for(server))]
    case = evaluate(
        [contradiction], _dataset(_case(contradiction, rubric="Polite")), scorers, CONFIG
    ).results[0]
    assert case.passed and case.score == 0.9, case.reasons
    assert not [r for r in case.reasons if "not scored" in r]
    assert any(n.startswith("groundedness not scored") for n in case.notes)


def test_repeat_takes_the_median_of_distinct_questions(judge_server, contradiction):
    server = judge_server([json_reply(verdict(s, f"v{s}")) for s in (0.2, 0.9, 0.6)])
    scorer = JudgeScorer(settings_for(server, repeat=3, concurrency=1))
    score = scorer(contradiction, _case(contradiction, rubric="Polite"))
    assert score.value == 0.6 and score.details["scores"] == [0.2, 0.6, 0.9]
    assert score.details["reasoning"] == "v0.6"
    assert [(r["score"], r["reasoning"]) for r in score.details["rounds"]] == [
        (0.2, "v0.2"),
        (0.6, "v0.6"),
        (0.9, "v0.9"),
    ]
    assert len(server.requests) == 3


def test_calls_run_concurrently_up_to_the_limit(judge_server, tau_traces):
    in_flight, peak, lock = [0], [0], threading.Lock()

    def script(body):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.15)
        with lock:
            in_flight[0] -= 1
        return json_reply(verdict(0.9))

    server = judge_server(script)
    traces = [t for t in tau_traces.values() if t.final_output][:6]
    scorer = JudgeScorer(settings_for(server, concurrency=3), judge_all=True)
    started = time.monotonic()
    result = evaluate(traces, None, [scorer], CONFIG)
    assert peak[0] == 3 and len(server.requests) == 6
    assert time.monotonic() - started < 6 * 0.15
    assert [r.scores["judge"] for r in result.results] == [0.9] * 6


def test_nothing_to_judge_is_skipped_with_the_reason(judge_server, contradiction):
    server = judge_server([])
    scorer = JudgeScorer(settings_for(server))
    no_answer = contradiction.__class__(
        **{
            **{f: getattr(contradiction, f) for f in contradiction.__dataclass_fields__},
            "final_output": None,
        }
    )
    score = scorer(no_answer, _case(contradiction, rubric="Polite"))
    assert (score.value, score.reason, score.hard_failures) == (
        None,
        "the trace records no final answer to judge",
        (),
    )
    assert scorer(contradiction, _case(contradiction)).reason == "no judge rubric for this case"
    assert (
        JudgeScorer(settings_for(server), enabled=False)(
            contradiction, _case(contradiction, rubric="x")
        ).reason
        == "judge disabled (--no-judge)"
    )
    assert server.requests == []


def test_dataset_default_rubric_and_case_model(judge_server, contradiction):
    server = judge_server(lambda body: json_reply(verdict(0.8)))
    scorer = JudgeScorer(
        settings_for(server), default=Judge(rubric="Mentions the flight number", threshold=0.9)
    )
    score = scorer(contradiction, _case(contradiction))
    assert score.details["threshold"] == 0.9 and score.hard_failures
    assert "Mentions the flight number" in server.requests[0]["messages"][1]["content"]
    scorer(contradiction, _case(contradiction, "c2", rubric="Polite", model="judge-mini"))
    assert server.requests[1]["model"] == "judge-mini"


def test_cached_verdicts_cost_nothing(judge_server, contradiction):
    server = judge_server(lambda body: delayed(0, json_reply(verdict(0.75))))
    cache = JudgeCache()
    case = _case(contradiction, rubric="Polite")
    first = JudgeScorer(settings_for(server), cache=cache)(contradiction, case)
    second = JudgeScorer(settings_for(server), cache=cache)(contradiction, case)
    assert len(server.requests) == 1 and len(cache) == 1
    assert first.value == second.value == 0.75
    assert second.details["usage"] == {
        "calls": 0,
        "cached": 1,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": 0.0,
    }
