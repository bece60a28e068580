"""Which agent ``tracegrade run`` drives: :class:`AgentOptions` (``--agent``, ``--agent-cmd``,
``--agent-url`` and how the agent is reached) and :func:`make_agent`, the one place an
:class:`~tracegrade.runner.agents.base.Agent` is built from them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from tracegrade.errors import ConfigError
from tracegrade.runner.agents.base import Agent
from tracegrade.runner.agents.command import CommandAgent, InputFormat, OtlpProtocol
from tracegrade.runner.agents.http import DEFAULT_BODY, HttpAgent
from tracegrade.runner.agents.python import PythonAgent


@dataclass(frozen=True)
class AgentOptions:
    """Which agent (exactly one of ``ref`` ``module:function``, ``command``, ``url``) and how
    it is reached; seconds for the settle times."""

    ref: str | None = None
    command: str | None = None
    url: str | None = None
    input_format: InputFormat = "text"
    otlp_protocol: OtlpProtocol = "http/protobuf"
    body: str = DEFAULT_BODY
    headers: Sequence[str] = ()
    reply_field: str | None = None
    settle_quiet: float | None = None
    settle_timeout: float = 10.0
    revive_cmd: str | None = None
    """Shell command run on each agent revival (restarts an ``--agent-url`` service)."""


def _headers(values: Sequence[str]) -> dict[str, str]:
    headers = {}
    for value in values:
        name, sep, content = value.partition(":")
        if not sep or not name.strip():
            raise ConfigError(f"--header {value!r}: expected 'Name: value'")
        headers[name.strip()] = content.strip()
    return headers


def make_agent(options: AgentOptions) -> Agent:
    """The agent named by exactly one of ``--agent``, ``--agent-cmd``, ``--agent-url``, with
    ``--revive-cmd`` run on each revival.

    Raises:
        ConfigError: none or several given, or a bad spec (see each agent kind).
    """
    agent = _agent_of(options)
    agent.revive_command = options.revive_cmd or None
    return agent


def _agent_of(options: AgentOptions) -> Agent:
    given = [
        name
        for name, value in (
            ("--agent", options.ref),
            ("--agent-cmd", options.command),
            ("--agent-url", options.url),
        )
        if value
    ]
    if len(given) != 1:
        raise ConfigError(
            "give exactly one of --agent MODULE:FUNCTION, --agent-cmd COMMAND, --agent-url URL"
            + (f" (got {', '.join(given)})" if given else "")
        )
    quiet = options.settle_quiet
    if options.ref:
        return PythonAgent(options.ref)
    if options.command:
        return CommandAgent(
            options.command,
            input_format=options.input_format,
            protocol=options.otlp_protocol,
            quiet_s=0.2 if quiet is None else quiet,
            settle_timeout_s=options.settle_timeout,
        )
    return HttpAgent(
        options.url or "",
        body=options.body,
        headers=_headers(options.headers),
        reply_field=options.reply_field,
        quiet_s=1.0 if quiet is None else quiet,
        settle_timeout_s=options.settle_timeout,
    )
