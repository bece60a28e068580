"""``tracegrade lint FILE... | --db``: which scoring inputs each trace provides, and why not."""

from __future__ import annotations

import json
import sys

import click

from tracegrade.cli import render
from tracegrade.cli.options import db_option, files_argument, load, messages_key_option, report_errors
from tracegrade.collector.lint import lint
from tracegrade.errors import ExitCode


@click.command("lint")
@files_argument
@db_option
@messages_key_option
@click.option("--json", "as_json", is_flag=True, help="One lint report JSON object per line.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many traces.")
def command(files: tuple[str, ...], db: str | None, messages_key: str, as_json: bool, limit: int | None) -> None:
    """Check each trace for the inputs scorers need (user input, answer, tool arguments and
    results, tokens, timing) and say how to record what is missing. Exit code 1 when some
    trace misses an input."""
    loaded = load(files, db, messages_key, limit=limit)
    reports = [lint(t) for t in loaded.traces[:limit]]
    if as_json:
        for report in reports:
            click.echo(json.dumps(report.to_dict(), ensure_ascii=False))
    else:
        render.lint_reports(reports)
    report_errors(loaded.errors)
    if loaded.errors:
        sys.exit(int(ExitCode.USAGE))
    if not all(r.ok for r in reports):
        sys.exit(int(ExitCode.FAILED))
