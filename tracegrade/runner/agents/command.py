"""Agent commands (``--agent-cmd "..."``, any language): one process per turn, run by the shell.

The process gets ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (and the
traces/logs variants) pointing at the receiver, ``OTEL_RESOURCE_ATTRIBUTES`` with
``tracegrade.run_id`` and ``tracegrade.case_id`` appended to any value already set, and a
``TRACEPARENT`` shared by the session's turns (for SDKs that read it; the runner exports no
span of its own here). Input: stdin gets the latest user message (``--input-format text``) or
the conversation as JSON (``messages``); the placeholders ``{input}``, ``{messages}``,
``{case_id}`` and ``{conversation_id}`` in the command are replaced by shell-quoted values.
The reply is stdout. A non-zero exit, a crash (signal) or a hang past ``--timeout`` fails the
case with the end of stderr.

``TRACEGRADE_CONVERSATION_ID`` (and ``tracegrade.conversation_id`` in the resource
attributes) names the conversation. After an agent revival the session has a new
``TRACEPARENT`` and ``TRACEGRADE_REVIVED=1``, and the process must restore the conversation
itself (:mod:`tracegrade.runner.revival`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import shlex
import signal
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from opentelemetry.sdk.environment_variables import (
    OTEL_EXPORTER_OTLP_ENDPOINT,
    OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
    OTEL_EXPORTER_OTLP_PROTOCOL,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,
    OTEL_RESOURCE_ATTRIBUTES,
)

from tracegrade.environment import TRACEGRADE_CONVERSATION_ID, TRACEGRADE_REVIVED
from tracegrade.errors import ConfigError
from tracegrade.runner import telemetry
from tracegrade.runner.agents.base import (
    PLACEHOLDER,
    Agent,
    AgentFailure,
    Attempt,
    Message,
    Session,
    error_line,
    placeholder_values,
    tail,
)
from tracegrade.runner.settle import SettleRule

InputFormat = Literal["text", "messages"]
"""What the command's stdin gets: the latest user message, or the conversation as JSON."""
OtlpProtocol = Literal["http/protobuf", "grpc"]
"""The ``OTEL_EXPORTER_OTLP_PROTOCOL`` given to the command."""


def _fill(template: str, values: Mapping[str, str], quote: Callable[[str], str]) -> str:
    return PLACEHOLDER.sub(lambda m: quote(values[m.group(1)]), template)


class CommandAgent(Agent):
    """An agent command run by the shell, one process per turn (see the module docstring)."""

    kind = "command"

    def __init__(
        self,
        command: str,
        *,
        input_format: InputFormat = "text",
        protocol: OtlpProtocol = "http/protobuf",
        quiet_s: float = 0.2,
        settle_timeout_s: float = 10.0,
        cwd: str | Path | None = None,
    ):
        if not command.strip():
            raise ConfigError("--agent-cmd is empty")
        self.spec = self.command = command
        self.input_format = input_format
        self.protocol = protocol
        self.cwd = cwd
        self.settle = SettleRule(
            quiet_s=quiet_s,
            timeout_s=settle_timeout_s,
            by_labels=True,
            min_spans=1,
            done_when_ended=True,  # settling starts once the turn's process has exited
        )
        self.endpoint = ""

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.endpoint = grpc_endpoint if self.protocol == "grpc" else http_endpoint

    def _signal_url(self, signal: str) -> str:
        """One signal's endpoint: the receiver's (gRPC), or its ``/v1/SIGNAL`` path (HTTP)."""
        return self.endpoint if self.protocol == "grpc" else f"{self.endpoint}/v1/{signal}"

    def environment(self, attempt: Attempt, traceparent: str) -> dict[str, str]:
        """The process environment of one attempt (see the module docstring)."""
        env = dict(os.environ)
        env.update(
            {
                OTEL_EXPORTER_OTLP_ENDPOINT: self.endpoint,
                OTEL_EXPORTER_OTLP_PROTOCOL: self.protocol,
                OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: self._signal_url("traces"),
                OTEL_EXPORTER_OTLP_LOGS_ENDPOINT: self._signal_url("logs"),
                OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: self.protocol,
                OTEL_EXPORTER_OTLP_LOGS_PROTOCOL: self.protocol,
                OTEL_RESOURCE_ATTRIBUTES: telemetry.resource_attributes_env(
                    os.environ.get(OTEL_RESOURCE_ATTRIBUTES), attempt.labels
                ),
                "TRACEPARENT": traceparent,
                TRACEGRADE_CONVERSATION_ID: attempt.conversation_id,
            }
        )
        if attempt.revival:
            env[TRACEGRADE_REVIVED] = "1"
        else:
            env.pop(TRACEGRADE_REVIVED, None)
        return env

    async def start(self, attempt: Attempt) -> Session:
        traceparent = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
        return _CommandSession(self, attempt, self.environment(attempt, traceparent))

    def cannot_revive(self) -> str | None:
        return None  # every turn is a fresh process: a revival is a new session


async def _drain(stream: asyncio.StreamReader | None, sink: bytearray) -> None:
    while stream is not None and (chunk := await stream.read(65536)):
        sink.extend(chunk)


class _CommandSession(Session):
    def __init__(self, agent: CommandAgent, attempt: Attempt, env: dict[str, str]):
        self.agent, self.attempt, self.env = agent, attempt, env
        self.stderr = bytearray()

    async def send(self, messages: list[Message]) -> str:
        values = placeholder_values(messages, self.attempt)
        command = _fill(self.agent.command, values, shlex.quote)
        stdin = values["input"] if self.agent.input_format == "text" else values["messages"]
        process = await asyncio.create_subprocess_shell(
            command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=self.env,
            cwd=self.agent.cwd,
            start_new_session=True,
        )
        stdout, self.stderr = bytearray(), bytearray()
        io: list[asyncio.Future[None]] = [
            asyncio.ensure_future(self._feed(process, stdin.encode())),
            asyncio.ensure_future(_drain(process.stdout, stdout)),
            asyncio.ensure_future(_drain(process.stderr, self.stderr)),
        ]
        try:
            code = await _exited(process, io)
        except BaseException:
            _kill(process)
            await _finish(process, io, 0)
            raise
        if code != 0:
            raise AgentFailure(f"{_exit_reason(code)}{self.diagnostics()}")
        return stdout.decode("utf-8", "replace").strip()

    @staticmethod
    async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
        assert process.stdin is not None
        try:
            process.stdin.write(data)
            await process.stdin.drain()
            process.stdin.close()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent does not read stdin

    def diagnostics(self) -> str:
        """``: ERROR LINE`` then, on the next lines, ``stderr: TAIL`` for a failed turn: the
        line that states the error is the reason's first line (what progress lines show),
        the stderr tail follows it."""
        text = self.stderr.decode("utf-8", "replace")
        if not text.strip():
            return "; no stderr"
        line = error_line(text)
        return (f": {line}" if line else "") + f"\nstderr: {tail(text)}"


EXIT_POLL_S = 0.005
OUTPUT_GRACE_S = 0.5
"""After the agent process exits, how long its pipes may take to deliver the rest of their
output; a background child that inherited them and keeps them open is not waited for."""


async def _exited(process: asyncio.subprocess.Process, io: Sequence[asyncio.Future[None]]) -> int:
    """The exit code, once the agent process itself has exited: the turn ends there, not
    when its pipes close (``process.wait()`` waits for both), since a background child may
    hold stdout open for as long as it runs. Then its output is read for at most
    :data:`OUTPUT_GRACE_S`."""
    pending = set(io)
    while process.returncode is None:
        if pending:
            _, pending = await asyncio.wait(pending, timeout=EXIT_POLL_S)
        else:
            await asyncio.sleep(EXIT_POLL_S)
    await _finish(process, io, OUTPUT_GRACE_S)
    return process.returncode


async def _finish(
    process: asyncio.subprocess.Process, io: Sequence[asyncio.Future[None]], grace_s: float
) -> None:
    """Let the pipe tasks end within ``grace_s``, then cancel them and close the pipes."""
    _, pending = await asyncio.wait(io, timeout=grace_s) if grace_s else (set(), set(io))
    for task in pending:
        task.cancel()
    await asyncio.gather(*io, return_exceptions=True)
    transport = getattr(process, "_transport", None)  # asyncio keeps the pipes there
    if transport is not None:
        transport.close()


def _exit_reason(code: int) -> str:
    """A negative code is a signal; so is 128 + n from the shell (its convention for a child
    killed by signal n)."""
    number = -code if code < 0 else code - 128 if 128 < code < 128 + signal.NSIG else None
    if number is None:
        return f"agent command exited with code {code}"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"agent command crashed ({name}{f', exit code {code}' if code > 0 else ''})"


def _kill(process: asyncio.subprocess.Process) -> None:
    """Kill the agent's whole process group (the shell and what it started)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
