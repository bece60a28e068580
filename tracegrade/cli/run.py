"""``tracegrade run``: drive an instrumented agent through a golden dataset and score its traces."""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import click

from tracegrade.cli.gate_options import gate_options
from tracegrade.cli.options import (
    config_option,
    dataset_ref,
    judge_options,
    option_groups,
    options_of,
    pass_options,
    report_options,
    scorer_option,
    tier_options,
    warn,
)
from tracegrade.cli.render import stored_line
from tracegrade.cli.run_options import agent_options, receiver_options, simulator_options
from tracegrade.pipeline._run import RunOptions, run
from tracegrade.report.comparison import print_comparison
from tracegrade.report.console import print_report
from tracegrade.runner.agents.options import AgentOptions


@click.command("run")
@click.argument("dataset_path", metavar="DATASET", callback=dataset_ref)
@agent_options
@tier_options
@click.option(
    "--tags", multiple=True, help="Only cases with any of these tags (comma-separated, repeatable)."
)
@click.option(
    "--case", "case_ids", multiple=True, metavar="ID", help="Only this case (repeatable)."
)
@click.option(
    "--concurrency",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="Cases run at once.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=120.0,
    show_default=True,
    help="Seconds a case's conversation may take; past it the case fails.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Run each case N times: median score, spread, flaky cases.",
)
@click.option("--label", help="Free text stored with the run (agent version, model).")
@pass_options
@scorer_option
@config_option
@receiver_options
@report_options
@click.option(
    "--no-save",
    is_flag=True,
    help="Do not store the run (without --db its traces go to a temporary store, not kept).",
)
@click.option(
    "--judge/--no-judge",
    "judge_mode",
    default=None,
    help="LLM judge: by default cases with a judge rubric; --judge every case; --no-judge none "
    "(and no judge clarifications).",
)
@judge_options
@simulator_options
@gate_options
def command(**params: Any) -> None:
    """Run every selected case of DATASET (a file, or store:NAME for a dataset kept in the
    store) against the agent (exactly one of --agent,
    --agent-cmd, --agent-url), wait for each case's traces in an in-process OTLP receiver,
    score them as `tracegrade score` does, print the report and store the run (--db, default
    .tracegrade/tracegrade.db, as `score`). Exit 0 when the run passes, 1 below threshold, 2
    on a usage or config error, when no case produced a trace, or on Ctrl-C."""
    agent = options_of(AgentOptions, params, agent_ref="ref", agent_cmd="command", agent_url="url")
    options = options_of(RunOptions, params, dataset_path="dataset", config_path="config")
    options = dataclasses.replace(options, agent=agent, **option_groups(params))
    outcome = run(options)
    print_report(outcome.document, verbose=params["verbose"])
    if outcome.stored_in:
        click.echo(stored_line(outcome.document.head.run.run_id, outcome.stored_in))
    if outcome.comparison is not None:
        print_comparison(outcome.comparison)
    warn(outcome.warnings)
    if outcome.problem:
        click.echo(outcome.problem, err=True)
    sys.exit(int(outcome.exit_code))
