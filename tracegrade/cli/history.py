"""``tracegrade history [DATASET]``: a dataset's runs over time (version, score, pass rate,
hallucination rate, mean and p95 latency, cost), oldest first, with a sparkline per column;
``--png PATH`` draws the same trend with matplotlib."""

from __future__ import annotations

from collections.abc import Sequence

import click
from rich.markup import escape
from rich.table import Table

from tracegrade.cli.options import reading_db_option
from tracegrade.errors import ConfigError
from tracegrade.pipeline.run_history import RunOverview, stored_histories
from tracegrade.report import terminal
from tracegrade.report.comparison import value
from tracegrade.report.trend import COLUMNS, sparkline, write_png
from tracegrade.store.traces import Store


def version_of(view: RunOverview, by: str) -> str:
    """The run's name in the trend: its label, agent ``service.version`` or git sha (falling
    back to the run id)."""
    name = {
        "label": view.label,
        "version": view.agent_version,
        "git": (view.git_sha or "")[:8] or None,
    }[by]
    return name or view.run_id


def _table(dataset: str | None, views: Sequence[RunOverview], by: str) -> Table:
    title = f"history of {dataset}" if dataset else "history of the runs scored without a dataset"
    table = Table(title=escape(title), title_justify="left")
    table.add_column(by)
    table.add_column("run")
    for _, title in COLUMNS:
        table.add_column(title, justify="right")
    for view in views:
        table.add_row(
            escape(version_of(view, by)),
            escape(view.run_id),
            *(value(metric, getattr(view, metric)) for metric, _ in COLUMNS),
        )
    table.add_section()
    table.add_row(
        "trend",
        "",
        *(sparkline([getattr(v, metric) for v in views]) for metric, _ in COLUMNS),
    )
    return table


@click.command("history")
@click.argument("dataset", required=False)
@click.option("--limit", type=click.IntRange(min=1), default=10, show_default=True)
@click.option(
    "--by",
    type=click.Choice(["label", "version", "git"]),
    default="label",
    show_default=True,
    help="Name each run by its --label, agent service.version or git sha.",
)
@click.option("--label", help="Only runs with this label (exact, else a substring).")
@click.option("--png", "png_path", type=click.Path(dir_okay=False), help="Also draw a chart.")
@reading_db_option
def command(
    dataset: str | None,
    limit: int,
    by: str,
    label: str | None,
    png_path: str | None,
    db: str | None,
) -> None:
    """The last --limit runs of DATASET (a dataset name or file; default: of each dataset,
    one trend per dataset), oldest first, with a sparkline per column. Exit 2 when DATASET
    (or --label) matches no stored run."""
    with Store(db) as store:
        groups = stored_histories(store, dataset, label, limit)
        location = store.location
    if not groups:
        click.echo(f"no stored runs in {location}")
        return
    if png_path and len(groups) > 1:
        names = ", ".join(name for name, _ in groups if name)
        raise ConfigError(f"--png draws one dataset's trend: name one of {names}")
    for name, views in groups:
        terminal.console().print(_table(name, views, by))
    if png_path:
        views = groups[0][1]
        write_png(views, [version_of(v, by) for v in views], png_path)
        click.echo(f"chart written to {png_path}")
