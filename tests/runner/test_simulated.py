"""Simulated users, keyless: the example shop assistant (the scripted ecommerce model) against
the scripted simulated user of datasets/ecommerce/simulated.yaml. The customer reaches the
refund goal in 3 turns; when the assistant is revived before turn 3 and keeps its thread in
memory, it forgets the order number, asks for it again, and the goal is not reached. The
report says the turns, whether the goal was reached, and why. Over each agent style:
in-process factory, command, service behind --agent-url with --revive-cmd."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.runner.conftest import REPO, Ran, run_cli
from tests.runner.restart_service import stop
from tests.support.ecommerce_model import shop_models
from tests.support.ports import free_port

SIMULATED = str(REPO / "datasets" / "ecommerce" / "simulated.yaml")
PLAIN, REVIVED = "refund-laptop-simulated", "refund-laptop-simulated-revived"
RESTART = REPO / "tests" / "runner" / "restart_service.py"
FORGOT = "order_number (given at turn 2, asked again at turn 3)"

pytest.importorskip(
    "opentelemetry.instrumentation.openai_v2",
    reason="install the examples extra: pip install -e '.[examples]'",
)


@pytest.fixture
def shop(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scripted good model for the example shop assistant; no key for anything else."""
    with shop_models(monkeypatch) as start:
        start("good")
        monkeypatch.setenv("PYTHONPATH", str(REPO))
        for name in ("TRACEGRADE_JUDGE_MODEL", "TRACEGRADE_SIMULATOR_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv("TRACEGRADE_JUDGE_API_KEY", raising=False)
        yield


def _run(tmp_path: Path, *args: str) -> Ran:
    return run_cli(tmp_path, SIMULATED, "--no-judge", *args)


def _reached(ran: Ran, case_id: str = PLAIN) -> None:
    case = ran.case(case_id)
    assert case["passed"], case["reasons"]
    assert case["scores"]["goal_reached"] == 1.0
    assert case["scores"]["facts_remembered"] == 1.0
    simulation = case["attempts"][0]["simulation"]
    assert simulation["reached"] and simulation["ended_by"] == "goal"
    assert simulation["turns"] == 3 and simulation["max_turns"] == 3
    assert simulation["simulator"] == "scripted"
    sent = [s["message"] for s in simulation["steps"] if s["sent"]]
    assert sent == [
        "It's order 550e8400-e29b-41d4-a716-446655440004.",
        "Yes, please go ahead.",
    ]
    assert case["goal"]["rate"] == 1.0 and case["goal"]["turns"] == [3]


def _forgotten(ran: Ran) -> None:
    case = ran.case(REVIVED)
    assert not case["passed"]
    assert case["scores"]["goal_reached"] == 0.0
    simulation = case["attempts"][0]["simulation"]
    assert simulation["ended_by"] == "max_turns" and simulation["turns"] == 3
    assert case["attempts"][0]["revivals"] == [3]
    why = next(r for r in case["hard_failures"] if r.startswith("goal not reached"))
    assert why.startswith("goal not reached (max_turns reached after 3/3 turn(s)): the stop ")
    assert "Please give me your order number." in why
    assert case["scores"]["facts_remembered"] == 0.0
    assert any(FORGOT in r for r in case["reasons"])
    assert simulation["asked_again"] == [{"fact": "order_number", "given_at": 2, "asked_at": 3}]
    # the report shows the turns, the goal, and why
    report = " ".join(ran.stdout.split())
    assert f"simulated user {REVIVED}: goal not reached after 3/3 turn(s) (max_turns" in report
    assert f"the agent asked again for {FORGOT}" in report
    assert f"simulated user {PLAIN}: goal reached in 3/3 turn(s) (scripted)" in report


# --- in process ----------------------------------------------------------------------------------


def test_the_scripted_customer_reaches_the_refund_in_three_turns(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_THREADS_DB", str(tmp_path / "threads.db"))
    ran = _run(tmp_path, "--agent", "examples.ecommerce.threads:sqlite_agent")
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    _reached(ran)
    _reached(ran, REVIVED)  # its thread survives the revival
    assert ran.doc is not None
    assert ran.doc["summary"]["simulated"]["rate"] == 1.0
    assert ran.doc["summary"].get("simulator") is None  # no model played: nothing spent


def test_an_agent_that_forgets_the_order_number_after_a_revival_fails_the_goal(
    shop, tmp_path: Path
) -> None:
    markdown = tmp_path / "run.md"
    agent = "examples.ecommerce.threads:memory_agent"
    ran = _run(tmp_path, "--agent", agent, "--markdown", str(markdown))
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    _reached(ran)  # without the revival, memory is enough
    _forgotten(ran)
    assert ran.doc is not None
    assert ran.doc["summary"]["simulated"]["reached"] == 1
    assert ran.doc["summary"]["simulated"]["conversations"] == 2
    # the step summary (--markdown, $GITHUB_STEP_SUMMARY): the goal rate, and why it failed
    summary = markdown.read_text()
    assert "- simulated users: goal reached in 1/2 conversation(s), 50% (95% interval " in summary
    assert f"| {REVIVED} | " in summary
    assert "goal not reached (max_turns reached after 3/3 turn(s))" in summary


def test_repeats_report_the_goal_rate_with_its_interval(shop, tmp_path: Path) -> None:
    ran = _run(tmp_path, "--agent", "examples.ecommerce.threads:memory_agent", "--repeat", "2")
    goal = ran.case(PLAIN)["goal"]
    assert (goal["reached"], goal["conversations"], goal["rate"]) == (2, 2, 1.0)
    assert 0.0 < goal["low"] < 1.0 and goal["high"] == 1.0  # Wilson interval of 2/2
    assert ran.case(REVIVED)["goal"]["rate"] == 0.0
    summary = ran.doc["summary"]["simulated"]  # type: ignore[index]
    assert (summary["reached"], summary["conversations"]) == (2, 4)
    assert summary["low"] < 0.5 < summary["high"]


def test_a_scripted_user_needs_an_opening_message(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = tmp_path / "no-opening.yaml"
    dataset.write_text(
        "- id: no-opening\n  user:\n    goal: a refund\n    replies: {x: y}\n    stop_when: done\n"
    )
    ran = run_cli(
        tmp_path, str(dataset), "--no-judge", "--agent", "examples.ecommerce.agent:answer"
    )
    case = ran.case("no-opening")
    assert not case["passed"]
    assert "a scripted user needs the conversation's first message" in " ".join(case["reasons"])


# --- a command: a fresh process per turn --------------------------------------------------------


def _command(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "examples.ecommerce", *args])


def test_a_command_agent_talks_to_the_simulated_user(shop, tmp_path: Path) -> None:
    threads = str(tmp_path / "threads.db")
    command = _command("--threads", threads) + " --conversation-id {conversation_id}"
    ran = _run(tmp_path, "--agent-cmd", command)
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    _reached(ran)
    _reached(ran, REVIVED)


# --- a service behind a URL, restarted on a revival ---------------------------------------------


@pytest.fixture
def service(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], list[str]]]:
    otlp_port, pidfile = free_port(), tmp_path / "service.pid"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{otlp_port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")

    def start(threads: str) -> list[str]:
        port = free_port()
        serve = [sys.executable, "-m", "examples.ecommerce.serve", "--port", str(port)]
        restart = shlex.join([sys.executable, str(RESTART), str(pidfile), "--", *serve])
        restart += f" --threads {shlex.quote(threads)}"
        import subprocess

        assert subprocess.run(restart, shell=True, check=False).returncode == 0
        body = '{"message": "{input}", "conversation_id": "{conversation_id}"}'
        return [
            "--agent-url",
            f"http://127.0.0.1:{port}/chat",
            "--body",
            body,
            "--otlp-http-port",
            str(otlp_port),
            "--settle-quiet",
            "0.3",
            "--revive-cmd",
            restart,
        ]

    yield start
    stop(pidfile)


def test_a_service_that_forgets_its_threads_on_restart_fails_the_goal(
    service, tmp_path: Path
) -> None:
    ran = _run(tmp_path, *service("memory"))
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    _reached(ran)
    _forgotten(ran)


# --- the judge's verdict on the goal, when a judge model is configured -------------------------


def test_a_configured_judge_gives_its_own_verdict_on_the_goal(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.openai_server import ScriptedOpenAI, json_reply

    verdict = {"reasoning": "the return is started", "score": 1.0, "met": [], "missed": []}
    monkeypatch.setenv("SHOP_THREADS_DB", str(tmp_path / "threads.db"))
    with ScriptedOpenAI(lambda body: json_reply(verdict)) as judge:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test")
        ran = run_cli(
            tmp_path,
            SIMULATED,
            "--agent",
            "examples.ecommerce.threads:sqlite_agent",
            "--judge-model",
            "gpt-4o-mini",
            "--case",
            PLAIN,
        )
        prompt = judge.requests[0]["messages"][-1]["content"]
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    case = ran.case(PLAIN)
    assert case["scores"]["goal_judge"] == 1.0 and case["scores"]["goal_reached"] == 1.0
    assert "The user's goal: Get a refund for the laptop" in prompt
    assert "The assistant confirms that the return and refund are started." in prompt
    assert ran.doc is not None and ran.doc["summary"]["judge"]["calls"] == 1
