"""``tracegrade score``: score trace files or stored traces, with or without a golden dataset."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
from rich.console import Console
from rich.progress import MofNCompleteColumn, Progress, TextColumn

from tracegrade import environment
from tracegrade.cli.gate_options import gate_options
from tracegrade.cli.judge_check import judge_options
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
    warn,
)
from tracegrade.dataset import Tier
from tracegrade.errors import ConfigError
from tracegrade.pipeline.score import ScoredRun, ScoreOptions, score
from tracegrade.report.comparison import print_comparison
from tracegrade.report.console import print_report
from tracegrade.store.follow import DEFAULT_LEASE_S
from tracegrade.store.traces import DEFAULT_QUIET_S

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
    envvar=environment.TRACEGRADE_ALERT_WEBHOOK,
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
    options = ScoreOptions(
        files=files,
        db=db,
        messages_key=messages_key,
        dataset=dataset_path,
        mapping=mapping,
        tier=tier,
        threshold=threshold,
        min_pass_rate=min_pass_rate,
        since=since,
        limit=limit,
        sample=sample,
        scorer_refs=scorer_refs,
        config=config_path,
        json_path=json_path,
        junit_path=junit_path,
        markdown_path=markdown_path,
        save=not no_save,
        workers=workers,
        judge=judge_mode,
        judge_model=judge_model,
        judge_concurrency=judge_concurrency,
        judge_repeat=judge_repeat,
        baseline=baseline,
        alpha=alpha,
        alert_webhook=alert_webhook,
        min_score=min_score,
    )
    if follow:
        from tracegrade.cli.follow import follow_command  # scipy: only here

        if files:
            raise ConfigError("--follow reads the store; give no files")
        if baseline or min_score is not None:
            raise ConfigError("--baseline and --min-score gate a finished run, not --follow")
        sys.exit(int(follow_command(options, quiet_s, window, lease_s)))
    with (
        _progress_stream() as advance,
        score(options, progress=advance, on_errors=report_errors) as run,
    ):
        _render(run, verbose, json_path, no_save)
    sys.exit(int(run.exit_code))


def _render(run: ScoredRun, verbose: bool, json_path: str | None, no_save: bool) -> None:
    """The report, the comparison, warnings and the reason of a usage error."""
    run_id = run.document["run"]["run_id"]
    print_report(
        run.document,
        verbose=verbose,
        limit=CASES_SHOWN,
        see_all=_see_all(run_id, json_path, no_save),
    )
    if run.comparison is not None:
        print_comparison(run.comparison)
    warn(run.warnings)
    if run.problem:
        click.echo(f"error: {run.problem}", err=True)


def _see_all(run_id: str, json_path: str | None, no_save: bool) -> str:
    """Where the cases the console leaves out are (see :data:`CASES_SHOWN`)."""
    where = [f"every case is in {json_path}"] if json_path else []
    where += [] if no_save else [f"tracegrade runs show {run_id} --verbose"]
    return "; ".join(where) or "add --json FILE to write every case"


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
