"""What every agent kind shares: the :class:`Agent` and :class:`Session` interfaces, one
:class:`Attempt` of a case, :class:`AgentFailure`, and the helpers that turn a conversation into
an agent's input and its output into reply text.

Correlation is always through OpenTelemetry, never through what the agent returns (the reply
only drives the conversation: the next turn and clarification follow-ups).
"""

from __future__ import annotations

import dataclasses
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry.trace import Span

from tracegrade.runner import telemetry
from tracegrade.runner.settle import SettleRule

Message = dict[str, str]
"""``{"role": "user" | "assistant", "content": str}``."""
STDERR_TAIL_CHARS = 2000
PLACEHOLDER = re.compile(r"\{(input|messages|case_id|conversation_id)\}")
"""The placeholders a command or an HTTP body template may contain."""


class AgentFailure(Exception):
    """The agent failed this attempt (crash, non-zero exit, HTTP error, exception); the message
    is the reason shown for the case."""


@dataclass(frozen=True)
class Attempt:
    """One run of one case: ``run_id`` is the correlation id put on its telemetry (the run's
    id, suffixed ``#k`` when cases are repeated), ``repeat`` is 1-based. ``conversation_id``
    names the conversation (kept across revivals); ``revival`` counts the agent revivals
    before the current session (0: the attempt's first session)."""

    run_id: str
    case_id: str
    repeat: int
    conversation_id: str = field(default_factory=lambda: secrets.token_hex(8))
    revival: int = 0

    @property
    def labels(self) -> dict[str, Any]:
        """The attributes linking the agent's telemetry to the attempt and its session (run,
        case, repeat, conversation id, revival): ``OTEL_RESOURCE_ATTRIBUTES``, W3C baggage."""
        return {
            **telemetry.case_attributes(self.run_id, self.case_id, self.repeat),
            **telemetry.session_labels(self.conversation_id, self.revival),
        }

    def start_span(self) -> Span:
        """Start the root span of this session (:func:`telemetry.start_case_span`), not
        current."""
        return telemetry.start_case_span(
            self.run_id, self.case_id, self.repeat, self.conversation_id, self.revival
        )

    def revived(self) -> Attempt:
        """The same attempt and conversation, after one more revival."""
        return dataclasses.replace(self, revival=self.revival + 1)


class Session:
    """One attempt in progress: :meth:`send` one turn, then :meth:`finish`. ``trace_ids``
    are the traces the runner knows belong to the attempt (its root span's)."""

    trace_ids: tuple[str, ...] = ()

    async def send(self, messages: list[Message]) -> str:
        """Send the conversation so far (ending with the user's message); the agent's reply.

        Raises:
            AgentFailure: the agent failed this turn.
        """
        raise NotImplementedError

    async def finish(self, error: BaseException | None) -> None:
        """End the session (end and flush the root span, if any)."""

    async def revive(self) -> None:
        """End the agent's session and start it again with the same conversation id, as after
        a server restart (:mod:`tracegrade.runner.revival`).

        Raises:
            AgentFailure: the agent cannot be revived (why, and the fix), or failed to.
        """
        raise AgentFailure("this session cannot revive its agent")

    def diagnostics(self) -> str:
        """What to add to a timeout's reason (e.g. the end of stderr); may be empty."""
        return ""


class Agent:
    """An agent kind: ``spec`` as given on the command line, ``settle`` how to wait for an
    attempt's traces. Call :meth:`open` once the receiver runs, :meth:`close` at the end.
    ``revive_command`` (``--revive-cmd``) is run by the shell on each revival, before
    :meth:`restart`; ``shared`` says one agent serves every attempt (a running service), so a
    revival restarts it for all of them."""

    kind = "agent"
    spec = ""
    settle = SettleRule()
    revive_command: str | None = None
    shared = False

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        """Prepare for a run whose receiver listens at these ``http://host:port`` endpoints."""

    async def close(self) -> None:
        """Release what :meth:`open` took."""

    async def start(self, attempt: Attempt) -> Session:
        """Start one attempt's first session."""
        raise NotImplementedError

    def cannot_revive(self) -> str | None:
        """Why this agent cannot be revived (with the fix), or None when it can."""
        return f"a {self.kind} agent cannot be revived"

    async def restart(self, attempt: Attempt) -> Session:
        """Start a session of ``attempt`` (``attempt.revival`` > 0) after the previous one
        ended, as the agent starts after a restart (each kind says how).

        Raises:
            AgentFailure: the agent could not be started again.
        """
        return await self.start(attempt)


def reply_text(value: Any) -> str:
    """An agent's return value as reply text: ``""`` for ``None``, a ``str`` as is, a
    mapping's ``content``/``reply``/``output`` string, else ``str(value)``."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("content", "reply", "output"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return str(value)


def placeholder_values(messages: list[Message], attempt: Attempt) -> dict[str, str]:
    """The text of each :data:`PLACEHOLDER` for this turn: ``input`` (the latest user message),
    ``messages`` (the conversation as JSON), ``case_id`` and ``conversation_id``."""
    return {
        "input": messages[-1]["content"],
        "messages": json.dumps(messages, ensure_ascii=False),
        "case_id": attempt.case_id,
        "conversation_id": attempt.conversation_id,
    }


def tail(text: str, limit: int = STDERR_TAIL_CHARS) -> str:
    """The last ``limit`` characters of ``text``, stripped."""
    text = text.strip()
    return text if len(text) <= limit else "…" + text[-limit:]


_ERROR_LINE = re.compile(r"^[\w.$:<>-]*(?:error|exception|panic|fatal)\b", re.IGNORECASE)
"""A line that states an error: Python's ``ValueError: ...`` (the last line of a traceback),
Node's ``Error: ...`` / ``TypeError: ...``, Go's ``panic: ...``, ``error: ...``, ``FATAL ...``."""


def error_line(stderr: str) -> str | None:
    """The line of an agent's stderr that says what went wrong: the last unindented line that
    states an error (see :data:`_ERROR_LINE`), else the last unindented line that is not a
    traceback header; None for an empty stderr. A traceback's frames are indented in Python,
    Node and Java, so they are never chosen."""
    lines = [line.rstrip() for line in stderr.splitlines() if line.strip()]
    top = [line for line in lines if not line[0].isspace()]
    stated = [line for line in top if _ERROR_LINE.match(line)]
    if stated:
        return stated[-1]
    plain = [line for line in top if not line.startswith("Traceback (most recent call last)")]
    return plain[-1] if plain else None
