"""Agent revival: end an attempt's session and start the agent again, as after a restart.

A case's ``revive`` turns (:attr:`tracegrade.dataset.Case.revived_turns`) test whether a
conversation survives a restart. Before such a turn, :class:`Sessions` ends the agent's
session (an in-process or HTTP agent's case span ends and is flushed), runs ``--revive-cmd``
when given, and starts a new session of the same attempt with the same conversation id
(:attr:`~tracegrade.runner.agents.Attempt.revival` counts the revivals):

- ``--agent-cmd``: every turn is a fresh process already; the new session has a new
  ``TRACEPARENT`` (so a new trace) and ``TRACEGRADE_REVIVED=1``;
- ``--agent module:factory``: a new agent callable from the factory (a plain function cannot
  be rebuilt, so its revival fails the case with the fix);
- ``--agent-url``: ``--revive-cmd`` restarts the service (the runner waits for it to exit 0,
  then for the service's port to accept connections); without it the case fails.

From the revived turn on the agent is sent only the messages since the revival
(:mod:`.conversation`): what came before, it must restore from its own storage by the
conversation id. ``context_preserved`` (:mod:`tracegrade.scoring.context`) then checks the
trace. A revival that fails (the agent cannot be revived, the command fails) fails the case
with the reason.

A running service serves every attempt, so restarting it revives every conversation in
progress: :class:`ConversationLock` runs an attempt with revivals of a shared agent alone
(others wait until it is done, and it waits for those in progress).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import AsyncIterator

from tracegrade.environment import TRACEGRADE_CONVERSATION_ID, TRACEGRADE_REVIVED
from tracegrade.runner.agents import Agent, AgentFailure, Attempt, Message, Session, tail


async def run_revive_command(command: str, attempt: Attempt) -> None:
    """Run ``--revive-cmd`` by the shell (its own process group, killed when the attempt is
    cancelled) with :envvar:`TRACEGRADE_CONVERSATION_ID` and :envvar:`TRACEGRADE_REVIVED`.

    Raises:
        AgentFailure: it exited with a non-zero code (with the end of its output).
    """
    env = {
        **os.environ,
        TRACEGRADE_CONVERSATION_ID: attempt.conversation_id,
        TRACEGRADE_REVIVED: "1",
    }
    process = await asyncio.create_subprocess_shell(
        command,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        output, _ = await process.communicate()
    except BaseException:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        raise
    if process.returncode != 0:
        text = tail(output.decode("utf-8", "replace"), 500)
        raise AgentFailure(
            f"--revive-cmd exited with code {process.returncode}"
            + (f": {text}" if text else " (no output)")
        )


class Sessions(Session):
    """An attempt's sessions, one after another: sends go to the current one, :meth:`revive`
    replaces it (see the module docstring); ``trace_ids`` are every session's."""

    def __init__(self, agent: Agent, attempt: Attempt, first: Session):
        self.agent, self.attempt, self.current = agent, attempt, first
        self.ended: list[Session] = []

    @classmethod
    async def start(cls, agent: Agent, attempt: Attempt) -> Sessions:
        """The attempt's first session.

        Raises:
            AgentFailure: the agent could not be started (e.g. its factory failed).
        """
        return cls(agent, attempt, await agent.start(attempt))

    @property
    def trace_ids(self) -> tuple[str, ...]:  # type: ignore[override]
        ids = [i for s in [*self.ended, self.current] for i in s.trace_ids]
        return tuple(dict.fromkeys(ids))

    @property
    def count(self) -> int:
        """How many sessions the attempt had so far."""
        return len(self.ended) + 1

    async def send(self, messages: list[Message]) -> str:
        return await self.current.send(messages)

    async def finish(self, error: BaseException | None) -> None:
        await self.current.finish(error)

    def diagnostics(self) -> str:
        return self.current.diagnostics()

    async def revive(self) -> None:
        why = self.agent.cannot_revive()
        if why is not None:
            raise AgentFailure(why)
        await self.current.finish(None)
        self.ended.append(self.current)
        self.attempt = self.attempt.revived()
        if self.agent.revive_command:
            await run_revive_command(self.agent.revive_command, self.attempt)
        self.current = await self.agent.restart(self.attempt)


class ConversationLock:
    """Conversations with a shared agent: many at once, except that one with revivals runs
    alone. Writer-preferring: once an attempt with revivals waits, new ones wait behind it."""

    def __init__(self) -> None:
        self._changed = asyncio.Condition()
        self._running = 0
        self._alone = False
        self._waiting_alone = 0

    @contextlib.asynccontextmanager
    async def hold(self, alone: bool) -> AsyncIterator[None]:
        """Hold a conversation (``alone``: with no other at the same time)."""
        async with self._changed:
            self._waiting_alone += alone
            try:
                await self._changed.wait_for(lambda: self._free(alone))
            finally:
                self._waiting_alone -= alone
            self._running += 1
            self._alone = alone
        try:
            yield
        finally:
            async with self._changed:
                self._running -= 1
                self._alone = False
                self._changed.notify_all()

    def _free(self, alone: bool) -> bool:
        if alone:
            return self._running == 0
        return not self._alone and self._waiting_alone == 0
