"""In-process Python agents (``--agent module:function`` or ``--agent module:factory``).

The runner starts a root span per attempt of a case (``tracegrade case <id>``, attributes
``tracegrade.run_id``, ``tracegrade.case_id``, ``tracegrade.repeat``) and makes it current while
the function runs, so the agent's spans are its children; the runner's provider exports them
(:mod:`tracegrade.runner.telemetry`) and the runner force-flushes when the case ends. The
function is sync or async. Its argument, decided by the first parameter's annotation: ``str`` ->
the latest user message; a list/sequence -> the conversation ``[{"role": "user"|"assistant",
"content": str}, ...]`` ending with the user's message; both or unannotated -> the message on
the first turn and the conversation on later turns. Its return value is the reply (a ``str``; a
mapping's ``content``/``reply``/``output``; else ``str(value)``).

A callable that takes no required parameter is a *factory* (a function, or a class whose
constructor needs nothing): each session of an attempt calls it (with ``conversation_id=``
when it takes that keyword) for a new agent callable, so an agent revival rebuilds the agent
as a server restart would (:mod:`tracegrade.runner.revival`). The conversation id is also in
the OpenTelemetry context while the agent runs: W3C baggage ``tracegrade.conversation_id``
(``opentelemetry.baggage.get_baggage``), and ``gen_ai.conversation.id`` on the case span.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import inspect
import os
import sys
import threading
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from opentelemetry import baggage, trace
from opentelemetry import context as otel_context

from tracegrade.errors import ConfigError
from tracegrade.runner import telemetry
from tracegrade.runner.agents.base import (
    Agent,
    AgentFailure,
    Attempt,
    Message,
    Session,
    reply_text,
)
from tracegrade.runner.settle import SettleRule

ArgumentKind = Literal["text", "messages", "either"]
CONVERSATION_ID = "conversation_id"
"""The keyword a factory may take: the attempt's conversation id."""


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
    return cast(Callable[..., Any], target)


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
        # RuntimeError: the run ended (timeout, Ctrl-C) before this thread did
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, ok, value)

    def work() -> None:
        try:
            value = ctx.run(function, argument)
        except BaseException as exc:  # delivered to the awaiting case
            deliver(False, exc)
        else:
            deliver(True, value)

    threading.Thread(target=work, name="tracegrade-agent", daemon=True).start()
    return future


def is_factory(target: Callable[..., Any]) -> bool:
    """True when ``target`` takes no required parameter: an agent *factory*, called to build
    the agent callable (a class whose constructor needs nothing is one too)."""
    try:
        parameters = inspect.signature(target).parameters.values()
    except (TypeError, ValueError):
        return False
    return all(
        p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters
    )


def _takes_conversation_id(factory: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False
    return CONVERSATION_ID in parameters or any(
        p.kind == p.VAR_KEYWORD for p in parameters.values()
    )


@dataclass(frozen=True)
class AgentCallable:
    """An agent callable ready to be called: what its first parameter takes, and whether it is
    a coroutine function."""

    function: Callable[..., Any]
    argument: ArgumentKind
    asynchronous: bool

    @classmethod
    def of(cls, function: Callable[..., Any]) -> AgentCallable:
        """Inspect ``function`` (see :func:`argument_kind`).

        Raises:
            ConfigError: it takes no positional parameter.
        """
        return cls(function, argument_kind(function), inspect.iscoroutinefunction(function))

    def argument_for(self, messages: list[Message]) -> str | list[Message]:
        """The function's argument for this turn."""
        if self.argument == "text" or (self.argument == "either" and len(messages) == 1):
            return messages[-1]["content"]
        return [dict(m) for m in messages]


class PythonAgent(Agent):
    """An in-process agent function, or a factory of one (see the module docstring)."""

    kind = "python"

    def __init__(self, spec: str, function: Callable[..., Any] | None = None):
        self.spec = spec
        target = function or load_function(spec)
        self.factory = target if is_factory(target) else None
        self.built = None if self.factory else AgentCallable.of(target)
        self.settle = SettleRule(
            quiet_s=0.0, require_ended=True, by_trace_id=True, min_spans=1, poll_s=0.01
        )
        self.export: telemetry.RunExport | None = None

    async def open(self, http_endpoint: str, grpc_endpoint: str) -> None:
        self.export = telemetry.RunExport(http_endpoint, service_name=self.spec).open()

    async def close(self) -> None:
        if self.export is not None:
            await asyncio.to_thread(self.export.close)
            self.export = None

    async def build(self, attempt: Attempt) -> AgentCallable:
        """The agent callable of a new session: the function, or a new one from the factory
        (called in a thread, with ``conversation_id=`` when it takes it; awaited when it
        returns an awaitable).

        Raises:
            AgentFailure: the factory raised, or returned no usable callable.
        """
        if self.factory is None:
            assert self.built is not None
            return self.built
        kwargs = {}
        if _takes_conversation_id(self.factory):
            kwargs[CONVERSATION_ID] = attempt.conversation_id
        try:
            made = await asyncio.to_thread(self.factory, **kwargs)
            if inspect.isawaitable(made):
                made = await made
            if not callable(made):
                raise ConfigError(f"it returned {made!r}, not a callable")
            return AgentCallable.of(made)
        except Exception as exc:  # the factory's failure fails the case
            raise AgentFailure(
                f"agent factory {self.spec} failed: {type(exc).__name__}: {exc}"
            ) from exc

    async def start(self, attempt: Attempt) -> Session:
        return _PythonSession(self, attempt, await self.build(attempt))

    def cannot_revive(self) -> str | None:
        if self.factory is not None:
            return None
        return (
            f"--agent {self.spec} is the agent function itself, which cannot be rebuilt after a "
            "revival: give --agent MODULE:FACTORY, a callable taking no arguments (or only "
            "conversation_id=) that returns the agent function"
        )


class _PythonSession(Session):
    def __init__(self, agent: PythonAgent, attempt: Attempt, built: AgentCallable):
        self.agent, self.built = agent, built
        self.span = attempt.start_span()
        context = trace.set_span_in_context(self.span)
        for key, value in telemetry.session_labels(
            attempt.conversation_id, attempt.revival
        ).items():
            context = baggage.set_baggage(key, str(value), context)
        self.context = context
        self.trace_ids = (telemetry.trace_id_of(self.span),)

    async def send(self, messages: list[Message]) -> str:
        built = self.built
        argument = built.argument_for(messages)
        token = otel_context.attach(self.context)
        try:
            if built.asynchronous:
                value = await built.function(argument)
            else:
                value = await _in_daemon_thread(built.function, argument)
            if inspect.isawaitable(value):
                value = await value
        finally:
            otel_context.detach(token)
        return reply_text(value)

    async def finish(self, error: BaseException | None) -> None:
        telemetry.end_case_span(self.span, error)
        if self.agent.export is not None:
            await asyncio.to_thread(self.agent.export.flush)
