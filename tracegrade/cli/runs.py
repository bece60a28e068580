"""``tracegrade runs``: stored runs newest first; ``runs show RUN`` prints a run's report again;
``runs baseline RUN`` marks a run as its dataset's baseline."""

from __future__ import annotations

import dataclasses
import json

import click

from tracegrade.cli.options import reading_db_option, require_store
from tracegrade.cli.runs_table import fitted_table
from tracegrade.pipeline.run_history import stored_overviews
from tracegrade.report import terminal
from tracegrade.report.console import print_report
from tracegrade.store.runs import load_run, resolve_run, set_baseline
from tracegrade.store.traces import DB_ENV, Store

_group_db_option = click.option(
    "--db", default=None, envvar=DB_ENV, metavar="PATH|URL", help="Trace store."
)


@click.group("runs", invoke_without_command=True)
@click.option("--dataset", help="Only runs of this dataset (name, or the dataset file).")
@click.option("--label", help="Only runs with this label (exact, else a substring).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, per line.")
@_group_db_option
@click.pass_context
def command(
    ctx: click.Context,
    dataset: str | None,
    label: str | None,
    limit: int,
    as_json: bool,
    db: str | None,
) -> None:
    """Stored runs, newest first: id, time, dataset and digest, label, git, agent version,
    models, cases, pass rate, mean score, hallucination rate, latency p50/p95/mean, cost."""
    if ctx.invoked_subcommand is not None:
        return
    with Store(require_store(db)) as store:
        views = stored_overviews(store, dataset, label, limit)
    if as_json:
        for view in views:
            click.echo(json.dumps(dataclasses.asdict(view), ensure_ascii=False))
        return
    console = terminal.console()
    console.print(fitted_table(views, console.width) if views else "no stored runs")


@command.command("show")
@click.argument("ref", metavar="RUN")
@reading_db_option
@click.option("--verbose", "-v", is_flag=True, help="Every case with every scorer's value.")
@click.option("--json", "as_json", is_flag=True, help="The run document as JSON.")
def show(ref: str, db: str | None, verbose: bool, as_json: bool) -> None:
    """Print a stored run's report again (RUN: id or prefix, latest, latest~N, baseline)."""
    with Store(db) as store:
        doc = load_run(store, resolve_run(store, ref))
    if as_json:
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
        return
    print_report(doc, verbose=verbose)


@command.command("baseline")
@click.argument("ref", metavar="RUN")
@reading_db_option
def baseline(ref: str, db: str | None) -> None:
    """Mark RUN as its dataset's baseline (replacing the previous one)."""
    with Store(db) as store:
        run_id = resolve_run(store, ref)
        dataset = set_baseline(store, run_id)
    click.echo(f"run {run_id} is now the baseline of dataset {dataset}")
