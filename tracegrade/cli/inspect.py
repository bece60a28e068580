"""``tracegrade inspect FILE... | --db``: show each trace as normalised, as a tree or JSON."""

from __future__ import annotations

import json

import click

from tracegrade.cli import render
from tracegrade.cli.options import db_option, emit, files_argument, load, messages_key_option
from tracegrade.trace import json_schema


@click.command("inspect")
@files_argument
@db_option
@messages_key_option
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="One AgentTrace JSON object per line (schema: --schema).",
)
@click.option("--schema", is_flag=True, help="Print the JSON Schema of the --json output and exit.")
@click.option("--trace-id", "trace_ids", multiple=True, help="Only these trace ids (repeatable).")
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="At most this many traces (store: newest).",
)
def command(
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    as_json: bool,
    schema: bool,
    trace_ids: tuple[str, ...],
    limit: int | None,
) -> None:
    """Show what tracegrade derives from each trace: user inputs, LLM calls, tool calls with
    arguments and results, tokens, the final answer, and gaps. Reads files directly (OTLP/JSON,
    protobuf, gzip; a traces file brings its logs sibling) or, without files, the store."""
    if schema:
        click.echo(json.dumps(json_schema(), indent=2))
        return
    loaded = load(files, db, messages_key, trace_ids=trace_ids, limit=limit)
    traces = [t for t in loaded.traces if not trace_ids or t.trace_id in trace_ids][:limit]
    emit(traces, as_json, render.traces, loaded.errors)
