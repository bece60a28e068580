"""Agent services reached over HTTP (``--agent-url``, a running service).

One POST per turn with W3C ``traceparent`` (the runner's root span of the session, which the
runner exports) and ``baggage`` (run, case and conversation ids), and a JSON body from a
template (:func:`render_body`). The reply is the response's ``--reply-field`` (dotted path),
else its ``reply``, ``content``, ``message``, ``output``, ``answer`` or ``text`` field, else
the body text.

One service serves every attempt (``shared``): an agent revival restarts it with
``--revive-cmd`` (:mod:`tracegrade.runner.revival`), then waits until its port accepts
connections again.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping
from typing import Any

import httpx

from tracegrade.errors import ConfigError
from tracegrade.runner import telemetry
from tracegrade.runner.agents.base import (
    PLACEHOLDER,
    Agent,
    AgentFailure,
    Attempt,
    Message,
    Session,
    placeholder_values,
    reply_text,
    tail,
)
from tracegrade.runner.settle import SettleRule

DEFAULT_BODY = '{"message": "{input}"}'
REPLY_FIELDS = ("reply", "content", "message", "output", "answer", "text")


def parse_body(template: str) -> Any:
    """The parsed JSON body template (see :func:`render_body`).

    Raises:
        ConfigError: the template is not JSON, or names no ``{input}`` or ``{messages}``.
    """
    try:
        parsed = json.loads(template)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"--body is not JSON ({exc}): {template!r}") from exc
    if "{input}" not in template and "{messages}" not in template:
        raise ConfigError(
            '--body must contain "{input}" (the user\'s latest message) or "{messages}" '
            "(the conversation)"
        )
    return parsed


def render_body(template: Any, values: Mapping[str, str], messages: list[Message]) -> Any:
    """The template with placeholders filled: a string that is exactly ``"{messages}"``
    becomes the conversation list; ``{input}``, ``{case_id}``, ``{conversation_id}`` inside
    strings become their text."""
    if isinstance(template, str):
        if template == "{messages}":
            return [dict(m) for m in messages]
        return PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
    if isinstance(template, list):
        return [render_body(item, values, messages) for item in template]
    if isinstance(template, dict):
        return {key: render_body(value, values, messages) for key, value in template.items()}
    return template


def reply_from_response(response: httpx.Response, reply_field: str | None) -> str:
    """The reply in an HTTP response (see the module docstring).

    Raises:
        AgentFailure: ``reply_field`` is missing from a JSON response.
    """
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()
    if reply_field:
        for part in reply_field.split("."):
            if not isinstance(data, Mapping) or part not in data:
                raise AgentFailure(
                    f"the response has no field {reply_field!r}: {tail(response.text, 300)}"
                )
            data = data[part]
        return reply_text(data)
    if isinstance(data, Mapping):
        for key in REPLY_FIELDS:
            if isinstance(data.get(key), str):
                return str(data[key])
    return reply_text(data) if isinstance(data, str) else response.text.strip()


class HttpAgent(Agent):
    """A running agent service reached by HTTP POST (see the module docstring)."""

    kind = "http"

    def __init__(
        self,
        url: str,
        *,
        body: str = DEFAULT_BODY,
        headers: Mapping[str, str] | None = None,
        reply_field: str | None = None,
        quiet_s: float = 1.0,
        settle_timeout_s: float = 10.0,
    ):
        if not re.match(r"https?://", url):
            raise ConfigError(f"--agent-url {url!r}: expected an http:// or https:// URL")
        self.spec = self.url = url
        self.body = parse_body(body)
        self.headers = dict(headers or {})
        self.reply_field = reply_field
        self.settle = SettleRule(
            quiet_s=quiet_s,
            timeout_s=settle_timeout_s,
            by_trace_id=True,
            by_labels=True,
            min_spans=2,
        )
        self.export: telemetry.RunExport | None = None
        self.client: httpx.AsyncClient | None = None
        self.shared = True

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.export = telemetry.RunExport(http_endpoint, service_name=self.spec).open()
        self.client = httpx.AsyncClient(timeout=None, headers=self.headers)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.export is not None:
            await asyncio.to_thread(self.export.close)
        self.client, self.export = None, None

    async def start(self, attempt: Attempt) -> Session:
        return _HttpSession(self, attempt)

    def cannot_revive(self) -> str | None:
        if self.revive_command:
            return None
        return (
            f"the case asks for an agent revival, but nothing restarts the service at {self.url}: "
            "give --revive-cmd COMMAND (run by the shell; it must return once the service "
            "accepts requests again)"
        )

    async def restart(self, attempt: Attempt) -> Session:
        await wait_accepting(self.url, ACCEPT_TIMEOUT_S)
        return _HttpSession(self, attempt)


ACCEPT_TIMEOUT_S = 30.0
"""How long a restarted service may take to accept connections again (s)."""


async def wait_accepting(url: str, timeout_s: float, poll_s: float = 0.05) -> None:
    """Return once ``url``'s host and port accept a TCP connection.

    Raises:
        AgentFailure: they do not within ``timeout_s``.
    """
    parts = httpx.URL(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            _, writer = await asyncio.open_connection(parts.host, port)
        except OSError as exc:
            if asyncio.get_running_loop().time() >= deadline:
                raise AgentFailure(
                    f"the service at {url} did not accept connections within {timeout_s:g} s "
                    f"after --revive-cmd: {exc}"
                ) from exc
            await asyncio.sleep(poll_s)
            continue
        writer.close()
        return


class _HttpSession(Session):
    def __init__(self, agent: HttpAgent, attempt: Attempt):
        self.agent, self.attempt = agent, attempt
        self.span = attempt.start_span()
        self.trace_ids = (telemetry.trace_id_of(self.span),)
        self.headers = telemetry.propagation_headers(self.span, attempt.labels)

    async def send(self, messages: list[Message]) -> str:
        assert self.agent.client is not None
        body = render_body(self.agent.body, placeholder_values(messages, self.attempt), messages)
        try:
            response = await self.agent.client.post(self.agent.url, json=body, headers=self.headers)
        except httpx.HTTPError as exc:
            raise AgentFailure(
                f"POST {self.agent.url} failed: {type(exc).__name__}: {exc}"
            ) from exc
        if not response.is_success:
            raise AgentFailure(
                f"POST {self.agent.url} answered HTTP {response.status_code}: "
                f"{tail(response.text, 500)}"
            )
        return reply_from_response(response, self.agent.reply_field)

    async def finish(self, error: BaseException | None) -> None:
        telemetry.end_case_span(self.span, error)
        if self.agent.export is not None:
            await asyncio.to_thread(self.agent.export.flush)
