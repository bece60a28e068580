"""``tracegrade score``: score trace files or stored traces, with or without a golden dataset."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from tracegrade.cli.follow_options import follow_options
from tracegrade.cli.gate_options import gate_options
from tracegrade.cli.options import (
    config_option,
    dataset_ref,
    db_option,
    files_argument,
    judge_options,
    mapping_option,
    messages_key_option,
    option_groups,
    options_of,
    pass_options,
    report_errors,
    report_options,
    scorer_option,
    tier_options,
    warn,
)
from tracegrade.cli.pull_options import from_options, pull_first
from tracegrade.cli.render import progress_counter, stored_line
from tracegrade.errors import ConfigError
from tracegrade.pipeline._score import ScoredRun, ScoreOptions, score
from tracegrade.report.comparison import print_comparison
from tracegrade.report.console import print_report

PROGRESS_FROM = 50
"""Show a progress count when scoring at least this many traces."""

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
    callback=dataset_ref,
    help="Golden dataset (YAML/JSON/JSONL, or store:NAME: one kept in the store). Without it, "
    "reference-free scorers run.",
)
@mapping_option
@tier_options
@pass_options
@click.option(
    "--since",
    help="Only traces started since: 30m, 12h, 7d or an ISO date/time (--follow: the horizon, "
    "unscored traces received since; default the store's retention, else all).",
)
@click.option(
    "--limit", type=click.IntRange(min=1), help="At most this many traces (store: newest first)."
)
@click.option(
    "--sample", type=click.FloatRange(0, 1, min_open=True), help="Keep this fraction, by trace id."
)
@scorer_option
@config_option
@from_options
@report_options
@click.option("--no-save", is_flag=True, help="Do not store the run.")
@follow_options
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Processes that run the scorers (0: one per CPU); results identical, in the same "
    "order (--follow: scoring processes sharing the queue). Not with the LLM judge.",
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
def command(**params: Any) -> None:
    """Score traces (files, or the store without files) against a golden dataset, or with the
    reference-free scorers only. Exit 0 when the run passes, 1 below threshold, 2 on a usage,
    config or input error, or when no case matched a trace."""
    options = options_of(ScoreOptions, params, dataset_path="dataset", config_path="config")
    options = dataclasses.replace(options, **option_groups(params))
    follow, files = params["follow"], params["files"]
    if (pulled := pull_first(params, follow)) is not None:
        options = dataclasses.replace(options, trace_ids=pulled)
    if follow:
        from tracegrade.cli.follow import follow_command  # scipy: only here

        if files:
            raise ConfigError("--follow reads the store; give no files")
        if options.gate.baseline or options.gate.min_score is not None:
            raise ConfigError("--baseline and --min-score gate a finished run, not --follow")
        keys = ("quiet_s", "window", "lease_s", "rootless_quiet_s", "judge_budget")
        sessions = params["session_quiet_s"] if params["sessions"] else None
        followed = {key: params[key] for key in keys}
        sys.exit(int(follow_command(options, **followed, session_quiet_s=sessions)))
    if params["judge_budget"] or params["sessions"]:
        raise ConfigError("--judge-budget and --sessions are for online scoring: add --follow")
    with (
        progress_counter("scoring", PROGRESS_FROM) as advance,
        score(options, progress=advance, on_errors=report_errors) as run,
    ):
        _render(run, params["verbose"], options.output.json_path, not options.output.save)
    sys.exit(int(run.exit_code))


def _render(run: ScoredRun, verbose: bool, json_path: str | None, no_save: bool) -> None:
    """The report, the comparison, warnings and the reason of a usage error."""
    run_id = run.document.head.run.run_id
    print_report(
        run.document,
        verbose=verbose,
        limit=CASES_SHOWN,
        see_all=_see_all(run_id, json_path, no_save),
    )
    if run.stored_in:
        click.echo(stored_line(run_id, run.stored_in))
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
