"""Agent revival: ``tracegrade run`` restarts the agent between turns (same conversation id) and
``context_preserved`` checks from the trace that the conversation survived. The example shop
assistant with its thread in SQLite passes; one whose thread lives in memory, or that relies on
the caller to send the history, fails naming the turn and the message it lost. Over each agent
style: in-process factory, command, service behind ``--agent-url`` with ``--revive-cmd``. The
model is the scripted ecommerce model (tests/support/ecommerce_model.py)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.runner.conftest import REPO, Ran, run_cli
from tests.runner.restart_service import stop
from tests.support.ecommerce_model import shop_models
from tests.support.openai_server import ScriptedOpenAI, json_reply
from tests.support.ports import free_port

REVIVAL = str(REPO / "datasets" / "ecommerce" / "revival.yaml")
CASE = "running-shoes-revival"
LOST = (
    "context lost after the agent was revived before turn 2 ('Is the first one in stock?'): "
    "its first LLM call lacked 'Show me running shoes under $150'"
)
RESTART = REPO / "tests" / "runner" / "restart_service.py"

pytest.importorskip(
    "opentelemetry.instrumentation.openai_v2",
    reason="install the examples extra: pip install -e '.[examples]'",
)


@pytest.fixture
def shop(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scripted good model for the example shop assistant."""
    with shop_models(monkeypatch) as start:
        start("good")
        monkeypatch.setenv("PYTHONPATH", str(REPO))
        monkeypatch.delenv("TRACEGRADE_JUDGE_MODEL", raising=False)
        yield


def _run(tmp_path: Path, *args: str) -> Ran:
    return run_cli(tmp_path, REVIVAL, "--no-judge", *args)


def _passes(ran: Ran) -> None:
    case = ran.case(CASE)
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert case["scores"]["context_preserved"] == 1.0 and case["passed"]
    attempt = case["attempts"][0]
    assert attempt["revivals"] == [2] and len(attempt["trace_ids"]) >= 2  # a trace per session


def _fails_for_lost_context(ran: Ran) -> None:
    case = ran.case(CASE)
    assert ran.exit_code == 1, ran.stdout + ran.stderr
    assert case["scores"]["context_preserved"] == 0.0 and not case["passed"]
    assert LOST in case["hard_failures"]
    assert LOST in case["reasons"] and f"FAIL {CASE}" in ran.stderr  # the progress says why
    assert LOST in ran.stderr
    assert case["attempts"][0]["revivals"] == [2]


# --- in process: a factory builds the agent of each session ---------------------------------------


def test_an_in_process_agent_that_keeps_its_thread_in_sqlite_survives_a_revival(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_THREADS_DB", str(tmp_path / "threads.db"))
    _passes(_run(tmp_path, "--agent", "examples.ecommerce.threads:sqlite_agent"))


def test_an_in_process_agent_that_keeps_its_thread_in_memory_loses_it(shop, tmp_path: Path) -> None:
    _fails_for_lost_context(_run(tmp_path, "--agent", "examples.ecommerce.threads:memory_agent"))


def test_an_agent_function_cannot_be_revived_and_the_case_says_how_to_fix_it(
    shop, tmp_path: Path
) -> None:
    ran = _run(tmp_path, "--agent", "examples.ecommerce.agent:answer")
    case = ran.case(CASE)
    assert ran.exit_code == 2 and not case["passed"]  # no case produced a trace
    assert "is the agent function itself, which cannot be rebuilt" in case["error"]
    assert "give --agent MODULE:FACTORY" in case["error"]


# --- commands: a fresh process per turn; the revived session is told so ---------------------------


def _command(*args: str) -> str:
    return shlex.join([sys.executable, "-m", "examples.ecommerce", *args])


def test_a_command_that_keeps_its_thread_survives_a_revival(shop, tmp_path: Path) -> None:
    threads = str(tmp_path / "threads.db")
    command = _command("--threads", threads) + " --conversation-id {conversation_id}"
    _passes(_run(tmp_path, "--agent-cmd", command))


def test_a_command_that_relies_on_the_callers_history_loses_it(shop, tmp_path: Path) -> None:
    # without a revival the runner sends the conversation so far; after one, only the new turn
    ran = _run(tmp_path, "--agent-cmd", _command("--messages"), "--input-format", "messages")
    _fails_for_lost_context(ran)


# --- a service: --revive-cmd restarts it ----------------------------------------------------------


@pytest.fixture
def service(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[[str], tuple[list[str], str]]]:
    """``start(threads)``: the example service keeping its threads in ``threads`` (a SQLite
    file or ``memory``), started by ``restart_service.py`` like its ``--revive-cmd``; returns
    the run's arguments for it and the revive command."""
    otlp_port, pidfile = free_port(), tmp_path / "service.pid"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{otlp_port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "100")

    def start(threads: str) -> tuple[list[str], str]:
        port = free_port()
        serve = [sys.executable, "-m", "examples.ecommerce.serve", "--port", str(port)]
        restart = shlex.join([sys.executable, str(RESTART), str(pidfile), "--", *serve])
        restart += f" --threads {shlex.quote(threads)}"
        assert subprocess.run(restart, shell=True, check=False).returncode == 0
        body = '{"message": "{input}", "conversation_id": "{conversation_id}"}'
        args = ["--agent-url", f"http://127.0.0.1:{port}/chat", "--body", body]
        args += ["--otlp-http-port", str(otlp_port), "--settle-quiet", "0.3"]
        return args, restart

    yield start
    stop(pidfile)


def test_a_service_that_keeps_its_threads_in_sqlite_survives_a_restart(
    service, tmp_path: Path
) -> None:
    args, restart = service(str(tmp_path / "threads.db"))
    _passes(_run(tmp_path, *args, "--revive-cmd", restart))


def test_a_service_that_keeps_its_threads_in_memory_loses_them_on_restart(
    service, tmp_path: Path
) -> None:
    args, restart = service("memory")
    _fails_for_lost_context(_run(tmp_path, *args, "--revive-cmd", restart))


def test_a_service_revival_without_revive_cmd_fails_the_case_with_the_fix(
    service, tmp_path: Path
) -> None:
    args, _ = service(str(tmp_path / "threads.db"))
    case = _run(tmp_path, *args).case(CASE)
    assert not case["passed"]
    assert "nothing restarts the service" in case["error"]
    assert "give --revive-cmd COMMAND" in case["error"]


# --- the judge's per-turn rubric applies after a revival as before --------------------------------


def test_the_per_turn_judge_rubric_grades_the_revived_conversation(
    shop, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SHOP_THREADS_DB", str(tmp_path / "threads.db"))
    verdict = {"reasoning": "names the Pegasus stock", "score": 0.9, "met": [], "missed": []}
    with ScriptedOpenAI(lambda body: json_reply(verdict)) as judge:
        monkeypatch.setenv("TRACEGRADE_JUDGE_BASE_URL", judge.base_url)
        monkeypatch.setenv("TRACEGRADE_JUDGE_API_KEY", "test")
        ran = run_cli(
            tmp_path, REVIVAL, "--agent", "examples.ecommerce.threads:sqlite_agent", "--judge"
        )
        prompt = judge.requests[0]["messages"][-1]["content"]
    case = ran.case(CASE)
    assert ran.exit_code == 0, ran.stdout
    assert case["scores"]["judge"] == 0.9 and case["scores"]["context_preserved"] == 1.0
    assert "After turn 2 ('Is the first one in stock?'): Says whether the first shoe" in prompt
    assert "Is the first one in stock?" in prompt and "Show me running shoes" in prompt
