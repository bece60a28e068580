"""``tracegrade lint FILE... | --db``: which scoring inputs each trace provides, and why not."""

from __future__ import annotations

import sys

import click

from tracegrade.cli import render
from tracegrade.cli.options import db_option, emit, files_argument, load, messages_key_option
from tracegrade.errors import ExitCode
from tracegrade.normalize.lint import lint


@click.command("lint")
@files_argument
@db_option
@messages_key_option
@click.option("--json", "as_json", is_flag=True, help="One lint report JSON object per line.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="At most this many traces.")
def command(
    files: tuple[str, ...], db: str | None, messages_key: str, as_json: bool, limit: int | None
) -> None:
    """Check each trace for the inputs scorers need (user input, answer, tool arguments and
    results, tokens, timing) and say how to record what is missing. Exit code 1 when some
    trace misses an input."""
    loaded = load(files, db, messages_key, limit=limit)
    reports = [lint(t) for t in loaded.traces[:limit]]
    emit(reports, as_json, render.lint_reports, loaded.errors)
    if not all(r.ok for r in reports):
        sys.exit(int(ExitCode.FAILED))
