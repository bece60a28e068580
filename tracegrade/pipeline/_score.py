"""``score``: traces (files, the store, or traces already read) scored against a golden
dataset or reference-free, summarised, stored, compared with a baseline and gated.

Every face that scores calls :func:`score`: ``tracegrade score``, the Python API
(:func:`evaluate_dataset`: traces already read, nothing written or stored, the same
results and verdicts as the command), the pytest plugin. The run streams: traces are read,
normalised and scored a batch at a time, each result goes into the running summary and a
case log on disk (:class:`~tracegrade.report.caselog.CaseLog`), so memory stays flat in the
number of traces. :func:`score` is a context manager because the finished run's cases stay
in that log until the face has rendered them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from tracegrade.compare import Comparison
from tracegrade.compare.run_cases import CaseTable
from tracegrade.config import Config, load_config
from tracegrade.dataset import Dataset, Tier
from tracegrade.errors import ConfigError, ExitCode, InputError
from tracegrade.judge.faithfulness import with_judged_faithfulness
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.files import ReadOptions
from tracegrade.pipeline.datasets import open_dataset
from tracegrade.pipeline.gate import (
    Base,
    BaselineInputs,
    BaselineTraces,
    GateOptions,
    OutputOptions,
    finish,
    resolve_base,
    rules_for,
)
from tracegrade.pipeline.judging import JudgeOptions, judge_cache, make_judge
from tracegrade.pipeline.outputs import verdict
from tracegrade.pipeline.reading import (
    ErrorSink,
    LateErrors,
    decoded,
    iter_raw_from_files,
    keeps,
    load_batches,
    load_mapping,
    no_traces_error,
    parse_since,
    select_batches,
)
from tracegrade.pipeline.signals import RunSignals, run_signals
from tracegrade.report.caselog import CaseLog
from tracegrade.report.document import case_entry, new_run_id, run_meta
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.run_document import StreamedDocument, head_of, read_head
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.evaluation import run_threshold
from tracegrade.scoring.identity import Evaluator, evaluator_of
from tracegrade.scoring.parallel import default_workers
from tracegrade.scoring.results import CaseResult, RunResult, RunSummary
from tracegrade.scoring.score import Scorer
from tracegrade.scoring.streaming import Prepared, TraceFacts, stream_results
from tracegrade.scoring.summary import RunningSummary
from tracegrade.spans import TraceData
from tracegrade.store.traces import default_path
from tracegrade.trace import AgentTrace

NO_CASE_MATCHED = "no case matched a trace (by tracegrade.case_id, mapping, or first user input)"


@dataclass(frozen=True)
class ScoreOptions:
    """What a scoring run takes. Traces come from ``traces`` (already read), else ``files``,
    else the store at ``db``; ``dataset`` is a loaded :class:`Dataset`, a path or ``store:NAME``
    (a dataset stored at ``db``; None: the reference-free scorers); ``config`` a loaded
    :class:`Config` or a path. ``since`` is ``30m``/``12h``/``7d`` or an ISO date; ``sample``
    a fraction of traces kept by trace id; ``workers`` processes (0: one per CPU). The judge,
    the gate and the outputs are the groups ``run`` shares (:mod:`.session`)."""

    files: Sequence[str] = ()
    db: str | None = None
    messages_key: str = "messages"
    traces: Sequence[AgentTrace] | None = None
    dataset: Dataset | str | Path | None = None
    mapping: str | Mapping[str, Sequence[str]] | None = None
    """A mapping file (case id -> trace ids), or the mapping itself."""
    tier: Tier | None = None
    since: str | None = None
    limit: int | None = None
    sample: float | None = None
    trace_ids: Sequence[str] = ()
    """Only these stored traces (e.g. those ``--from`` pulled); none: every trace."""
    scorer_refs: Sequence[str] = ()
    config: Config | str | None = None
    workers: int = 1
    keep_results: bool = False
    """Keep every :class:`CaseResult` in memory (the Python API) besides the case log."""
    judge: JudgeOptions = field(default_factory=JudgeOptions)
    gate: GateOptions = field(default_factory=GateOptions)
    output: OutputOptions = field(default_factory=OutputOptions)


@dataclass
class ScoredRun:
    """A finished scoring run: its ``tracegrade.run/1`` document (``cases`` readable while
    the :func:`score` block runs), the comparison with the baseline, the input errors met,
    warnings for the face to show, and the results when kept."""

    document: StreamedDocument
    summary: RunSummary
    dataset: Dataset | None
    comparison: Comparison | None
    input_errors: list[InputError]
    warnings: list[str] = field(default_factory=list)
    results: list[CaseResult] | None = None
    stored_in: str | None = None
    """The store the run was saved in (None: not saved)."""

    @property
    def regression(self) -> bool:
        """True when the comparison with the baseline found a regression."""
        return self.comparison is not None and self.comparison.regression

    @property
    def problem(self) -> str | None:
        """Why the run is a usage error (exit 2) although it finished: no case matched."""
        summary = read_head(self.document).summary
        if self.dataset is not None and summary.unmatched_cases == summary.results:
            return NO_CASE_MATCHED
        return None

    @property
    def exit_code(self) -> ExitCode:
        """0 pass, 1 below threshold or a regression, 2 no case matched or input errors."""
        if self.problem or self.input_errors:
            return ExitCode.USAGE
        return ExitCode.FAILED if self.regression else verdict(self.document)

    def run_result(self) -> RunResult:
        """The kept results (``keep_results``) and the run's summary."""
        return RunResult(tuple(self.results or ()), self.summary)


@dataclass
class Plan:
    """What the options resolve to before any trace is read."""

    dataset: Dataset | None
    config: Config
    scorers: list[Scorer]
    judge: Any
    workers: int
    since_ns: int | None
    base: Base | None
    run_id: str = field(default_factory=new_run_id)
    """The run's id, chosen before it starts (its exported records carry it)."""
    evaluator: Evaluator | None = None
    """Who scores the run (:mod:`tracegrade.scoring.identity`; set by :func:`plan_run`)."""

    def export_context(self) -> RunContext:
        """What the run's exported records carry: its id, dataset name and evaluator."""
        return RunContext(self.run_id, self.dataset.name if self.dataset else None, self.evaluator)


def _dataset(value: Dataset | str | Path | None, db: str | None) -> Dataset | None:
    if value is None or isinstance(value, Dataset):
        return value
    return open_dataset(value, db)


def plan_run(options: ScoreOptions) -> Plan:
    """Load the dataset, config, scorers and judge; check the options fit together.

    Raises:
        ConfigError: the judge with several workers; a bad option value.
        DatasetError: a bad dataset (named with its file and line).
    """
    dataset = _dataset(options.dataset, options.db)
    config = options.config if isinstance(options.config, Config) else load_config(options.config)
    config = config_for(config, dataset)
    scorers = build_scorers(config, options.scorer_refs)
    judge = make_judge(
        config,
        dataset,
        dataset.tier(options.tier) if dataset else [None],
        options.judge,
    )
    workers = options.workers or default_workers()
    if workers > 1 and judge:
        raise ConfigError(
            "--workers runs the scorers in several processes, the LLM judge in one: "
            "add --no-judge, or drop --workers"
        )
    name = dataset.name if dataset else None
    base = (
        resolve_base(options.gate.baseline, options.db, name, CaseTable())
        if options.gate.baseline
        else None
    )
    every = [*with_judged_faithfulness(scorers, judge), *([judge] if judge else [])]
    settings = {
        "threshold": run_threshold(options.gate.threshold, dataset, config),
        "tier": options.tier,
    }
    return Plan(
        dataset,
        config,
        every,
        judge,
        workers,
        parse_since(options.since),
        base,
        evaluator=evaluator_of(every, dataset, config, settings),
    )


def _batches(
    options: ScoreOptions,
    plan: Plan,
    errors: list[InputError],
    read: list[int],
    late: LateErrors | None,
    on_errors: ErrorSink,
) -> Iterable[list[Any]]:
    """The traces to score, in batches (decoded only, in workers: ``plan.workers`` > 1)."""
    if options.traces is not None:
        batches: Iterable[list[Any]] = [list(options.traces)]
    else:
        filters = {
            "since_unix_nano": plan.since_ns,
            "limit": None if options.sample else options.limit,
            "trace_ids": tuple(options.trace_ids),
        }
        batches = load_batches(
            options.files,
            options.db,
            options.messages_key,
            errors,
            plan.workers,
            raw=plan.workers > 1,
            late=late,
            on_errors=on_errors,
            **filters,
        )
    batches = _counting(batches, read)
    if plan.workers > 1:
        return batches
    return select_batches(
        batches, since_unix_nano=plan.since_ns, sample=options.sample, limit=options.limit
    )


def _prepared(since_ns: int | None, sample: float | None, raw: TraceData) -> Prepared:
    """A trace read (its deferred lines decoded) and normalised, if ``since``/``sample``
    keep it, with the input errors of those lines (in a worker)."""
    data, late = decoded(raw)
    if not data.spans:  # its lines did not decode: one process would not have yielded it
        return Prepared(None, late)
    trace = normalize_trace(data)
    return Prepared(trace if keeps(trace, since_unix_nano=since_ns, sample=sample) else None, late)


def _counting(batches: Iterable[list[Any]], count: list[int]) -> Iterator[list[Any]]:
    for batch in batches:
        count[0] += len(batch)
        yield batch
        del batch  # not held while the next batch is read


def _read_again(
    files: Sequence[str], messages_key: str, defer: bool, trace_ids: set[str]
) -> dict[str, AgentTrace]:
    """The traces ``trace_ids`` of ``files``, read again as the run read them (``defer``: a
    single trace's lines decoded only for those, as workers do): trace id -> trace, for the
    baseline diffs of traces the run did not keep. Raises as the run's read."""
    found = {}
    late = LateErrors() if defer else None
    options = ReadOptions(messages_key=messages_key)
    for batch in iter_raw_from_files(files, options, errors=[], late=late):
        for raw in batch:
            if raw.trace_id in trace_ids and (data := decoded(raw)[0]).spans:
                found[raw.trace_id] = normalize_trace(data)
    return found


def _collector(
    running: RunningSummary, cases: CaseLog, kept: list[CaseResult] | None, signals: RunSignals
) -> Callable[[CaseResult], None]:
    """Each result into the running summary, the case log (as its document entry), the
    signals and, when kept, the list."""

    def collect(result: CaseResult) -> None:
        running.add(result)
        cases.add(case_entry(result))
        signals.result(result)
        if kept is not None:
            kept.append(result)

    return collect


def _mapping(options: ScoreOptions, dataset: Dataset | None) -> Mapping[str, Sequence[str]]:
    if options.mapping is None or isinstance(options.mapping, Mapping):
        return options.mapping or {}
    return load_mapping(options.mapping, [c.id for c in dataset.cases if c.id] if dataset else None)


def _stored(options: ScoreOptions) -> bool:
    """Whether the run touches the store (traces in memory, not saved: never)."""
    return options.traces is None or options.output.save or options.db is not None


def _no_traces(options: ScoreOptions, read: int) -> ConfigError:
    if options.traces is None and not options.files and not read:
        filters = {"since_unix_nano": options.since, "limit": options.limit}
        return no_traces_error(options.files, options.db, **filters)
    hint = " (check --since/--sample/--limit)" if options.since or options.sample else ""
    return ConfigError("no traces to score" + hint)


@dataclass
class RunSession:
    """One scoring run from open to close, the same for ``score`` and the pytest plugin:
    opened (:func:`open_session`: the plan, the case log, the signals), cases scored as their
    traces come (:meth:`score`: scorers and judge, each result into the running summary, the
    case log and the signals), then :meth:`finish`: summarised, and
    :func:`~tracegrade.pipeline.gate.finish` (figures exported, document written and stored,
    compared with the baseline, signals closed, gate published); the case log closes with the
    session."""

    options: ScoreOptions
    plan: Plan
    cases: CaseLog
    signals: RunSignals
    running: RunningSummary
    kept: list[CaseResult] | None
    facts: TraceFacts = field(default_factory=TraceFacts)
    leftover: int = 0
    errors: list[InputError] = field(default_factory=list)

    def score(
        self,
        batches: Iterable[Sequence[Any]],
        *,
        dataset: Dataset | None,
        mapping: Mapping[str, Sequence[str]],
        progress: Callable[[CaseResult], None] | None = None,
        **streaming: Any,
    ) -> None:
        """Score ``batches`` against ``dataset`` (the plan's, or some of its cases), the
        judge's cache open when the run touches the store; ``streaming``:
        :func:`~tracegrade.scoring.streaming.stream_results`'s workers, prepare, limit,
        on_notes and keeper."""
        options, plan = self.options, self.plan
        cache = judge_cache(options.db, plan.judge) if _stored(options) else nullcontext()
        with cache:
            leftover, facts = stream_results(
                batches,
                dataset,
                plan.scorers,
                plan.config,
                _collector(self.running, self.cases, self.kept, self.signals),
                tier=options.tier,
                threshold=options.gate.threshold,
                mapping=mapping,
                progress=progress,
                **streaming,
            )
        self.leftover += leftover
        self.facts.merge(facts)

    def finish(
        self,
        trace_source: str,
        *,
        preload: Callable[[Any], Mapping[str, AgentTrace]] | None = None,
        trace_stores: Sequence[str | None] | None = None,
    ) -> ScoredRun:
        """The document of the finished run (``trace_source``: where its traces came from),
        written, stored, exported, compared with the plan's baseline (the traces for its
        diffs from ``preload`` and the stores at ``trace_stores``, default the run's) and
        gated.

        Raises:
            StoreError: the store cannot be opened.
        """
        options, plan = self.options, self.plan
        summary = self.running.summary(self.leftover)
        run = run_meta(
            summary,
            self.facts,
            plan.dataset,
            tier=options.tier,
            min_pass_rate=options.gate.min_pass_rate,
            trace_source=trace_source,
            config_files=plan.config.files,
            run_id=plan.run_id,
            evaluator=plan.evaluator.to_dict() if plan.evaluator else None,
            min_score=options.gate.min_score,
        )
        doc = StreamedDocument(head_of(run, summary), self.cases)
        stores = [options.db] if trace_stores is None else list(trace_stores)
        done = finish(
            doc,
            self.signals,
            output=options.output,
            gate=options.gate,
            store=options.db,
            base=plan.base,
            compared=BaselineInputs(stores, plan.config, preload),
        )
        return ScoredRun(
            doc,
            self.running.run_summary(self.leftover),
            plan.dataset,
            done.comparison,
            self.errors,
            done.warnings,
            self.kept,
            done.stored_in,
        )


@contextmanager
def open_session(options: ScoreOptions, plan: Plan | None = None) -> Iterator[RunSession]:
    """The :class:`RunSession` of ``options`` (``plan``: already made by :func:`plan_run`),
    its case log and signals closed on the way out.

    Raises:
        as :func:`plan_run`; ConfigError: a bad ``--export-otlp`` endpoint.
    """
    plan = plan or plan_run(options)
    threshold = run_threshold(options.gate.threshold, plan.dataset, plan.config)
    with (
        CaseLog() as cases,
        run_signals(options.output.export_otlp, plan.export_context()) as signals,
    ):
        kept: list[CaseResult] | None = [] if options.keep_results else None
        yield RunSession(options, plan, cases, signals, RunningSummary(threshold), kept)


@contextmanager
def score(
    options: ScoreOptions,
    *,
    progress: Callable[[CaseResult], None] | None = None,
    on_errors: ErrorSink = lambda errors: None,
) -> Iterator[ScoredRun]:
    """Score, summarise, write the outputs, store and compare (module docstring), through one
    :class:`RunSession`; the run is yielded while its case log is open. ``progress`` is told
    of each result; ``on_errors`` of input errors as they are met (each names the file and
    line; the rest still loads).

    Raises:
        ConfigError: bad options, no traces to score (the message says why).
        DatasetError, InputError, StoreError: as the dataset, the files or the store raise.
    """
    plan = plan_run(options)
    read = [0]  # traces read before --since/--sample/--limit
    keeper = (
        BaselineTraces(plan.base[0], rules_for(plan.config, options.gate.alpha))
        if plan.base
        else None
    )
    in_workers = plan.workers > 1 and options.traces is None
    late = LateErrors() if in_workers and options.limit is None else None  # workers decode
    with open_session(options, plan) as session:
        batches = _batches(options, plan, session.errors, read, late, on_errors)
        session.score(
            batches,
            dataset=plan.dataset,
            mapping=_mapping(options, plan.dataset),
            progress=progress,
            workers=plan.workers if options.traces is None else 1,
            prepare=partial(_prepared, plan.since_ns, options.sample) if in_workers else None,
            limit=options.limit if in_workers else None,
            on_notes=late.add if late else None,
            keeper=keeper,
        )
        if late is not None:
            session.errors.extend(found := late.errors())
            on_errors(found)
        if not session.facts.count:
            raise _no_traces(options, read[0])
        read_again = (
            partial(_read_again, options.files, options.messages_key, plan.workers > 1)
            if options.files
            else None
        )
        preload = None if keeper is None else partial(keeper.preloaded, read_again=read_again)
        yield session.finish(_trace_source(options), preload=preload)


def _trace_source(options: ScoreOptions) -> str:
    """Where a run's traces came from, as its document says."""
    if options.traces is not None:
        return "traces in memory"
    return ", ".join(options.files) if options.files else str(default_path(options.db))


def evaluate_dataset(
    traces: Sequence[AgentTrace],
    dataset: Dataset | None = None,
    *,
    config: Config | None = None,
    threshold: float | None = None,
    tier: Tier | None = None,
    judge: bool | None = None,
    mapping: Mapping[str, Sequence[str]] | None = None,
) -> RunResult:
    """Score normalised traces against a golden dataset's cases (reference-free without one)
    with every built-in and plugin scorer and, for cases with a rubric, the LLM judge
    (``judge``: None as ``score``, False never, True every case): what ``tracegrade score``
    does, as one call, nothing written or stored.

    ``config`` defaults to :func:`~tracegrade.config.load_config` (defaults, then
    ``./tracegrade.yaml``); ``threshold`` (0-1) overrides the pass threshold; ``mapping`` maps
    case ids to trace ids.

    Raises:
        ConfigError: the config names an unknown scorer, a plugin cannot be loaded, the judge
            has no credentials, or there are no traces.
    """
    options = ScoreOptions(
        traces=traces,
        dataset=dataset,
        config=config,
        tier=tier,
        mapping=mapping,
        keep_results=True,
        judge=JudgeOptions(mode=judge),
        gate=GateOptions(threshold=threshold),
        output=OutputOptions(save=False),
    )
    with score(options) as run:
        return run.run_result()
