"""``tracegrade runs``: stored runs newest first; ``runs show RUN`` prints a run's report again;
``runs baseline RUN`` marks a run as its dataset's baseline."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracegrade.compare import RunOverview, overview
from tracegrade.dataset import load_dataset
from tracegrade.report.comparison import value
from tracegrade.report.console import print_report
from tracegrade.store.runs import baselines, load_run, recent_runs, resolve_run, set_baseline
from tracegrade.store.traces import DB_ENV, Store

db_option = click.option(
    "--db", default=None, envvar=DB_ENV, metavar="PATH|URL", help="Trace store."
)


def dataset_filter(value_: str | None) -> str | None:
    """``--dataset NAME|PATH``: a path to a dataset file is replaced by its name."""
    if value_ and Path(value_).is_file():
        return load_dataset(value_).name
    return value_


def stored_overviews(
    store: Store, dataset: str | None, label: str | None, limit: int
) -> list[RunOverview]:
    """The overviews of the newest runs (dataset name or file, label filters)."""
    marked = set(baselines(store).values())
    docs = recent_runs(store, dataset=dataset_filter(dataset), label=label, limit=limit)
    return [overview(d, baseline=d["run"]["run_id"] in marked) for d in docs]


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}"


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


def _table(views: list[RunOverview]) -> Table:
    table = Table(title="runs (newest first; latency in s)", title_justify="left")
    table.add_column("run", overflow="fold", min_width=12)
    for column in ("time", "dataset", "label / git / agent"):
        table.add_column(column, overflow="fold", min_width=5)
    for column in ("cases", "pass", "score", "halluc.", "p50/p95/mean", "cost"):
        table.add_column(column, justify="right", min_width=min(len(column), 7))
    for v in views:
        who = [v.label, " ".join(x for x in ((v.git_sha or "")[:8], v.git_branch) if x)]
        who += [" ".join(x for x in (v.agent_version, ", ".join(v.models)) if x)]
        table.add_row(
            escape(v.run_id) + ("\n[bold]baseline[/]" if v.baseline else ""),
            (v.created_at or "")[5:16].replace("T", " "),
            escape(f"{v.dataset or '-'} {(v.dataset_digest or '')[:6]}".strip()),
            escape("\n".join(x for x in who if x)),
            str(v.cases) + (f"x{v.repeat}" if v.repeat > 1 else ""),
            _percent(v.pass_rate),
            value("score", v.score),
            _percent(v.hallucination_rate),
            "/".join(_seconds(x) for x in (v.latency_p50_ms, v.latency_p95_ms, v.latency_mean_ms)),
            value("cost_usd", v.cost_usd),
        )
    return table


@click.group("runs", invoke_without_command=True)
@click.option("--dataset", help="Only runs of this dataset (name, or the dataset file).")
@click.option("--label", help="Only runs with this label (exact, else a substring).")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per run, per line.")
@db_option
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
    with Store(db) as store:
        views = stored_overviews(store, dataset, label, limit)
    if as_json:
        for view in views:
            click.echo(json.dumps(dataclasses.asdict(view), ensure_ascii=False))
        return
    Console().print(_table(views) if views else "no stored runs")


@command.command("show")
@click.argument("ref", metavar="RUN")
@db_option
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
@db_option
def baseline(ref: str, db: str | None) -> None:
    """Mark RUN as its dataset's baseline (replacing the previous one)."""
    with Store(db) as store:
        run_id = resolve_run(store, ref)
        dataset = set_baseline(store, run_id)
    click.echo(f"run {run_id} is now the baseline of dataset {dataset}")
