"""Running the cases: bounded concurrency, per-case timeout, settling, scoring, Ctrl-C.

Every (case, repeat) is one *attempt*, run as an asyncio task; at most ``concurrency`` run at
once. An attempt starts its sessions (:class:`~.revival.Sessions`: one, plus one per agent
revival), holds the conversation (:func:`~.conversation.converse`) under ``timeout_s``, ends
the session (the case span ends and the exporter is flushed), waits for its traces to settle
(:mod:`.settle`), and scores the union of its traces as one trace (:func:`merge_traces`: a
multi-turn conversation a subprocess agent, or revivals, spread over several traces is scored
as a whole). With a shared agent (a running service), an attempt with revivals holds its
conversation alone (:class:`~.revival.ConversationLock`). An agent failure
(exception, crash, non-zero exit, HTTP error, timeout) fails that attempt with the reason
and the run goes on.

Ctrl-C (SIGINT) stops starting attempts, cancels the running ones (killing agent processes)
and returns what finished, marked ``interrupted``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import signal
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracegrade.config import Config
from tracegrade.dataset import Case, Dataset, Judge
from tracegrade.normalize import normalize_trace
from tracegrade.runner.agents import Agent, AgentFailure, Attempt, Session
from tracegrade.runner.conversation import Conversation, FollowUpHook, converse
from tracegrade.runner.revival import ConversationLock, Sessions
from tracegrade.runner.settle import SettleRule, StoreWorker, wait_settled
from tracegrade.runner.simulation import Simulation, Simulators
from tracegrade.scoring.evaluation import score_trace
from tracegrade.scoring.goals import GOAL_JUDGE, GoalOutcome, goal_rubric, simulation_scores
from tracegrade.scoring.identity import Evaluator, evaluator_of
from tracegrade.scoring.results import CaseResult
from tracegrade.scoring.score import Score, Scorer
from tracegrade.spans import TraceData
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class FinishedAttempt:
    """One finished attempt: its result, its traces, the conversation, the agent's failure
    (None when it answered), and where the time went (ms): the agent's conversation, the
    settle wait, loading and scoring."""

    case: Case
    repeat: int
    result: CaseResult
    trace_ids: tuple[str, ...]
    conversation: Conversation | None
    error: str | None
    agent_ms: float
    settle_ms: float = 0.0
    score_ms: float = 0.0
    simulation: Simulation | None = None
    """The simulated user's side of the conversation (a case with a ``user``)."""

    @classmethod
    def unstarted(cls, case: Case, repeat: int, reason: str) -> FinishedAttempt:
        """An attempt whose agent failed to start (``reason``): no trace, no conversation."""
        return cls(case, repeat, failed_result(case, reason), (), None, reason, 0.0)


def merge_traces(traces: Sequence[TraceData]) -> TraceData:
    """The spans and log records of several traces as one trace (under the first trace id),
    so one conversation spread over several traces is normalised and scored as a whole."""
    if len(traces) == 1:
        return traces[0]
    merged = TraceData(traces[0].trace_id)
    for trace in traces:
        merged.spans.extend(trace.spans)
        merged.logs.extend(trace.logs)
    return merged


def failed_result(case: Case, reason: str) -> CaseResult:
    """The failed result of an attempt that produced nothing to score."""
    return CaseResult(
        case.id,
        None,
        False,
        None,
        {},
        (reason,),
        hard_failures=(reason,),
        weight=case.weight,
        tags=tuple(case.tags),
        tier=case.tier,
        metadata=dict(case.metadata),
    )


class GoalJudge(Protocol):
    """The judge asked about a simulated user's goal (:meth:`tracegrade.judge.JudgeScorer.
    judged` with a rubric of its own)."""

    def judged(self, trace: AgentTrace, case: Case | None, spec: Judge | None = None) -> Score:
        """The judge's score of ``(trace, case)`` on the rubric ``spec``."""
        ...


@dataclass
class Scoring:
    """What scores an attempt: the scorers, config, weights (axis -> weight) and threshold;
    ``goal_judge`` judges simulated users' goals (None: only the simulator's verdict)."""

    scorers: Sequence[Scorer]
    config: Config
    weights: Mapping[str, float]
    threshold: float
    traces: dict[str, AgentTrace] = field(default_factory=dict)
    """Every scored (merged) trace by trace id, for the run's metadata (models, versions)."""
    goal_judge: GoalJudge | None = None

    def evaluator(self, dataset: Dataset, tier: str | None) -> Evaluator:
        """Who scores the run's attempts against ``dataset``'s cases of ``tier``
        (:mod:`tracegrade.scoring.identity`)."""
        settings = {"threshold": self.threshold, "tier": tier}
        return evaluator_of(self.scorers, dataset, self.config, settings)

    def score(
        self,
        worker: StoreWorker,
        case: Case,
        trace_ids: Sequence[str],
        simulated: GoalOutcome | None = None,
        said: Sequence[str] = (),
    ) -> CaseResult:
        """Load, merge, normalise and score (call on the worker thread). A case with a
        simulated user is scored with ``said``, the user messages the conversation held, as
        its turns, and its ``simulated`` outcome adds its scores
        (:mod:`tracegrade.scoring.goals`)."""
        trace = normalize_trace(merge_traces(worker.store.load(trace_ids)))
        self.traces[trace.trace_id] = trace
        if case.user is not None and said:
            case = case.model_copy(update={"turns": list(said), "input": said[0]})
        extra = self._simulated(trace, case, simulated)
        return score_trace(
            trace, case, self.scorers, self.config, self.weights, self.threshold, extra
        )

    def _simulated(
        self, trace: AgentTrace, case: Case, outcome: GoalOutcome | None
    ) -> tuple[Score, ...]:
        if case.user is None:
            return ()
        if outcome is None:
            outcome = GoalOutcome(
                False,
                "error",
                0,
                case.user.max_turns,
                "the simulated user did not finish the conversation",
            )
        scores = simulation_scores(outcome)
        if self.goal_judge is None:
            return scores
        spec = Judge(rubric=goal_rubric(case.user))
        judged = self.goal_judge.judged(trace, case, spec)
        return (*scores, dataclasses.replace(judged, name=GOAL_JUDGE))


Listener = Callable[[FinishedAttempt], None]


@dataclass
class RunPlan:
    """What to run: the cases, each ``repeat`` times, at most ``concurrency`` attempts at once,
    each conversation within ``timeout_s``; ``run_id`` labels the telemetry."""

    run_id: str
    cases: Sequence[Case]
    repeat: int = 1
    concurrency: int = 4
    timeout_s: float = 120.0

    def attempt(self, case: Case, repeat: int) -> Attempt:
        """The attempt's correlation ids (``run_id#k`` when cases repeat)."""
        run_id = self.run_id if self.repeat == 1 else f"{self.run_id}#{repeat}"
        return Attempt(run_id, case.id or "", repeat)


@dataclass
class Execution:
    """What a run produced: the finished attempts in plan order, whether Ctrl-C stopped it,
    and its wall time (s)."""

    attempts: list[FinishedAttempt]
    interrupted: bool
    wall_s: float


class Runner:
    """Runs a :class:`RunPlan` against an opened agent (see the module docstring)."""

    def __init__(
        self,
        agent: Agent,
        worker: StoreWorker,
        scoring: Scoring,
        hook: FollowUpHook | None = None,
        listener: Listener | None = None,
        simulators: Simulators | None = None,
    ):
        self.agent, self.worker, self.scoring, self.hook = agent, worker, scoring, hook
        self.listener = listener
        self.simulators = simulators or Simulators()
        self._stop = asyncio.Event()
        self._conversations = ConversationLock()

    def stop(self) -> None:
        """Stop the run (what Ctrl-C does)."""
        self._stop.set()

    async def run(self, plan: RunPlan) -> Execution:
        """Run every attempt; returns when all finished or the run was stopped."""
        started = time.perf_counter()
        limit = asyncio.Semaphore(plan.concurrency)
        tasks = [
            asyncio.create_task(self._bounded(limit, plan, case, k))
            for case in plan.cases
            for k in range(1, plan.repeat + 1)
        ]
        with _sigint(self.stop):
            everything = asyncio.gather(*tasks, return_exceptions=True)
            stopper = asyncio.create_task(self._stop.wait())
            waiting: list[asyncio.Future[Any]] = [everything, stopper]
            await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            interrupted = not everything.done()
            for task in tasks:
                task.cancel()
            await asyncio.gather(everything, return_exceptions=True)
        outcomes = [
            outcome
            for t in tasks
            if t.done() and not t.cancelled() and t.exception() is None
            if (outcome := t.result()) is not None
        ]
        for task in tasks:
            if task.done() and not task.cancelled() and (error := task.exception()) is not None:
                raise error  # a runner bug, not an agent failure
        return Execution(outcomes, interrupted, time.perf_counter() - started)

    async def _bounded(
        self, limit: asyncio.Semaphore, plan: RunPlan, case: Case, repeat: int
    ) -> FinishedAttempt | None:
        async with limit:
            if self._stop.is_set():
                return None
            outcome = await self.attempt(plan, case, repeat)
        if self.listener:
            self.listener(outcome)
        return outcome

    async def attempt(self, plan: RunPlan, case: Case, repeat: int) -> FinishedAttempt:
        """Run, settle and score one attempt."""
        attempt = plan.attempt(case, repeat)
        started = time.perf_counter()
        alone = self.agent.shared and bool(case.revived_turns)
        simulation = self.simulators.start(case, attempt, self.worker)
        async with self._conversations.hold(alone):
            try:
                session = await Sessions.start(self.agent, attempt)
            except AgentFailure as exc:
                return FinishedAttempt.unstarted(case, repeat, str(exc))
            conversation, error = await self._converse(session, case, plan.timeout_s, simulation)
        agent_ms = (time.perf_counter() - started) * 1000
        if error is not None:
            return FinishedAttempt(
                case,
                repeat,
                failed_result(case, error),
                session.trace_ids,
                conversation,
                error,
                agent_ms,
                simulation=simulation,
            )
        rule = _per_session(self.agent.settle, session.count)
        settled = await wait_settled(
            self.worker, rule, attempt.run_id, attempt.case_id, session.trace_ids
        )
        if settled.note is not None:
            reason = f"{settled.note} ({_HINTS[self.agent.kind]})"
            return FinishedAttempt(
                case,
                repeat,
                failed_result(case, reason),
                settled.trace_ids,
                conversation,
                None,
                agent_ms,
                settled.waited_ms,
                simulation=simulation,
            )
        scoring_started = time.perf_counter()
        outcome = simulation.outcome if simulation is not None else None
        said = [m["content"] for m in conversation.messages if m["role"] == "user"]
        result = await self.worker.call(
            self.scoring.score, self.worker, case, settled.trace_ids, outcome, said
        )
        return FinishedAttempt(
            case,
            repeat,
            result,
            settled.trace_ids,
            conversation,
            None,
            agent_ms,
            settled.waited_ms,
            (time.perf_counter() - scoring_started) * 1000,
            simulation,
        )

    async def _converse(
        self, session: Session, case: Case, timeout_s: float, simulation: Simulation | None
    ) -> tuple[Conversation, str | None]:
        conversation = Conversation()
        failure: BaseException | None = None
        reason: str | None = None
        play = simulation.play if simulation is not None else None
        try:
            await asyncio.wait_for(
                converse(session, case, self.hook, conversation, play), timeout_s
            )
        except TimeoutError as exc:
            failure, reason = exc, f"agent timed out after {timeout_s:g} s{session.diagnostics()}"
        except AgentFailure as exc:
            failure, reason = exc, str(exc)
        except asyncio.CancelledError as exc:
            await session.finish(exc)
            raise
        except Exception as exc:  # whatever an in-process agent raises fails its case
            failure, reason = exc, f"agent raised {type(exc).__name__}: {exc}{_where(exc)}"
        await session.finish(failure)
        return conversation, reason


def _per_session(rule: SettleRule, sessions: int) -> SettleRule:
    """``rule`` for an attempt of ``sessions`` sessions: each session's root span is one more
    of the spans it needs (so an HTTP service's spans are still waited for)."""
    if sessions <= 1 or not rule.by_trace_id:
        return rule
    return dataclasses.replace(rule, min_spans=rule.min_spans + sessions - 1)


_HINTS = {
    "python": "were the spans exported? the runner exports through the global OpenTelemetry "
    "tracer provider",
    "command": "does the agent export OTLP to $OTEL_EXPORTER_OTLP_ENDPOINT with "
    "$OTEL_RESOURCE_ATTRIBUTES and flush before it exits?",
    "http": "does the service export OTLP to this run's receiver and continue the W3C traceparent "
    "it gets? raise --settle-timeout if it batches for long",
}


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    return f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""


class _sigint:
    """While active, SIGINT calls ``stop`` instead of raising KeyboardInterrupt (main thread
    of a Unix event loop only; elsewhere a no-op)."""

    def __init__(self, stop: Callable[[], None]):
        self.stop = stop
        self.installed = False

    def __enter__(self) -> _sigint:
        try:
            asyncio.get_running_loop().add_signal_handler(signal.SIGINT, self.stop)
            self.installed = True
        except (NotImplementedError, RuntimeError, ValueError):
            pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self.installed:
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)


__all__ = [
    "Execution",
    "FinishedAttempt",
    "RunPlan",
    "Runner",
    "Scoring",
    "failed_result",
    "merge_traces",
]
