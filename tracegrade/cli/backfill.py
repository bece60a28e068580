"""``tracegrade backfill``: score the stored traces the current evaluator has not scored."""

from __future__ import annotations

import dataclasses
import signal
import sys
import threading
from typing import Any

import click

from tracegrade.cli.follow import line
from tracegrade.cli.options import (
    config_option,
    dataset_ref,
    judge_options,
    option_groups,
    options_of,
    reading_db_option,
    scorer_option,
    tier_options,
)
from tracegrade.errors import ExitCode
from tracegrade.judge.budget import parse_budget
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.backfill import DEFAULT_MAX_RATE, Backfill, make_backfill
from tracegrade.pipeline.judging import judge_cache
from tracegrade.store.follow import DEFAULT_LEASE_S


@click.command("backfill")
@reading_db_option
@click.option(
    "--since",
    required=True,
    help="The horizon: stored traces received since 30m, 12h, 7d or an ISO date/time.",
)
@click.option(
    "--dataset",
    "dataset_path",
    callback=dataset_ref,
    help="Golden dataset (a file, or store:NAME), as score --follow takes it: a new version "
    "is a new evaluator. Without it, the reference-free scorers.",
)
@tier_options
@click.option("--threshold", type=click.FloatRange(0, 1), default=None, help="Pass score per case.")
@click.option(
    "--sample",
    type=click.FloatRange(0, 1, min_open=True),
    help="Keep this fraction of the traces no sampling rule matches, by trace id.",
)
@scorer_option
@config_option
@click.option(
    "--judge/--no-judge",
    "judge_mode",
    default=None,
    help="LLM judge, as score --follow: by default cases with a judge rubric; --judge every "
    "trace; --no-judge none.",
)
@judge_options
@click.option(
    "--judge-budget",
    multiple=True,
    metavar="USD/h,USD/d",
    help="What the judge may spend per rolling hour and/or day, shared with score --follow "
    "workers of the store (e.g. 2/h,20/d).",
)
@click.option(
    "--max-rate",
    type=click.FloatRange(min=0),
    default=DEFAULT_MAX_RATE,
    show_default=True,
    help="Traces scored per second at most (0: no bound).",
)
@click.option(
    "--lease-s",
    type=click.FloatRange(min=1),
    default=DEFAULT_LEASE_S,
    show_default=True,
    help="Seconds a claim lasts unless renewed; a killed backfill's claims go to the next "
    "worker after this.",
)
@click.option(
    "--export-otlp",
    metavar="ENDPOINT",
    help="Send each result as gen_ai.evaluation.result log records to this OTLP endpoint.",
)
def command(**params: Any) -> None:
    """Score every stored trace received since --since that the current evaluator (these
    scorers and their versions, this dataset version and config) has not scored: each once,
    beside live score --follow workers, at a bounded rate; start it again after a kill and it
    goes on. One line per trace; exit 0 when every one passed, 1 when some failed."""
    max_rate = params.pop("max_rate") or None
    lease_s, budget = params.pop("lease_s"), parse_budget(params.pop("judge_budget"))
    options = options_of(ScoreOptions, params, dataset_path="dataset", config_path="config")
    options = dataclasses.replace(options, **option_groups(params))
    backfill, judge = make_backfill(
        options, max_rate=max_rate, lease_s=lease_s, judge_budget=budget
    )
    with judge_cache(options.db, judge):
        sys.exit(int(run_until_done(backfill)))


def run_until_done(backfill: Backfill) -> ExitCode:
    """Run ``backfill`` until its backlog is empty or SIGINT/SIGTERM; print a summary."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    rate = f"at most {backfill.max_rate:g} traces/s" if backfill.max_rate else "no rate bound"
    click.echo(
        f"tracegrade backfill: evaluator {backfill.evaluator}, {rate}; Ctrl-C to stop", err=True
    )
    backfill.run(stop, lambda result: click.echo(line(result)), click.echo)
    state = "stopped" if stop.is_set() else "done"
    click.echo(
        f"tracegrade backfill: {state}: {backfill.scored} traces scored, {backfill.failed} "
        f"failed, {backfill.passed_over} passed over (sampling, no case) at "
        f"{backfill.rate:.1f} traces/s",
        err=True,
    )
    return ExitCode.FAILED if backfill.failed else ExitCode.OK
