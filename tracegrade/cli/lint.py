"""``tracegrade lint FILE... | --db``: which scoring inputs each trace provides, and why not."""

from __future__ import annotations

import sys
from functools import partial

import click

from tracegrade.cli import render
from tracegrade.cli.options import (
    ErrorReport,
    db_option,
    emit,
    files_argument,
    messages_key_option,
    require_store,
)
from tracegrade.errors import ExitCode, InputError
from tracegrade.normalize.lint import lint
from tracegrade.pipeline.reading import load_batches, no_traces_error


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
    if not files:
        require_store(db)
    errors: list[InputError] = []
    count = missing = 0
    reported = ErrorReport()
    for batch in load_batches(files, db, messages_key, errors, limit=limit, on_errors=reported):
        reports = [lint(t) for t in batch[: None if limit is None else limit - count]]
        count += len(reports)
        missing += sum(1 for r in reports if not r.ok)
        emit(reports, as_json, partial(render.lint_reports, total=False), ())
        if limit is not None and count >= limit:
            break
    if not count and not files:
        raise no_traces_error(files, db, limit=limit)
    reported(errors)  # met after the last batch printed, or past a --limit cut
    emit([], as_json, lambda _: render.lint_total(count, missing), errors, reported=True)
    if missing:
        sys.exit(int(ExitCode.FAILED))
