"""Agent revival's pieces one at a time: which callables are factories, what a revived command
is told, the messages a revived session gets, a failing --revive-cmd, and a revival of a shared
service running alone."""

from __future__ import annotations

import asyncio
import os
import shlex
import sys

import pytest

from tracegrade.dataset import Case
from tracegrade.environment import TRACEGRADE_CONVERSATION_ID, TRACEGRADE_REVIVED
from tracegrade.runner.agents import (
    Agent,
    AgentFailure,
    Attempt,
    CommandAgent,
    PythonAgent,
    Session,
)
from tracegrade.runner.agents.python import is_factory
from tracegrade.runner.conversation import converse
from tracegrade.runner.revival import ConversationLock, Sessions


def answer(message: str) -> str: ...
def make(conversation_id: str = "x") -> object: ...
def make_nothing() -> object: ...


class Agentish:
    def __init__(self, verbose: bool = False) -> None: ...
    def __call__(self, message: str) -> str: ...


@pytest.mark.parametrize(
    ("target", "factory"),
    [(answer, False), (make, True), (make_nothing, True), (Agentish, True), (Agentish(), False)],
)
def test_a_callable_without_required_parameters_is_a_factory(target, factory) -> None:
    assert is_factory(target) is factory


def test_a_revived_command_session_is_told_so_and_keeps_the_conversation_id(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(TRACEGRADE_REVIVED, "1")  # left over from a caller: not passed on
    agent = CommandAgent("agent")
    first = Attempt("run", "case", 1, conversation_id="c0ffee")
    env = agent.environment(first, "00-" + "1" * 32 + "-" + "2" * 16 + "-01")
    assert env[TRACEGRADE_CONVERSATION_ID] == "c0ffee" and TRACEGRADE_REVIVED not in env
    assert "tracegrade.conversation_id=c0ffee" in env["OTEL_RESOURCE_ATTRIBUTES"]
    revived = agent.environment(first.revived(), "00-" + "3" * 32 + "-" + "4" * 16 + "-01")
    assert revived[TRACEGRADE_REVIVED] == "1" and revived[TRACEGRADE_CONVERSATION_ID] == "c0ffee"
    assert revived["OTEL_RESOURCE_ATTRIBUTES"].endswith(
        "tracegrade.conversation_id=c0ffee,tracegrade.revival=1"
    )


class _Recorder(Session):
    """Records what each session is sent; a revival starts a new one."""

    def __init__(self, log: list[tuple[int, list[str]]], number: int = 1) -> None:
        self.log, self.number = log, number

    async def send(self, messages: list[dict[str, str]]) -> str:
        self.log.append((self.number, [m["content"] for m in messages]))
        return f"reply {len(self.log)}"


class _Restartable(Agent):
    kind = "test"

    def __init__(self, revive_command: str | None = None) -> None:
        self.log: list[tuple[int, list[str]]] = []
        self.revive_command = revive_command
        self.attempts: list[Attempt] = []

    async def start(self, attempt: Attempt) -> Session:
        self.attempts.append(attempt)
        return _Recorder(self.log, attempt.revival + 1)

    def cannot_revive(self) -> str | None:
        return None


def test_a_revived_session_is_sent_the_conversation_from_the_revived_turn_on() -> None:
    agent = _Restartable()
    case = Case(turns=["one", "two", "three"], revive=[3])

    async def go() -> tuple[Sessions, list[int]]:
        sessions = await Sessions.start(agent, Attempt("run", "case", 1))
        conversation = await converse(sessions, case, None)
        return sessions, conversation.revivals

    sessions, revivals = asyncio.run(go())
    assert agent.log == [(1, ["one"]), (1, ["one", "reply 1", "two"]), (2, ["three"])]
    assert revivals == [3] and sessions.count == 2
    first, second = agent.attempts
    assert second.conversation_id == first.conversation_id and second.revival == 1


def test_a_failing_revive_command_fails_the_attempt_with_its_output() -> None:
    command = shlex.join([sys.executable, "-c", "import sys; print('no such unit'); sys.exit(4)"])
    agent = _Restartable(command)
    case = Case(turns=["one", "two"], revive=True)

    async def go() -> None:
        await converse(await Sessions.start(agent, Attempt("run", "case", 1)), case, None)

    with pytest.raises(AgentFailure, match=r"--revive-cmd exited with code 4: no such unit"):
        asyncio.run(go())


def test_the_revive_command_knows_the_conversation(tmp_path) -> None:
    out = tmp_path / "env"
    script = (
        f"import os; open({str(out)!r}, 'w').write(os.environ[{TRACEGRADE_CONVERSATION_ID!r}] "
        f"+ os.environ[{TRACEGRADE_REVIVED!r}])"
    )
    agent = _Restartable(shlex.join([sys.executable, "-c", script]))
    attempt = Attempt("run", "case", 1, conversation_id="abc")

    async def go() -> None:
        await converse(
            await Sessions.start(agent, attempt), Case(turns=["a", "b"], revive=True), None
        )

    asyncio.run(go())
    assert out.read_text() == "abc1" and os.environ.get(TRACEGRADE_REVIVED) is None


def test_a_conversation_with_revivals_of_a_shared_agent_runs_alone() -> None:
    events: list[str] = []

    async def hold(lock: ConversationLock, name: str, alone: bool, delay: float) -> None:
        await asyncio.sleep(delay)
        async with lock.hold(alone):
            events.append(f"{name} in")
            await asyncio.sleep(0.02)
            events.append(f"{name} out")

    async def go() -> None:
        lock = ConversationLock()
        await asyncio.gather(
            hold(lock, "a", False, 0),
            hold(lock, "b", False, 0),
            hold(lock, "revive", True, 0.005),  # waits for a and b ...
            hold(lock, "c", False, 0.01),  # ... and c waits behind it
        )

    asyncio.run(go())
    assert events[:2] == ["a in", "b in"]
    assert events[4:] == ["revive in", "revive out", "c in", "c out"]


def _broken_factory() -> object:
    raise RuntimeError("no database")


def test_a_failing_factory_fails_the_attempt_naming_it() -> None:
    agent = PythonAgent("shop:make", _broken_factory)
    with pytest.raises(AgentFailure, match="factory shop:make failed: RuntimeError: no database"):
        asyncio.run(agent.build(Attempt("run", "case", 1)))
