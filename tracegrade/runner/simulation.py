"""Conversations with simulated users: who plays a case's ``user``, and the conversation
they hold with the agent.

After the case's scripted turns (if any), the simulated user (:mod:`tracegrade.dataset.
simulated`) takes over (:meth:`Simulation.play`): with no scripted opening it writes the first
message; then, after each agent reply, it judges the reply (goal met? give up? did the agent
ask again for a fact already given?) and, unless the conversation ends, sends its next
message. The conversation ends when the goal is met, the user gives up, or ``max_turns`` user
messages were sent (the last reply is still judged). Revived turns (``revive``) revive the
agent before the simulated message of that turn, as for scripted turns. Every agent kind works
alike: the simulated user only sends messages through the session.

Who plays it (:class:`Simulators`, ``--simulator``): ``scripted`` (the case's ``replies`` and
``stop_when``; a case without them cannot run), ``llm`` (a model behind the judge's client:
:mod:`tracegrade.judge.simulate`; every case, its ``replies`` unused), or ``auto`` (the
default: scripted for a case with ``replies``, the model for the others). A scripted user
with no opening message (no ``input`` or ``turns``) is an error of the case.

The model's steps are cached in the store (the judge cache, keyed by
:func:`~tracegrade.judge.simulate.step_key`, through the run's store worker): a rerun whose
agent replies the same is answered from the cache, reproduces the conversation and costs
nothing. Each repeat of a case plays with a seed of its own
(:func:`~tracegrade.judge.simulate.repeat_settings`): the repeats are different simulated
users, each reproduced by a rerun. Every step is a span of the simulated user's own trace
(:class:`~tracegrade.runner.telemetry.SimulatorExport`): the model's calls never mix with the
agent's spans, and their tokens and cost are counted apart (:attr:`Simulators.usage`, each
attempt's ``simulation.usage``). A failing model ends that conversation (``error``), which
fails the case, not the run.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, Status, StatusCode

from tracegrade.dataset import Case
from tracegrade.dataset.simulated import SimulatedUser, given_at
from tracegrade.errors import ConfigError
from tracegrade.judge.client import JudgeClient, JudgeError, JudgeUsage
from tracegrade.judge.settings import JudgeSettings
from tracegrade.judge.simulate import Step, ask_step, repeat_settings, step_key, step_messages
from tracegrade.runner.agents import Attempt, Message, Session
from tracegrade.runner.conversation import Conversation, exchange, revive_before
from tracegrade.runner.settle import StoreWorker
from tracegrade.runner.telemetry import SimulatorExport, trace_id_of
from tracegrade.scoring.goals import AskedAgain, EndedBy, GoalOutcome, reached_rate
from tracegrade.store.judge_cache import JudgeCache

SimulatorMode = Literal["auto", "scripted", "llm"]
CACHE_RUBRIC = "simulated_user"
"""The judge cache's ``rubric`` column for a simulated user's steps."""


@dataclass(frozen=True)
class Played:
    """One step of a simulated user: the turn whose agent reply it judged (0: the opening),
    its verdict, the message it sent (None when it ended the conversation or the turns ran
    out), and whether the model's answer came from the cache."""

    turn: int
    goal_reached: bool
    give_up: bool
    reason: str
    message: str | None
    sent: bool = False
    cached: bool = False
    named: tuple[str, ...] = ()
    """The facts the model says the agent asked for although given (an LLM user)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {**dataclasses.asdict(self), "named": list(self.named)}


def _clip(text: str, limit: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass
class Simulation:
    """One attempt's simulated user: what it played, how it ended, what its model spent and
    the trace of its own spans (see the module docstring)."""

    case: Case
    attempt: Attempt
    simulators: Simulators
    worker: StoreWorker | None = None
    steps: list[Played] = field(default_factory=list)
    outcome: GoalOutcome | None = None
    usage: JudgeUsage = field(default_factory=JudgeUsage)
    trace_id: str | None = None
    _asked: list[AskedAgain] = field(default_factory=list)

    @property
    def user(self) -> SimulatedUser:
        assert self.case.user is not None
        return self.case.user

    @property
    def kind(self) -> str:
        """``scripted`` or ``llm``."""
        return self.simulators.kind(self.case)

    @property
    def settings(self) -> JudgeSettings:
        """The model's settings for this attempt: the run's, with the repeat's seed."""
        return repeat_settings(self.simulators.settings, self.attempt.repeat)

    @property
    def label(self) -> str:
        """Who played the user: ``scripted`` or ``llm:MODEL``."""
        return "scripted" if self.kind == "scripted" else f"llm:{self.simulators.model}"

    def to_dict(self) -> dict[str, Any]:
        """The attempt's ``simulation`` entry of the run document."""
        outcome = self.outcome.to_dict() if self.outcome else None
        seed = {"seed": self.settings.seed} if self.kind == "llm" else {}
        return {
            **(outcome or {"simulator": self.label}),
            **seed,
            "steps": [s.to_dict() for s in self.steps],
            "trace_id": self.trace_id,
            "usage": self.usage.to_dict(),
        }

    async def play(self, session: Session, conversation: Conversation) -> None:
        """Hold the rest of the conversation as the simulated user (module docstring).

        Raises:
            AgentFailure: the agent failed a turn or could not be revived.
        """
        exporter = self.simulators.export
        span = (
            exporter.conversation_span(
                self.attempt.run_id, self.attempt.case_id, self.attempt.repeat, self.label
            )
            if exporter
            else None
        )
        if span is not None:
            self.trace_id = trace_id_of(span)
        failure: BaseException | None = None
        try:
            await self._converse(session, conversation, span)
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if span is not None:
                if failure is not None:
                    span.set_status(Status(StatusCode.ERROR, f"{type(failure).__name__}"))
                span.end()
                await asyncio.to_thread(exporter.flush)  # type: ignore[union-attr]

    async def _converse(
        self, session: Session, conversation: Conversation, span: Span | None
    ) -> None:
        revived = set(self.case.revived_turns)
        if not conversation.messages:
            opening = await self._step(conversation.messages, 0, span)
            if opening is None:
                return
            if not opening.message:
                self.outcome = self._outcome("error", "no opening message was written", 0)
                return
            self.steps[-1] = dataclasses.replace(opening, sent=True)
            await exchange(session, conversation, opening.message)
        while True:
            turns = sum(1 for m in conversation.messages if m["role"] == "user")
            step = await self._step(conversation.messages, turns, span)
            if step is None:
                return
            ended = self._ended(step, turns)
            self._note_asked(step, conversation.messages, turns)
            self.steps[-1] = dataclasses.replace(step, sent=ended is None)
            if ended is not None:
                self.outcome = self._outcome(ended, step.reason, turns)
                return
            if turns + 1 in revived:
                await revive_before(session, conversation, turns + 1)
            await exchange(session, conversation, step.message or "")

    def _ended(self, step: Played, turns: int) -> EndedBy | None:
        if step.goal_reached:
            return "goal"
        if step.give_up:
            return "gave_up"
        if turns >= self.user.max_turns:
            return "max_turns"
        return None

    def _outcome(self, ended: EndedBy, reason: str, turns: int) -> GoalOutcome:
        return GoalOutcome(
            reached=ended == "goal",
            ended_by=ended,
            turns=turns,
            max_turns=self.user.max_turns,
            reason=reason,
            asked_again=tuple(self._asked),
            simulator=self.label,
        )

    def _note_asked(self, step: Played, messages: Sequence[Message], turns: int) -> None:
        """The facts the agent's reply in turn ``turns`` asked for although given before: those
        the user's answer gives again, and those the model names."""
        given = given_at(self.user, messages)
        named = [*self.user.facts_in(step.message or ""), *step.named]
        for fact in dict.fromkeys(named):
            if fact in given and fact not in {a.fact for a in self._asked}:
                self._asked.append(AskedAgain(fact, given[fact], turns))

    async def _step(
        self, messages: Sequence[Message], turn: int, span: Span | None
    ) -> Played | None:
        """The user's step after the agent's reply in ``turn`` (0: the opening); None when
        the simulated user failed (the outcome then says why)."""
        try:
            if self.kind == "scripted":
                played = self._scripted(messages, turn)
                self._trace_step(span, played, {"tracegrade.simulator": "scripted"})
            else:
                played = await self._modelled(messages, turn, span)
        except (JudgeError, ValueError) as exc:
            self.outcome = self._outcome("error", f"{type(exc).__name__}: {exc}", turn)
            return None
        self.steps.append(played)
        return played

    def _scripted(self, messages: Sequence[Message], turn: int) -> Played:
        user = self.user
        if turn == 0:
            raise ValueError(
                "a scripted user needs the conversation's first message: give the case an "
                "'input' or 'turns' (or play it with --simulator llm)"
            )
        reply = messages[-1]["content"]
        if user.meets_goal(reply):
            why = (
                f"the agent's reply meets the stop condition ({user.stop_condition}): "
                f"{_clip(reply)!r}"
            )
            return Played(turn, True, False, why, None)
        answer = user.reply_to(reply)
        if answer is None:
            why = f"no scripted reply fits the agent's message {_clip(reply)!r}"
            return Played(turn, False, True, why, None)
        why = (
            f"the stop condition ({user.stop_condition}) was not met; the agent's last reply: "
            f"{_clip(reply)!r}"
        )
        return Played(turn, False, False, why, answer)

    async def _modelled(self, messages: Sequence[Message], turn: int, span: Span | None) -> Played:
        simulators, settings = self.simulators, self.settings
        asked = step_messages(self.user, messages)
        key = step_key(settings, asked)
        cached = await self._cache_get(key)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": settings.model,
            "gen_ai.request.temperature": settings.temperature,
            "gen_ai.request.seed": settings.seed or 0,
            "tracegrade.simulator": "llm",
            "tracegrade.simulator.cached": cached is not None,
        }
        export = simulators.export
        step_span = (
            export.step_span(span, f"chat {settings.model}", attributes)
            if export is not None and span is not None
            else None
        )
        try:
            if cached is not None:
                step, usage = Step.model_validate(cached), JudgeUsage(cached=1)
            else:
                step, usage = await self._ask(asked, step_span)
                await self._cache_put(key, step, usage)
        except JudgeError as exc:
            self._spend(exc.usage)
            if step_span is not None:
                step_span.set_status(Status(StatusCode.ERROR, str(exc)[:300]))
                step_span.end()
            raise
        self._spend(usage)
        if step_span is not None:
            step_span.set_attributes(
                {
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                    "tracegrade.simulated_user.turn": turn,
                    "tracegrade.simulated_user.goal_reached": step.goal_reached,
                    "tracegrade.simulated_user.give_up": step.give_up,
                }
            )
            step_span.end()
        return Played(
            turn,
            step.goal_reached,
            step.give_up,
            step.reasoning,
            step.message,
            cached=cached is not None,
            named=tuple(step.asked_for_given_facts),
        )

    async def _ask(
        self, asked: list[dict[str, str]], step_span: Span | None
    ) -> tuple[Step, JudgeUsage]:
        """Ask the model in a thread, with the step's span current there (so an instrumented
        ``openai`` client's span joins the simulated user's trace, not the agent's)."""
        client = self.simulators.client
        context = (
            trace.set_span_in_context(step_span)
            if step_span is not None
            else otel_context.Context()
        )

        def call() -> tuple[Step, JudgeUsage]:
            token = otel_context.attach(context)
            try:
                return ask_step(client, self.user, asked, self.settings.seed)
            finally:
                otel_context.detach(token)

        return await asyncio.to_thread(call)

    def _spend(self, usage: JudgeUsage) -> None:
        self.usage += usage
        self.simulators.usage += usage

    async def _cache_get(self, key: str) -> dict[str, Any] | None:
        if self.worker is None:
            return self.simulators.memory.get(key)
        worker = self.worker
        return await worker.call(lambda: JudgeCache(worker.store).get(key))

    async def _cache_put(self, key: str, step: Step, usage: JudgeUsage) -> None:
        verdict = step.model_dump()
        model = self.simulators.settings.model
        if self.worker is None:
            self.simulators.memory.put(key, model, CACHE_RUBRIC, verdict, 0, 0)
            return
        worker = self.worker
        await worker.call(
            lambda: JudgeCache(worker.store).put(
                key, model, CACHE_RUBRIC, verdict, usage.input_tokens, usage.output_tokens
            )
        )

    def _trace_step(self, span: Span | None, played: Played, attributes: dict[str, Any]) -> None:
        export = self.simulators.export
        if export is None or span is None:
            return
        step = export.step_span(
            span,
            "simulated_user scripted_reply",
            {
                **attributes,
                "tracegrade.simulated_user.turn": played.turn,
                "tracegrade.simulated_user.goal_reached": played.goal_reached,
                "tracegrade.simulated_user.give_up": played.give_up,
            },
        )
        step.end()


class Simulators:
    """Who plays the simulated users of a run (see the module docstring): ``mode``, and for
    the model the simulator's settings (:func:`tracegrade.judge.simulate.simulator_settings`);
    ``usage`` totals what the model spent over the run, apart from the agent and the judge."""

    def __init__(
        self,
        mode: SimulatorMode = "auto",
        settings: JudgeSettings | None = None,
        client: JudgeClient | None = None,
    ):
        self.mode = mode
        self.settings = settings or JudgeSettings()
        self._client = client
        self.usage = JudgeUsage()
        self.memory = JudgeCache()
        self.export: SimulatorExport | None = None

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def client(self) -> JudgeClient:
        """The model's client (created on first use).

        Raises:
            ConfigError: no API key is configured.
        """
        if self._client is None:
            self._client = JudgeClient(self.settings)
        return self._client

    def kind(self, case: Case) -> Literal["scripted", "llm"]:
        """Who plays ``case``'s user: ``scripted`` or ``llm``."""
        if self.mode == "llm":
            return "llm"
        if self.mode == "scripted":
            return "scripted"
        return "scripted" if case.user is not None and case.user.scripted else "llm"

    def check(self, cases: Sequence[Case]) -> None:
        """Check up front what the cases with a simulated user need.

        Raises:
            ConfigError: ``--simulator scripted`` and a case scripts no replies; a case needs
                the model and no API key is configured.
        """
        simulated = [c for c in cases if c.user is not None]
        unscripted = [c.id for c in simulated if not c.user.scripted]  # type: ignore[union-attr]
        if self.mode == "scripted" and unscripted:
            raise ConfigError(
                f"--simulator scripted: case(s) {unscripted} script no replies for the "
                "simulated user (give user.replies and user.stop_when, or --simulator llm)"
            )
        modelled = [c.id for c in simulated if self.kind(c) == "llm"]
        if modelled and self._client is None and not self.settings.api_key:
            where = f" at {self.settings.base_url}" if self.settings.base_url else ""
            raise ConfigError(
                f"the simulated user of case(s) {modelled} (model {self.model!r}{where}) needs "
                "an API key, as the judge does: set TRACEGRADE_JUDGE_API_KEY (or "
                "OPENAI_API_KEY; any value for a local server that checks none), or script "
                "its replies (user.replies and user.stop_when)"
            )

    def open(self, http_endpoint: str) -> None:
        """Trace the simulated users to the run's receiver at ``http_endpoint``."""
        self.export = SimulatorExport(http_endpoint)

    def close(self) -> None:
        """Flush and stop the simulated users' tracing."""
        if self.export is not None:
            self.export.close()
            self.export = None

    def start(self, case: Case, attempt: Attempt, worker: StoreWorker | None) -> Simulation | None:
        """The simulation of one attempt of ``case`` (None: the case has no simulated user)."""
        if case.user is None:
            return None
        return Simulation(case, attempt, self, worker)

    def summary(self) -> dict[str, Any] | None:
        """The run summary's ``simulator`` entry: the model's calls, cached steps, tokens and
        cost (USD), apart from the agent's and the judge's; None when no model played."""
        usage = self.usage
        if not (usage.calls or usage.cached):
            return None
        return {"model": self.model, **usage.to_dict()}


class _Attempted(Protocol):
    @property
    def simulation(self) -> Simulation | None: ...


def _outcomes(attempts: Sequence[_Attempted]) -> list[GoalOutcome | None]:
    return [a.simulation.outcome for a in attempts if a.simulation is not None]


def goal_fields(attempts: Sequence[_Attempted]) -> dict[str, Any]:
    """A simulated case's ``goal`` entry over its attempts (the repeats): the goal-reached
    rate with its interval (:func:`~tracegrade.scoring.goals.reached_rate`), the turns each
    attempt used, and whether the repeats disagree on the goal; ``{}`` for another case."""
    outcomes = _outcomes(attempts)
    if not outcomes:
        return {}
    reached = [bool(o and o.reached) for o in outcomes]
    return {
        "goal": {
            **reached_rate(reached),
            "turns": [o.turns if o else None for o in outcomes],
            "flaky": len(set(reached)) > 1,
        }
    }


def goal_summary(attempts: Sequence[_Attempted]) -> dict[str, Any]:
    """The run summary's ``simulated``: the goal-reached rate and interval over every
    simulated conversation of the run, and their mean turns; ``{}`` without one."""
    outcomes = _outcomes(attempts)
    if not outcomes:
        return {}
    turns = [o.turns for o in outcomes if o is not None]
    return {
        "simulated": {
            **reached_rate([bool(o and o.reached) for o in outcomes]),
            "turns_mean": round(sum(turns) / len(turns), 2) if turns else None,
        }
    }
