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
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from tracegrade.collector.receiver import Receiver, ReceiverConfig
from tracegrade.dataset import Dataset
from tracegrade.errors import ConfigError
from tracegrade.runner.agents import Agent
from tracegrade.runner.conversation import FollowUpHook
from tracegrade.runner.execute import Outcome, Runner, RunPlan, Scoring
from tracegrade.runner.progress import RunProgress
from tracegrade.runner.results import run_document
from tracegrade.runner.settle import StoreWorker
from tracegrade.runner.simulation import Simulators


def new_run_id(now: dt.datetime | None = None) -> str:
    """A run id in the shape ``tracegrade score`` uses: ``YYYYmmdd-HHMMSS-xxxxxx`` (UTC)."""
    now = now or dt.datetime.now(dt.UTC)
    return f"{now:%Y%m%d-%H%M%S}-{uuid.uuid4().hex[:6]}"


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
    config_sources: Sequence[str] = ()
    verbose: bool = False
    progress_console: Console | None = None
    on_outcome: Callable[[Outcome], None] | None = None
    """Told of each finished attempt (after the progress display), on the event loop's
    thread: it must not block (``--export-otlp`` queues its records)."""
    simulators: Simulators | None = None
    """Who plays the cases' simulated users (default: :class:`Simulators` ``auto``)."""


@contextmanager
def store_location(db: str | None) -> Iterator[str]:
    """``db``, or a temporary SQLite file removed on exit."""
    if db is not None:
        yield db
        return
    with tempfile.TemporaryDirectory(prefix="tracegrade-run-") as folder:
        yield str(Path(folder) / "run.db")


async def _drive(run: EvalRun, receiver: Receiver, worker: StoreWorker) -> dict[str, Any]:
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
    doc = run_document(
        finished,
        run.plan,
        run.scoring,
        run.dataset,
        run.agent,
        tier=run.tier,
        min_pass_rate=run.min_pass_rate,
        label=run.label,
        started=started,
        config_sources=run.config_sources,
    )
    if (usage := simulators.summary()) is not None:
        doc["summary"]["simulator"] = usage
    return doc


def _both(
    first: Callable[[Outcome], None], second: Callable[[Outcome], None] | None
) -> Callable[[Outcome], None]:
    if second is None:
        return first

    def both(outcome: Outcome) -> None:
        first(outcome)
        second(outcome)

    return both


def run_eval(run: EvalRun, db: str) -> dict[str, Any]:
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
