"""``run``: drive an instrumented agent through a golden dataset's cases, score the traces it
sends, and gate the run as ``score`` does.

The agent is one of three kinds (:mod:`tracegrade.runner.agents`): an in-process Python
function, a command (any language), or a running service over HTTP. Each case's traces come
to an in-process OTLP receiver; a case is scored once they settle.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tracegrade import environment
from tracegrade.compare import Comparison
from tracegrade.compare.run_cases import CaseTable
from tracegrade.config import Config, load_config
from tracegrade.dataset import Case, Dataset, Tier, select_cases
from tracegrade.errors import ExitCode
from tracegrade.judge import Clarifier, JudgeScorer, resolve_settings
from tracegrade.judge.client import JudgeUsage
from tracegrade.judge.faithfulness import with_judged_faithfulness
from tracegrade.judge.simulate import simulator_settings
from tracegrade.pipeline.datasets import open_dataset
from tracegrade.pipeline.gate import (
    BaselineInputs,
    GateOptions,
    OutputOptions,
    finish,
    resolve_base,
)
from tracegrade.pipeline.judging import JudgeOptions, judge_cache, make_judge
from tracegrade.pipeline.outputs import verdict
from tracegrade.pipeline.signals import RunSignals, run_signals
from tracegrade.report.document import new_run_id
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.run_document import ClarifierTotals, StreamedDocument, read_head
from tracegrade.runner.agents.options import AgentOptions, make_agent
from tracegrade.runner.conversation import (
    FollowUpHook,
    FollowUps,
    JudgeClarifications,
    ScriptedClarifications,
)
from tracegrade.runner.execute import FinishedAttempt, RunPlan, Scoring
from tracegrade.runner.session import EvalRun, run_eval, store_location
from tracegrade.runner.simulation import SimulatorMode, Simulators
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.evaluation import run_threshold, run_weights
from tracegrade.scoring.score import Scorer
from tracegrade.store.traces import default_path


@dataclass(frozen=True)
class RunOptions:
    """What ``tracegrade run`` takes: the dataset (a file, or ``store:NAME``: a dataset stored
    in the store at ``db``) and its selection, the agent, how the run goes (concurrency,
    seconds per case, repeats), its simulated users, and the groups ``score`` shares: the
    judge, the gate and the outputs (:mod:`.session`; every attempt's result is sent to
    ``--export-otlp``, with ``tracegrade.repeat`` when cases repeat)."""

    dataset: str
    agent: AgentOptions = field(default_factory=AgentOptions)
    tier: Tier | None = None
    tags: Sequence[str] = ()
    case_ids: Sequence[str] = ()
    concurrency: int = 4
    timeout: float = 120.0
    repeat: int = 1
    label: str | None = None
    scorer_refs: Sequence[str] = ()
    config: str | None = None
    db: str | None = None
    otlp_grpc_port: int = 0
    otlp_http_port: int = 0
    verbose: bool = False
    simulator: SimulatorMode = "auto"
    """Who plays the cases' simulated users (:mod:`tracegrade.runner.simulation`)."""
    simulator_model: str | None = None
    """The simulated users' model (else ``$TRACEGRADE_SIMULATOR_MODEL``, else the judge's)."""
    simulator_temperature: float = 0.7
    simulator_seed: int = 0
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    gate: GateOptions = field(default_factory=GateOptions)
    output: OutputOptions = field(default_factory=OutputOptions)


@dataclass
class RunOutcome:
    """A finished ``run``: its document, the comparison with the baseline, warnings."""

    document: StreamedDocument
    comparison: Comparison | None
    warnings: list[str] = field(default_factory=list)
    stored_in: str | None = None
    """The store the run was saved in (None: ``--no-save``)."""

    @property
    def problem(self) -> str | None:
        """Why the run is a usage error (exit 2): interrupted, or no case produced a trace."""
        head = read_head(self.document)
        summary = head.summary
        if head.run.interrupted:
            return f"interrupted: {summary.results} case(s) finished and reported"
        if summary.unmatched_cases == summary.results:
            return "error: no case produced a trace to score (see the reasons above)"
        return None

    @property
    def exit_code(self) -> ExitCode:
        """0 pass, 1 below threshold or a regression, 2 interrupted or no trace."""
        if self.problem:
            return ExitCode.USAGE
        code = verdict(self.document)
        regression = self.comparison is not None and self.comparison.regression
        return ExitCode.FAILED if regression and code == ExitCode.OK else code


def follow_up_hook(
    config: Config, judge_mode: bool | None, judge_model: str | None
) -> FollowUpHook:
    """Scripted clarifications, then the judge clarifier when a judge model is configured
    (``--judge-model`` or ``TRACEGRADE_JUDGE_MODEL``) and ``--no-judge`` is not given.

    Raises:
        ConfigError: a judge model is configured but no judge API key.
    """
    hooks: list[FollowUpHook] = [ScriptedClarifications()]
    if judge_model and judge_mode is not False:
        settings = resolve_settings(judge_model, pricing=config.pricing)
        settings.require_credentials()
        hooks.append(JudgeClarifications(Clarifier(settings)))
    return FollowUps(hooks)


def simulators_for(options: RunOptions, config: Config, cases: Sequence[Case]) -> Simulators:
    """Who plays the cases' simulated users: ``--simulator``, with the simulator's model
    (``--simulator-model``, ``$TRACEGRADE_SIMULATOR_MODEL``, else the judge's), temperature
    and seed behind the judge's endpoint and key.

    Raises:
        ConfigError: ``--simulator scripted`` for a case without scripted replies, or a case
            needs the model and no API key is configured.
    """
    judge = resolve_settings(options.judge.model, pricing=config.pricing, config=config.judge)
    model = options.simulator_model or os.environ.get(environment.TRACEGRADE_SIMULATOR_MODEL)
    settings = simulator_settings(
        judge, model, options.simulator_temperature, options.simulator_seed
    )
    simulators = Simulators(options.simulator, settings)
    simulators.check(cases)
    return simulators


def goal_judge(options: RunOptions, config: Config, cases: Sequence[Case]) -> JudgeScorer | None:
    """The judge of simulated users' goals: when some case has a simulated user, a judge
    model is configured (``--judge-model`` or ``$TRACEGRADE_JUDGE_MODEL``) and ``--no-judge``
    is not given; else None.

    Raises:
        ConfigError: a judge model is configured but no judge API key.
    """
    model = options.judge.model or os.environ.get(environment.TRACEGRADE_JUDGE_MODEL)
    if options.judge.mode is False or not model or not any(c.user for c in cases):
        return None
    settings = resolve_settings(model, pricing=config.pricing, config=config.judge)
    settings.require_credentials()
    return JudgeScorer(settings)


def _clarifier_usage(hook: FollowUpHook) -> ClarifierTotals | None:
    """The judge's follow-ups of a finished run (``summary.clarifier``), when it made any
    call or failed."""
    for item in getattr(hook, "hooks", []):
        if isinstance(item, JudgeClarifications):
            usage = getattr(item.clarifier, "usage", None)
            if not isinstance(usage, JudgeUsage) or (not usage.calls and not item.errors):
                return None
            return ClarifierTotals(
                calls=usage.calls,
                cached=usage.cached,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cost_usd=usage.cost_usd,
                errors=list(item.errors),
            )
    return None


def _session(
    options: RunOptions,
    dataset: Dataset,
    cases: list[Case],
    config: Config,
    scorers: list[Scorer],
    hook: FollowUpHook,
) -> EvalRun:
    """The run's session: its plan (cases, repeats, concurrency, seconds per case), the agent,
    how traces are scored, the receiver's ports."""
    threshold = run_threshold(options.gate.threshold, dataset, config)
    plan = RunPlan(
        new_run_id(),
        cases,
        repeat=options.repeat,
        concurrency=options.concurrency,
        timeout_s=options.timeout,
    )
    return EvalRun(
        dataset,
        plan,
        make_agent(options.agent),
        Scoring(scorers, config, run_weights(dataset, config), threshold),
        hook,
        db=options.db,
        grpc_port=options.otlp_grpc_port,
        http_port=options.otlp_http_port,
        tier=options.tier,
        min_pass_rate=options.gate.min_pass_rate,
        label=options.label,
        config_files=config.files,
        verbose=options.verbose,
        min_score=options.gate.min_score,
        clarifier=lambda: _clarifier_usage(hook),
    )


def run_store(db: str | None, save: bool) -> str | None:
    """Where a run's traces and results go: ``db``; without it the default store
    (``$TRACEGRADE_DB`` or ``.tracegrade/tracegrade.db``), as ``score`` does; None (a
    temporary store, deleted after the run) when the run is not saved and no ``db`` is given."""
    if db is not None:
        return db
    return str(default_path()) if save else None


def run(options: RunOptions) -> RunOutcome:
    """Run the selected cases against the agent, score, write, store (see :func:`run_store`),
    compare and gate.

    Raises:
        ConfigError: bad options (the agent, a case id, the judge's credentials).
        DatasetError: a bad dataset.
    """
    dataset = open_dataset(options.dataset, options.db)
    db = run_store(options.db, options.output.save)
    base = (
        resolve_base(options.gate.baseline, db, dataset.name, CaseTable())
        if options.gate.baseline
        else None
    )
    cases = select_cases(dataset, options.tier, options.tags, options.case_ids)
    config = config_for(load_config(options.config), dataset)
    judge = make_judge(config, dataset, cases, options.judge)
    scorers = [
        *with_judged_faithfulness(build_scorers(config, options.scorer_refs), judge),
        *([judge] if judge else []),
    ]
    hook = follow_up_hook(config, options.judge.mode, options.judge.model)
    session = _session(options, dataset, cases, config, [*scorers], hook)
    session.simulators = simulators_for(options, config, cases)
    session.scoring.goal_judge = goals = goal_judge(options, config, cases)
    evaluator = session.scoring.evaluator(dataset, options.tier)
    context = RunContext(session.plan.run_id, dataset.name, evaluator)
    with (
        store_location(db) as location,
        judge_cache(location, judge),
        judge_cache(location, goals),
        run_signals(options.output.export_otlp, context) as signals,
    ):
        session.on_outcome = _exporting(signals, options.repeat)
        doc = run_eval(session, location)
        done = finish(
            doc,
            signals,
            output=options.output,
            gate=options.gate,
            store=location,
            base=base,
            compared=BaselineInputs([location, db], config),
        )
    return RunOutcome(doc, done.comparison, done.warnings, done.stored_in)


def _exporting(signals: RunSignals, repeat: int) -> Callable[[FinishedAttempt], None]:
    """Each attempt's result to the signals (with its repeat when cases repeat)."""

    def send(outcome: FinishedAttempt) -> None:
        signals.result(outcome.result, outcome.repeat if repeat > 1 else None)

    return send
