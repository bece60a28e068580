"""The three kinds of agent ``tracegrade run`` drives, and how each is linked to its case.

Correlation is always through OpenTelemetry, never through what the agent returns (the reply
only drives the conversation: the next turn and clarification follow-ups):

- :class:`PythonAgent` (``--agent module:function``): the runner starts a root span per
  attempt of a case (``tracegrade case <id>``, attributes ``tracegrade.run_id``,
  ``tracegrade.case_id``, ``tracegrade.repeat``) and makes it current while the function
  runs, so the agent's spans are its children; the runner's provider exports them
  (:mod:`.telemetry`) and the runner force-flushes when the case ends. The function is sync
  or async. Its argument, decided by the first parameter's annotation: ``str`` -> the latest
  user message; a list/sequence -> the conversation ``[{"role": "user"|"assistant",
  "content": str}, ...]`` ending with the user's message; both or unannotated -> the message
  on the first turn and the conversation on later turns. Its return value is the reply (a
  ``str``; a mapping's ``content``/``reply``/``output``; else ``str(value)``).
- :class:`CommandAgent` (``--agent-cmd "..."``, any language): one process per turn, run by
  the shell, with ``OTEL_EXPORTER_OTLP_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_PROTOCOL`` (and the
  traces/logs variants) pointing at the receiver, ``OTEL_RESOURCE_ATTRIBUTES`` with
  ``tracegrade.run_id`` and ``tracegrade.case_id`` appended to any value already set, and a
  ``TRACEPARENT`` shared by the attempt's turns (for SDKs that read it; the runner exports no
  span of its own here). Input: stdin gets the latest user message (``--input-format
  text``) or the conversation as JSON (``messages``); the placeholders ``{input}``,
  ``{messages}``, ``{case_id}`` and ``{conversation_id}`` in the command are replaced by
  shell-quoted values. The reply is stdout. A non-zero exit, a crash (signal) or a hang past
  ``--timeout`` fails the case with the end of stderr.
- :class:`HttpAgent` (``--agent-url``, a running service): one POST per turn with W3C
  ``traceparent`` (the runner's root span of the attempt, which the runner exports) and
  ``baggage`` (run and case ids), and a JSON body from a template (:func:`render_body`).
  The reply is the response's ``--reply-field`` (dotted path), else its ``reply``,
  ``content``, ``message``, ``output``, ``answer`` or ``text`` field, else the body text.
"""

from __future__ import annotations

import asyncio
import contextvars
import importlib
import inspect
import json
import os
import re
import secrets
import shlex
import signal
import sys
import threading
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import httpx
from opentelemetry import context as otel_context
from opentelemetry import trace

from tracegrade.errors import ConfigError
from tracegrade.runner import telemetry
from tracegrade.runner.settle import SettleRule

Message = dict[str, str]
"""``{"role": "user" | "assistant", "content": str}``."""
STDERR_TAIL_CHARS = 2000
REPLY_FIELDS = ("reply", "content", "message", "output", "answer", "text")
PLACEHOLDER = re.compile(r"\{(input|messages|case_id|conversation_id)\}")


class AgentFailure(Exception):
    """The agent failed this attempt (crash, non-zero exit, HTTP error, exception); the message
    is the reason shown for the case."""


@dataclass(frozen=True)
class Attempt:
    """One run of one case: ``run_id`` is the correlation id put on its telemetry (the run's
    id, suffixed ``#k`` when cases are repeated), ``repeat`` is 1-based."""

    run_id: str
    case_id: str
    repeat: int
    conversation_id: str = field(default_factory=lambda: secrets.token_hex(8))

    @property
    def labels(self) -> dict[str, Any]:
        return telemetry.case_attributes(self.run_id, self.case_id, self.repeat)


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
        """End the attempt (end and flush the root span, if any)."""

    def diagnostics(self) -> str:
        """What to add to a timeout's reason (e.g. the end of stderr); may be empty."""
        return ""


class Agent:
    """An agent kind: ``spec`` as given on the command line, ``settle`` how to wait for an
    attempt's traces. Call :meth:`open` once the receiver runs, :meth:`close` at the end."""

    kind = "agent"
    spec = ""
    settle = SettleRule()

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        """Prepare for a run whose receiver listens at these ``http://host:port`` endpoints."""

    async def close(self) -> None:
        """Release what :meth:`open` took."""

    async def start(self, attempt: Attempt) -> Session:
        """Start one attempt."""
        raise NotImplementedError


# --- in-process Python ----------------------------------------------------------------------------------

ArgumentKind = Literal["text", "messages", "either"]


def load_function(spec: str) -> Callable[..., Any]:
    """The callable named by ``module:function`` (a dotted attribute path after the colon);
    the working directory is importable, as with ``python -m``.

    Raises:
        ConfigError: a malformed spec, a module that fails to import, a missing or
            non-callable attribute.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigError(f"--agent {spec!r}: expected module:function, e.g. my_agent:answer")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:
        raise ConfigError(
            f"--agent {spec!r}: cannot import {module_name}: {type(exc).__name__}: {exc}"
        ) from exc
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"--agent {spec!r}: {module_name} has no attribute {attr!r}")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"--agent {spec!r}: {attr} is not callable")
    return target


_UNIONS = (typing.Union, type(int | str))


def _is_listy(annotation: Any) -> bool:
    origin = typing.get_origin(annotation) or annotation
    return (
        inspect.isclass(origin)
        and issubclass(origin, Iterable)
        and not issubclass(origin, (str, bytes, Mapping))
    )


def _kind_of(annotation: Any) -> ArgumentKind:
    options = (
        typing.get_args(annotation) if typing.get_origin(annotation) in _UNIONS else (annotation,)
    )
    text = any(o is str for o in options)
    listy = any(_is_listy(o) for o in options)
    return "text" if text and not listy else "messages" if listy and not text else "either"


def argument_kind(function: Callable[..., Any]) -> ArgumentKind:
    """What the function's first parameter takes (see the module docstring).

    Raises:
        ConfigError: the function takes no positional parameter.
    """
    try:
        parameters = [
            p
            for p in inspect.signature(function).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL)
        ]
    except (TypeError, ValueError):
        return "either"
    if not parameters:
        raise ConfigError(
            f"agent function {getattr(function, '__qualname__', function)!r} must take the user "
            "message (or the conversation) as its first argument"
        )
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # unresolvable string annotations: decide per turn
        return "either"
    annotation = hints.get(parameters[0].name, inspect.Parameter.empty)
    return "either" if annotation is inspect.Parameter.empty else _kind_of(annotation)


def reply_text(value: Any) -> str:
    """An agent's return value as reply text (see the module docstring)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in ("content", "reply", "output"):
            if isinstance(value.get(key), str):
                return value[key]
    return str(value)


def _in_daemon_thread(function: Callable[[Any], Any], argument: Any) -> asyncio.Future[Any]:
    """Run a sync function in a daemon thread with the current contextvars (so the case span
    is current there); a hung function cannot block the process from exiting."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    ctx = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if not future.done():
            (future.set_result if ok else future.set_exception)(value)

    def deliver(ok: bool, value: Any) -> None:
        try:
            loop.call_soon_threadsafe(settle, ok, value)
        except RuntimeError:  # the run ended (timeout, Ctrl-C) before this thread did
            pass

    def work() -> None:
        try:
            value = ctx.run(function, argument)
        except BaseException as exc:  # delivered to the awaiting case
            deliver(False, exc)
        else:
            deliver(True, value)

    threading.Thread(target=work, name="tracegrade-agent", daemon=True).start()
    return future


class PythonAgent(Agent):
    """An in-process agent function (see the module docstring)."""

    kind = "python"

    def __init__(self, spec: str, function: Callable[..., Any] | None = None):
        self.spec = spec
        self.function = function or load_function(spec)
        self.argument = argument_kind(self.function)
        self.asynchronous = inspect.iscoroutinefunction(self.function)
        self.settle = SettleRule(
            quiet_s=0.0, require_ended=True, by_trace_id=True, min_spans=1, poll_s=0.01
        )
        self.export: telemetry.RunExport | None = None

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.export = telemetry.RunExport(http_endpoint).open()

    async def close(self) -> None:
        if self.export is not None:
            await asyncio.to_thread(self.export.close)
            self.export = None

    def argument_for(self, messages: list[Message]) -> str | list[Message]:
        """The function's argument for this turn."""
        if self.argument == "text" or (self.argument == "either" and len(messages) == 1):
            return messages[-1]["content"]
        return [dict(m) for m in messages]

    async def start(self, attempt: Attempt) -> Session:
        return _PythonSession(self, attempt)


class _PythonSession(Session):
    def __init__(self, agent: PythonAgent, attempt: Attempt):
        self.agent = agent
        self.span = telemetry.start_case_span(attempt.run_id, attempt.case_id, attempt.repeat)
        self.context = trace.set_span_in_context(self.span)
        self.trace_ids = (telemetry.trace_id_of(self.span),)

    async def send(self, messages: list[Message]) -> str:
        argument = self.agent.argument_for(messages)
        token = otel_context.attach(self.context)
        try:
            if self.agent.asynchronous:
                value = await self.agent.function(argument)
            else:
                value = await _in_daemon_thread(self.agent.function, argument)
            if inspect.isawaitable(value):
                value = await value
        finally:
            otel_context.detach(token)
        return reply_text(value)

    async def finish(self, error: BaseException | None) -> None:
        telemetry.end_case_span(self.span, error)
        if self.agent.export is not None:
            await asyncio.to_thread(self.agent.export.flush)


# --- subprocess -------------------------------------------------------------------------------------------


def _fill(template: str, values: Mapping[str, str], quote: Callable[[str], str]) -> str:
    return PLACEHOLDER.sub(lambda m: quote(values[m.group(1)]), template)


def _values(messages: list[Message], attempt: Attempt) -> dict[str, str]:
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


class CommandAgent(Agent):
    """An agent command run by the shell, one process per turn (see the module docstring)."""

    kind = "command"

    def __init__(
        self,
        command: str,
        *,
        input_format: Literal["text", "messages"] = "text",
        protocol: Literal["http/protobuf", "grpc"] = "http/protobuf",
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
            quiet_s=quiet_s, timeout_s=settle_timeout_s, by_labels=True, min_spans=1
        )
        self.endpoint = ""

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.endpoint = grpc_endpoint if self.protocol == "grpc" else http_endpoint

    def environment(self, attempt: Attempt, traceparent: str) -> dict[str, str]:
        """The process environment of one attempt (see the module docstring)."""
        env = dict(os.environ)
        signal_url = (
            (lambda s: self.endpoint)
            if self.protocol == "grpc"
            else (lambda s: f"{self.endpoint}/v1/{s}")
        )
        env.update(
            {
                "OTEL_EXPORTER_OTLP_ENDPOINT": self.endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": self.protocol,
                "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": signal_url("traces"),
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": signal_url("logs"),
                "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": self.protocol,
                "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": self.protocol,
                "OTEL_RESOURCE_ATTRIBUTES": telemetry.resource_attributes_env(
                    os.environ.get("OTEL_RESOURCE_ATTRIBUTES"), attempt.labels
                ),
                "TRACEPARENT": traceparent,
            }
        )
        return env

    async def start(self, attempt: Attempt) -> Session:
        traceparent = f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-01"
        return _CommandSession(self, attempt, self.environment(attempt, traceparent))


async def _drain(stream: asyncio.StreamReader | None, sink: bytearray) -> None:
    while stream is not None and (chunk := await stream.read(65536)):
        sink.extend(chunk)


class _CommandSession(Session):
    def __init__(self, agent: CommandAgent, attempt: Attempt, env: dict[str, str]):
        self.agent, self.attempt, self.env = agent, attempt, env
        self.stderr = bytearray()

    async def send(self, messages: list[Message]) -> str:
        values = _values(messages, self.attempt)
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
        try:
            await asyncio.gather(
                self._feed(process, stdin.encode()),
                _drain(process.stdout, stdout),
                _drain(process.stderr, self.stderr),
            )
            code = await process.wait()
        except BaseException:
            _kill(process)
            await process.wait()
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
        text = tail(self.stderr.decode("utf-8", "replace"))
        return f"; stderr: {text}" if text else "; no stderr"


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
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# --- HTTP service -------------------------------------------------------------------------------------------

DEFAULT_BODY = '{"message": "{input}"}'


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
                return data[key]
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

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.export = telemetry.RunExport(http_endpoint).open()
        self.client = httpx.AsyncClient(timeout=None, headers=self.headers)

    async def close(self) -> None:
        if self.client is not None:
            await self.client.aclose()
        if self.export is not None:
            await asyncio.to_thread(self.export.close)
        self.client, self.export = None, None

    async def start(self, attempt: Attempt) -> Session:
        return _HttpSession(self, attempt)


class _HttpSession(Session):
    def __init__(self, agent: HttpAgent, attempt: Attempt):
        self.agent, self.attempt = agent, attempt
        self.span = telemetry.start_case_span(attempt.run_id, attempt.case_id, attempt.repeat)
        self.trace_ids = (telemetry.trace_id_of(self.span),)
        self.headers = telemetry.propagation_headers(self.span, attempt.labels)

    async def send(self, messages: list[Message]) -> str:
        assert self.agent.client is not None
        body = render_body(self.agent.body, _values(messages, self.attempt), messages)
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
