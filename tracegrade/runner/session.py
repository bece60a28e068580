"""One eval run from start to end: receiver, agent, attempts, document.

:func:`run_eval` starts an in-process OTLP receiver on free ports (or the ports given) over
the store at ``db`` (a temporary one, deleted afterwards, when ``db`` is None), opens the
agent, runs the plan (:mod:`.execute`), and returns the ``tracegrade.run/1`` document
(:mod:`.results`). Saving and printing are the caller's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from tracegrade.collector.receiver import Receiver, ReceiverConfig
from tracegrade.dataset import Dataset
from tracegrade.errors import ConfigError
from tracegrade.run_document import ClarifierTotals, StreamedDocument
from tracegrade.runner.agents import Agent
from tracegrade.runner.conversation import FollowUpHook
from tracegrade.runner.execute import FinishedAttempt, Runner, RunPlan, Scoring
from tracegrade.runner.progress import RunProgress
from tracegrade.runner.results import RunSetting, RunTotals, run_document
from tracegrade.runner.settle import StoreWorker
from tracegrade.runner.simulation import Simulators


@dataclass
class EvalRun:
    """Everything one run needs. ``db`` None: a temporary store; ports 0: free ports."""

    dataset: Dataset
    plan: RunPlan
    agent: Agent
    scoring: Scoring
    hook: FollowUpHook | None = None
    db: str | None = None
    grpc_port: int = 0
    http_port: int = 0
    tier: str | None = None
    min_pass_rate: float = 1.0
    label: str | None = None
    config_files: Sequence[str] = ()
    verbose: bool = False
    progress_console: Console | None = None
    on_outcome: Callable[[FinishedAttempt], None] | None = None
    """Told of each finished attempt (after the progress display), on the event loop's
    thread: it must not block (``--export-otlp`` queues its records)."""
    simulators: Simulators | None = None
    """Who plays the cases' simulated users (default: :class:`Simulators` ``auto``)."""
    min_score: float | None = None
    """``--min-score``: the run passes only when its mean score reaches it."""
    clarifier: Callable[[], ClarifierTotals | None] | None = None
    """The judge's follow-ups once the run ended (``summary.clarifier``), when it may decide
    any."""


@contextmanager
def store_location(db: str | None) -> Iterator[str]:
    """``db``, or a temporary SQLite file removed on exit."""
    if db is not None:
        yield db
        return
    with tempfile.TemporaryDirectory(prefix="tracegrade-run-") as folder:
        yield str(Path(folder) / "run.db")


async def _drive(run: EvalRun, receiver: Receiver, worker: StoreWorker) -> StreamedDocument:
    started = dt.datetime.now(dt.UTC)
    simulators = run.simulators or Simulators()
    await run.agent.open(receiver.http_endpoint, receiver.grpc_endpoint)
    simulators.open(receiver.http_endpoint)
    try:
        total = len(run.plan.cases) * run.plan.repeat
        with RunProgress(
            total, run.plan.repeat, console=run.progress_console, verbose=run.verbose
        ) as progress:
            listener = _both(progress.finished, run.on_outcome)
            runner = Runner(run.agent, worker, run.scoring, run.hook, listener, simulators)
            finished = await runner.run(run.plan)
    finally:
        await asyncio.to_thread(simulators.close)
        await run.agent.close()
    setting = RunSetting(
        tier=run.tier,
        min_pass_rate=run.min_pass_rate,
        label=run.label,
        started=started,
        config_files=run.config_files,
        min_score=run.min_score,
    )
    clarifier = run.clarifier() if run.clarifier else None
    return run_document(
        finished,
        run.plan,
        run.scoring,
        run.dataset,
        run.agent,
        setting,
        RunTotals(clarifier=clarifier, simulator=simulators.summary()),
    )


def _both(
    first: Callable[[FinishedAttempt], None], second: Callable[[FinishedAttempt], None] | None
) -> Callable[[FinishedAttempt], None]:
    if second is None:
        return first

    def both(outcome: FinishedAttempt) -> None:
        first(outcome)
        second(outcome)

    return both


def run_eval(run: EvalRun, db: str) -> StreamedDocument:
    """Run it against the store at ``db`` (see the module docstring); returns the document.

    Raises:
        StoreError: the store cannot be opened.
        ConfigError: a receiver port cannot be bound (the message names it and why).
    """
    config = ReceiverConfig(grpc_port=run.grpc_port, http_port=run.http_port, db=db)
    try:
        receiver = Receiver(config).start()
    except OSError as exc:
        raise ConfigError(f"cannot start the run's OTLP receiver: {exc}") from exc
    try:
        worker = StoreWorker(db)
        try:
            return asyncio.run(_drive(run, receiver, worker))
        finally:
            worker.close()
    finally:
        receiver.stop()
