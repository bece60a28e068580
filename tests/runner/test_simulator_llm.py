"""The LLM simulated user, against a scripted OpenAI-compatible endpoint playing the customer:
its requests carry the seed and temperature; its steps are cached in the store, so a rerun
whose agent replies the same sends it nothing, costs nothing and holds the same conversation;
a new seed asks again. Its calls are spans of a trace of its own (never in the agent's
traces), and its tokens and cost are reported apart from the agent's."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.runner.conftest import Ran, run_cli
from tests.support.ecommerce_model import shop_models
from tests.support.openai_server import Reply, ScriptedOpenAI, text
from tracegrade.store.traces import Store

OPENING = "I want a refund for my laptop, the screen is defective."
ORDER = "550e8400-e29b-41d4-a716-446655440004"
SIMULATOR_USAGE = (1000, 200)

pytest.importorskip(
    "opentelemetry.instrumentation.openai_v2",
    reason="install the examples extra: pip install -e '.[examples]'",
)


def _exchange(body: dict[str, Any]) -> dict[str, Any]:
    prompt = body["messages"][-1]["content"]
    return json.loads(prompt.split("<exchange>\n", 1)[1].split("\n</exchange>", 1)[0])


def customer(body: dict[str, Any]) -> Reply:
    """The model playing the customer: opens, gives the order number when asked, confirms,
    and says the goal is met once the refund is confirmed."""
    exchange = _exchange(body)
    conversation = exchange["conversation"]
    step: dict[str, Any] = {"goal_reached": False, "give_up": False, "asked_for_given_facts": []}
    last = conversation[-1]["content"] if conversation else ""
    if not conversation:
        step.update(reasoning="open", message=OPENING)
    elif "refund is confirmed" in last:
        step.update(reasoning="the refund is confirmed", goal_reached=True, message=None)
    elif "Shall I" in last:
        step.update(reasoning="confirm", message="Yes, please go ahead.")
    elif "order number" in last:
        step.update(reasoning="asked", message=f"It's order {exchange['facts']['order_number']}.")
    else:
        step.update(reasoning="lost", give_up=True, message=None)
    return text(json.dumps(step), usage=SIMULATOR_USAGE)


@pytest.fixture
def simulator(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    """The shop assistant's scripted model, and the customer's at the judge's endpoint."""
    with shop_models(monkeypatch) as start, ScriptedOpenAI(customer) as server:
        start("good")
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test")
        for name in ("TRACEGRADE_JUDGE_MODEL", "TRACEGRADE_SIMULATOR_MODEL"):
            monkeypatch.delenv(name, raising=False)
        yield server


def _dataset(tmp_path: Path) -> str:
    """The refund case with no scripted replies and no opening: the model plays it all."""
    case = {
        "id": "refund-llm",
        "user": {
            "goal": "Get a refund for the laptop with the defective screen.",
            "persona": "A busy customer.",
            "facts": {"order_number": ORDER},
            "stop": "The assistant confirms the refund.",
            "max_turns": 4,
        },
        "expected_tool_calls": [{"name": "initiate_return", "arguments": {"order_id": ORDER}}],
    }
    path = tmp_path / "llm.yaml"
    path.write_text(yaml.safe_dump({"name": "llm-user", "cases": [case]}))
    return str(path)


def _run(tmp_path: Path, dataset: str, seed: str, *more: str) -> Ran:
    return run_cli(
        tmp_path,
        dataset,
        "--no-judge",
        "--agent",
        "examples.ecommerce.agent:answer",
        "--db",
        str(tmp_path / "runs.db"),
        "--simulator-model",
        "gpt-4o-mini",
        "--simulator-temperature",
        "0.2",
        "--simulator-seed",
        seed,
        *more,
    )


def _sent(ran: Ran) -> list[str]:
    steps = ran.case("refund-llm")["attempts"][0]["simulation"]["steps"]
    return [s["message"] for s in steps if s["sent"]]


def test_the_model_plays_the_customer_seeded_cached_and_reproducible(
    simulator: ScriptedOpenAI, tmp_path: Path
) -> None:
    dataset = _dataset(tmp_path)
    first = _run(tmp_path, dataset, "7")
    assert first.exit_code == 0, first.stdout + first.stderr
    case = first.case("refund-llm")
    simulation = case["attempts"][0]["simulation"]
    assert simulation["reached"] and simulation["turns"] == 3
    assert simulation["simulator"] == "llm:gpt-4o-mini"
    assert _sent(first) == [OPENING, f"It's order {ORDER}.", "Yes, please go ahead."]
    asked = simulator.requests
    assert len(asked) == 4  # the opening, then one verdict after each of 3 replies
    assert {(r["model"], r["seed"], r["temperature"]) for r in asked} == {("gpt-4o-mini", 7, 0.2)}

    again = _run(tmp_path, dataset, "7")
    assert len(simulator.requests) == 4  # every step from the cache
    assert _sent(again) == _sent(first)
    assert again.case("refund-llm")["scores"] == case["scores"]
    spent = again.doc["summary"]["simulator"]  # type: ignore[index]
    assert (spent["calls"], spent["cached"], spent["cost_usd"]) == (0, 4, 0.0)

    _run(tmp_path, dataset, "8")
    assert len(simulator.requests) == 8  # another seed is another question
    assert {r["seed"] for r in simulator.requests[4:]} == {8}


def test_the_simulators_spans_and_cost_are_kept_apart(
    simulator: ScriptedOpenAI, tmp_path: Path
) -> None:
    ran = _run(tmp_path, _dataset(tmp_path), "7")
    assert ran.doc is not None
    attempt = ran.case("refund-llm")["attempts"][0]
    own = attempt["simulation"]["trace_id"]
    assert own and own not in attempt["trace_ids"]
    with Store(str(tmp_path / "runs.db")) as store:
        (simulated,) = store.load([own])
        agents = store.load(attempt["trace_ids"])
    mine = [
        s
        for s in simulated.spans
        if s.resource_attributes.get("service.name") == "tracegrade-simulated-user"
    ]
    assert sorted(s.name for s in mine) == ["chat gpt-4o-mini"] * 4 + ["simulated_user refund-llm"]
    root = next(s for s in mine if s.parent_span_id is None)
    assert root.attributes["tracegrade.simulated_user.case_id"] == "refund-llm"
    assert "tracegrade.case_id" not in root.attributes
    calls = [s for s in mine if s.name.startswith("chat")]
    assert {s.attributes["gen_ai.usage.input_tokens"] for s in calls} == {SIMULATOR_USAGE[0]}
    assert all(s.attributes["gen_ai.request.seed"] == 7 for s in calls)
    agent_spans = [s for t in agents for s in t.spans]
    assert agent_spans and not any(
        s.resource_attributes.get("service.name") == "tracegrade-simulated-user"
        or s.attributes.get("gen_ai.usage.input_tokens") == SIMULATOR_USAGE[0]
        for s in agent_spans
    )
    summary = ran.doc["summary"]
    spent = summary["simulator"]
    assert spent["calls"] == 4 and spent["input_tokens"] == 4 * SIMULATOR_USAGE[0]
    assert spent["cost_usd"] == pytest.approx(4 * (1000 * 0.15 + 200 * 0.60) / 1e6)
    assert summary["input_tokens"] < SIMULATOR_USAGE[0]  # the agent's own, without the customer's
    assert attempt["simulation"]["usage"]["input_tokens"] == 4 * SIMULATOR_USAGE[0]
    assert "simulator gpt-4o-mini: 4 call(s) (0 step(s) from cache)" in " ".join(ran.stdout.split())


def test_a_failing_simulator_fails_the_case_not_the_run(
    simulator: ScriptedOpenAI, tmp_path: Path
) -> None:
    simulator.script = lambda body: text("not json at all", usage=(5, 5))
    ran = _run(tmp_path, _dataset(tmp_path), "7")
    case = ran.case("refund-llm")
    assert not case["passed"]
    assert case["attempts"][0]["simulation"]["ended_by"] == "error"
    assert any("the simulated user failed" in r for r in case["hard_failures"])


def test_the_model_needs_a_key_checked_before_any_case(
    simulator: ScriptedOpenAI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TRACEGRADE_JUDGE_API_KEY")
    monkeypatch.delenv("OPENAI_API_KEY")
    ran = run_cli(tmp_path, _dataset(tmp_path), "--agent", "examples.ecommerce.agent:answer")
    assert ran.exit_code == 2
    assert "the simulated user of case(s) ['refund-llm'] (model 'gpt-4o'" in ran.stderr
    assert "needs an API key" in ran.stderr
    assert simulator.requests == []


def test_repeats_are_different_simulated_users_each_reproduced(
    simulator: ScriptedOpenAI, tmp_path: Path
) -> None:
    """Repeat k plays with the seed plus k - 1. Here the customer of seed 8 loses patience at
    the agent's first question: the repeats disagree on the goal, the case is flaky, and a
    rerun reproduces each repeat from the cache."""

    def by_seed(body: dict[str, Any]) -> Reply:
        if body["seed"] == 8 and _exchange(body)["conversation"]:
            impatient = {"reasoning": "too slow", "goal_reached": False, "give_up": True}
            return text(json.dumps({**impatient, "asked_for_given_facts": [], "message": None}))
        return customer(body)

    simulator.script = by_seed
    dataset = _dataset(tmp_path)
    first = _run(tmp_path, dataset, "7", "--repeat", "2")
    case = first.case("refund-llm")
    assert {r["seed"] for r in simulator.requests} == {7, 8}
    simulations = {a["repeat"]: a["simulation"] for a in case["attempts"]}
    assert (simulations[1]["seed"], simulations[1]["ended_by"]) == (7, "goal")
    assert (simulations[2]["seed"], simulations[2]["ended_by"]) == (8, "gave_up")
    goal = case["goal"]
    assert (goal["reached"], goal["conversations"], goal["flaky"]) == (1, 2, True)
    assert goal["low"] < 0.5 < goal["high"]
    assert case["flaky"] and first.doc["summary"]["flaky"] == 1  # type: ignore[index]
    report = " ".join(first.stdout.split())
    assert "simulated user refund-llm #1: goal reached in 3/4 turn(s)" in report
    assert "simulated user refund-llm #2: goal not reached after 1/4 turn(s)" in report
    assert "flaky" in report

    asked = len(simulator.requests)
    again = _run(tmp_path, dataset, "7", "--repeat", "2")
    assert len(simulator.requests) == asked  # both repeats from the cache
    replayed = {a["repeat"]: a["simulation"] for a in again.case("refund-llm")["attempts"]}
    for repeat in (1, 2):
        assert replayed[repeat]["steps"] == [
            {**s, "cached": True} for s in simulations[repeat]["steps"]
        ]
