"""``tracegrade import FILE...``: read trace files and transcripts into the store."""

from __future__ import annotations

import sys
from typing import Any

import click

from tracegrade.cli.options import (
    db_option,
    feedback_attribute_option,
    files_argument,
    messages_key_option,
    report_errors,
)
from tracegrade.cli.pull_options import (
    from_options,
    pull_options_of,
    pull_showing_progress,
    pulled_line,
)
from tracegrade.errors import ExitCode
from tracegrade.otlp.files import ReadOptions, read_paths
from tracegrade.store.traces import Store


@click.command("import")
@files_argument
@db_option
@messages_key_option
@feedback_attribute_option
@from_options
@click.option(
    "--since",
    help="--from: only traces started since: 30m, 12h, 7d or an ISO date/time (default: where "
    "the last pull of the same backend, URL, project and search ended; else all).",
)
@click.option("--limit", type=click.IntRange(min=1), help="--from: at most this many traces.")
def command(
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    feedback_attribute: str,
    **params: Any,
) -> None:
    """Import OTLP/JSON, OTLP protobuf, Collector file-exporter files, chat transcripts and
    any-agent traces into the store, or pull traces from a trace backend (--from: Phoenix,
    MLflow, Langfuse, Jaeger, Tempo). Bad lines are reported (file:line) and skipped; the rest
    is imported and the exit code is 2."""
    options = pull_options_of({**params, "db": db})
    if options is not None:
        if files:
            raise click.UsageError("--from pulls from a backend: give no files")
        click.echo(pulled_line(pull_showing_progress(options)))
        return
    if not files:
        raise click.UsageError("give at least one file or directory, or --from SOURCE")
    payloads = read_paths(files, ReadOptions(messages_key=messages_key))
    with Store(db, feedback_attribute=feedback_attribute or None) as store:
        spans = sum(store.add_traces(r) for r in payloads.traces)
        logs = sum(store.add_logs(r) for r in payloads.logs)
        counts = store.counts()
        path = store.path
    for source, kind in payloads.formats.items():
        click.echo(f"{source}: {kind}")
    click.echo(
        f"imported {spans} new span(s) and {logs} new log record(s) into {path} "
        f"(store: {counts['traces']} traces, {counts['spans']} spans, "
        f"{counts['log_records']} log records)"
    )
    report_errors(payloads.errors)
    if payloads.errors:
        sys.exit(int(ExitCode.USAGE))
