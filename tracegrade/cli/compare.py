"""``tracegrade compare BASE CURRENT``: two runs case by case, and the regression verdict."""

from __future__ import annotations

import sys
from functools import partial

import click

from tracegrade.cli.gate_options import alpha_option, markdown_option, webhook_option
from tracegrade.cli.options import config_option, warn
from tracegrade.errors import ExitCode
from tracegrade.pipeline.gate import CompareOptions, compare
from tracegrade.report.comparison import print_comparison
from tracegrade.store.traces import DB_ENV


@click.command("compare")
@click.argument("base_ref", metavar="BASE")
@click.argument("current_ref", metavar="CURRENT", default="latest")
@click.option("--db", default=None, envvar=DB_ENV, metavar="PATH|URL", help="Trace store.")
@click.option(
    "--dataset",
    metavar="NAME|FILE|store:NAME",
    help="Take latest, latest~N and baseline among this dataset's runs.",
)
@click.option(
    "--json", "json_path", type=click.Path(dir_okay=False), help="Write the comparison (JSON)."
)
@markdown_option
@alpha_option
@webhook_option
@partial(config_option, help="Config file with regression rules (default ./tracegrade.yaml).")
def command(
    base_ref: str,
    current_ref: str,
    db: str | None,
    json_path: str | None,
    markdown_path: str | None,
    alpha: float | None,
    alert_webhook: str | None,
    config_path: str | None,
    dataset: str | None,
) -> None:
    """Compare run BASE with run CURRENT (default latest). Each is a run id (or prefix),
    latest, latest~N, baseline (with --dataset: among that dataset's runs; else CURRENT's
    dataset names BASE's), or a run-document JSON file (--json of score/run). Exit 0 when
    CURRENT did not regress, 1 on a regression, 2 on a usage or input error."""
    options = CompareOptions(
        base_ref,
        current_ref,
        db,
        config_path,
        alpha,
        json_path,
        markdown_path,
        alert_webhook,
        dataset,
    )
    compared = compare(options)
    print_comparison(compared.comparison)
    warn(compared.warnings)
    sys.exit(int(ExitCode.FAILED if compared.comparison.regression else ExitCode.OK))
