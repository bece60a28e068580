"""``tracegrade compare BASE CURRENT``: two runs case by case, and the regression verdict."""

from __future__ import annotations

import sys
from functools import partial

import click

from tracegrade.cli.options import config_option
from tracegrade.config import load_config
from tracegrade.errors import ExitCode
from tracegrade.pipeline.gate import (
    alpha_option,
    compare_documents,
    dataset_name,
    markdown_option,
    publish,
    resolve_document,
    rules_for,
    webhook_option,
)
from tracegrade.pipeline.outputs import write_json
from tracegrade.store.traces import DB_ENV


@click.command("compare")
@click.argument("base_ref", metavar="BASE")
@click.argument("current_ref", metavar="CURRENT", default="latest")
@click.option("--db", default=None, envvar=DB_ENV, metavar="PATH|URL", help="Trace store.")
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
) -> None:
    """Compare run BASE with run CURRENT (default latest). Each is a run id (or prefix),
    latest, latest~N, baseline, or a run-document JSON file (--json of score/run). Exit 0 when
    CURRENT did not regress, 1 on a regression, 2 on a usage or input error."""
    config = load_config(config_path)
    current, _ = resolve_document(current_ref, db)
    base, is_baseline = resolve_document(base_ref, db, dataset_name(current))
    comparison = compare_documents(
        base, current, rules_for(config, alpha), [db], base_is_baseline=is_baseline, config=config
    )
    if json_path:
        write_json(json_path, comparison.to_json())
    publish(comparison, alert_webhook, markdown_path)
    sys.exit(int(ExitCode.FAILED if comparison.regression else ExitCode.OK))
