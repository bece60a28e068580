"""``tracegrade score``: score trace files or stored traces, with or without a golden dataset."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from typing import Any

import click
from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress, TextColumn

from tracegrade.cli.judge_check import judge_cache, judge_options, make_judge
from tracegrade.cli.options import (
    config_option,
    db_option,
    files_argument,
    mapping_option,
    messages_key_option,
    pass_options,
    report_errors,
    report_options,
    scorer_option,
    tier_options,
)
from tracegrade.compare.sources import CaseTable
from tracegrade.config import load_config
from tracegrade.dataset import Tier, load_dataset
from tracegrade.errors import ConfigError, ExitCode, InputError
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.files import ReadOptions
from tracegrade.pipeline.gate import (
    BaselineTraces,
    apply_min_score,
    compare_with_base,
    current_source,
    gate_options,
    publish_gate,
    resolve_base,
    rules_for,
)
from tracegrade.pipeline.outputs import verdict, write_outputs
from tracegrade.pipeline.reading import load_batches, load_mapping, no_traces_error
from tracegrade.pipeline.selection import keeps, parse_since, select_batches
from tracegrade.pipeline.sources import LateErrors, decoded, iter_raw_from_files
from tracegrade.production.windows import parse_window
from tracegrade.report.caselog import CaseLog
from tracegrade.report.console import print_report
from tracegrade.report.document import case_dict, run_info, streamed_document
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.evaluate import run_threshold
from tracegrade.scoring.parallel import default_workers
from tracegrade.scoring.results import CaseResult
from tracegrade.scoring.streaming import Prepared, stream_results
from tracegrade.scoring.summary import RunningSummary
from tracegrade.spans import TraceData
from tracegrade.store.follow import DEFAULT_LEASE_S
from tracegrade.store.traces import DEFAULT_QUIET_S, default_path
from tracegrade.trace import AgentTrace

PROGRESS_FROM = 50
"""Show a progress bar when scoring at least this many traces."""

CASES_SHOWN = 100
"""The console lists at most this many cases (failed ones; every one with --verbose), then
how many more and where to see them: the report stays bounded however many traces."""


@click.command("score")
@files_argument
@db_option
@messages_key_option
@click.option(
    "--dataset",
    "dataset_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Golden dataset (YAML/JSON/JSONL). Without it, reference-free scorers run.",
)
@mapping_option
@tier_options
@pass_options
@click.option("--since", help="Only traces started since: 30m, 12h, 7d or an ISO date/time.")
@click.option(
    "--limit", type=click.IntRange(min=1), help="At most this many traces (store: newest first)."
)
@click.option(
    "--sample", type=click.FloatRange(0, 1, min_open=True), help="Keep this fraction, by trace id."
)
@scorer_option
@config_option
@report_options
@click.option("--no-save", is_flag=True, help="Do not store the run.")
@click.option(
    "--follow",
    is_flag=True,
    help="Keep scoring the store's traces as they settle (behind tracegrade collect), one line per "
    "trace, until Ctrl-C; exit 1 if any failed.",
)
@click.option(
    "--quiet-s",
    type=click.FloatRange(min=0),
    default=DEFAULT_QUIET_S,
    show_default=True,
    help="--follow: seconds without new spans before an ended trace is scored.",
)
@click.option(
    "--window",
    help="--follow: store and print aggregates per window (e.g. 5m) and service.name; "
    "thresholds in the config's windows: section raise an alert.",
)
@click.option(
    "--alert-webhook",
    envvar="TRACEGRADE_ALERT_WEBHOOK",
    help="POST alerts (JSON, Slack-compatible 'text') to this URL: on a regression against "
    "--baseline; with --follow --window, on window thresholds.",
)
@click.option(
    "--lease-s",
    type=click.FloatRange(min=1),
    default=DEFAULT_LEASE_S,
    show_default=True,
    help="--follow: seconds a worker holds a claimed trace before another worker may take it.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Processes that run the scorers (0: one per CPU); results identical, in the same "
    "order. Not with the LLM judge.",
)
@click.option(
    "--judge/--no-judge",
    "judge_mode",
    default=None,
    help="LLM judge: by default cases with a judge rubric; --judge also every other case and trace "
    "(faithfulness rubric unless the dataset sets one); --no-judge none.",
)
@judge_options
@lambda function: gate_options(function, webhook=False)
def command(
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    dataset_path: str | None,
    mapping: str | None,
    tier: Tier | None,
    threshold: float | None,
    min_pass_rate: float,
    since: str | None,
    limit: int | None,
    sample: float | None,
    scorer_refs: tuple[str, ...],
    config_path: str | None,
    json_path: str | None,
    junit_path: str | None,
    verbose: bool,
    no_save: bool,
    follow: bool,
    quiet_s: float,
    window: str | None,
    alert_webhook: str | None,
    lease_s: float,
    workers: int,
    judge_mode: bool | None,
    judge_model: str | None,
    judge_concurrency: int,
    judge_repeat: int,
    baseline: str | None,
    alpha: float | None,
    markdown_path: str | None,
    min_score: float | None,
) -> None:
    """Score traces (files, or the store without files) against a golden dataset, or with the
    reference-free scorers only. Exit 0 when the run passes, 1 below threshold, 2 on a usage,
    config or input error, or when no case matched a trace."""
    dataset = load_dataset(dataset_path) if dataset_path else None
    name = dataset.name if dataset else None
    base = resolve_base(baseline, db, name, CaseTable()) if baseline else None  # on disk
    config = config_for(load_config(config_path), dataset)
    scorers = build_scorers(config, scorer_refs)
    judge = make_judge(
        config,
        dataset,
        dataset.tier(tier) if dataset else [None],
        mode=judge_mode,
        model=judge_model,
        concurrency=judge_concurrency,
        repeat=judge_repeat,
    )
    scorers += [judge] if judge else []
    workers = workers or default_workers()
    if workers > 1 and judge:
        raise ConfigError(
            "--workers runs the scorers in several processes, the LLM judge in one: "
            "add --no-judge, or drop --workers"
        )
    since_ns = parse_since(since)
    if follow:
        from tracegrade.cli.follow import follow_until_stopped  # scipy: only here
        from tracegrade.pipeline.follow import Follower

        if files:
            raise ConfigError("--follow reads the store; give no files")
        if baseline or min_score is not None:
            raise ConfigError("--baseline and --min-score gate a finished run, not --follow")
        follower = Follower(
            db,
            dataset,
            scorers,
            config,
            quiet_s=quiet_s,
            threshold=threshold,
            tier=tier,
            since=since_ns / 1e9 if since_ns is not None else time.time(),
            sample=sample,
            window_s=parse_window(window) if window else None,
            alert_webhook=alert_webhook,
            lease_s=lease_s,
        )
        with judge_cache(db, judge):
            sys.exit(int(follow_until_stopped(follower)))
    filters = {"since_unix_nano": since_ns, "limit": None if sample else limit}
    errors: list[InputError] = []
    read = [0]  # traces read before --since/--sample/--limit
    keeper = BaselineTraces(base[0], rules_for(config, alpha)) if base else None
    in_workers = workers > 1  # decoded, normalised and selected there too
    late = LateErrors() if in_workers and limit is None else None  # workers decode lines
    loaded = load_batches(
        files,
        db,
        messages_key,
        errors,
        workers,
        raw=in_workers,
        late=late,
        on_errors=report_errors,
        **filters,
    )
    batches: Iterable[list[Any]] = _counting(loaded, read)
    if not in_workers:
        batches = select_batches(batches, since_unix_nano=since_ns, sample=sample, limit=limit)
    running = RunningSummary(run_threshold(threshold, dataset, config))
    with CaseLog() as cases:
        with _progress_stream() as advance, judge_cache(db, judge):
            leftover, facts = stream_results(
                batches,
                dataset,
                scorers,
                config,
                _collector(running, cases),
                tier=tier,
                threshold=threshold,
                mapping=load_mapping(
                    mapping, [c.id for c in dataset.cases if c.id] if dataset else None
                ),
                progress=advance,
                workers=workers,
                prepare=partial(_prepared, since_ns, sample) if in_workers else None,
                limit=limit if in_workers else None,
                on_notes=late.add if late else None,
                keeper=keeper,
            )
        if late is not None:
            errors.extend(found := late.errors())
            report_errors(found)
        if not facts.count:
            if not files and not read[0]:
                raise no_traces_error(files, db, **filters)
            raise ConfigError(
                "no traces to score"
                + (" (check --since/--sample/--limit)" if since or sample else "")
            )
        summary = running.summary(leftover)
        source = ", ".join(files) if files else str(default_path(db))
        info = run_info(
            summary,
            facts,
            dataset,
            tier=tier,
            min_pass_rate=min_pass_rate,
            trace_source=source,
            config_sources=config.sources,
        )
        doc = streamed_document(summary, cases, info)
        apply_min_score(doc, min_score)
        write_outputs(doc, db, json_path, junit_path, no_save)
        read_again = partial(_read_again, files, messages_key, late is not None) if files else None
        current = current_source(doc, base)
        comparison = compare_with_base(
            current,
            base,
            dbs=[db],
            config=config,
            alpha=alpha,
            preloaded=keeper.preloaded(current, read_again) if keeper else None,
        )
        print_report(
            doc,
            verbose=verbose,
            limit=CASES_SHOWN,
            see_all=_see_all(info.run_id, json_path, no_save),
        )
        regression = publish_gate(doc, comparison, alert_webhook, markdown_path)
    _exit(doc, dataset is not None, bool(errors), regression)


def _collector(running: RunningSummary, cases: CaseLog) -> Callable[[CaseResult], None]:
    """Each result into the running summary and, as its document entry, the case log."""

    def collect(result: CaseResult) -> None:
        running.add(result)
        cases.add(case_dict(result))

    return collect


def _see_all(run_id: str, json_path: str | None, no_save: bool) -> str:
    """Where the cases the console leaves out are (see :data:`CASES_SHOWN`)."""
    where = [f"every case is in {json_path}"] if json_path else []
    where += [] if no_save else [f"tracegrade runs show {run_id} --verbose"]
    return "; ".join(where) or "add --json FILE to write every case"


def _prepared(since_ns: int | None, sample: float | None, raw: TraceData) -> Prepared:
    """A trace read (its deferred lines decoded) and normalised, if ``--since``/``--sample``
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
    ``--baseline`` diffs of traces the run did not keep. Raises as the run's read."""
    found = {}
    options = ReadOptions(messages_key=messages_key)
    late = LateErrors() if defer else None
    for batch in iter_raw_from_files(files, options, errors=[], late=late):
        for raw in batch:
            if raw.trace_id in trace_ids and (data := decoded(raw)[0]).spans:
                found[raw.trace_id] = normalize_trace(data)
    return found


@contextmanager
def _progress_stream() -> Iterator[Any]:
    """A count of the traces scored on stderr (the total is not known while streaming);
    shown from :data:`PROGRESS_FROM` traces on."""
    progress = Progress(
        TextColumn("scoring"),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task("score", total=None)
    seen = 0

    def advance(_result: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == PROGRESS_FROM:
            progress.start()
        progress.advance(task)

    try:
        yield advance
    finally:
        progress.stop()


def _exit(doc: dict[str, Any], with_dataset: bool, input_errors: bool, regression: bool) -> None:
    summary = doc["summary"]
    if with_dataset and summary["unmatched_cases"] == summary["results"]:
        click.echo(
            "error: no case matched a trace (by tracegrade.case_id, mapping, or first user input)",
            err=True,
        )
        sys.exit(int(ExitCode.USAGE))
    if input_errors:
        sys.exit(int(ExitCode.USAGE))
    sys.exit(int(ExitCode.FAILED if regression else verdict(doc)))
