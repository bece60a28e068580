"""``tracegrade inspect FILE... | --db``: show each trace as normalised, as a tree or JSON."""

from __future__ import annotations

import json
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
from tracegrade.errors import InputError
from tracegrade.pipeline.reading import explained_batches, load_batches, no_traces_error
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
@click.option(
    "--explain",
    is_flag=True,
    help="Say where each derived field came from: the span, the convention map and the "
    "attribute (and each span's role, and content no map reads).",
)
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
    explain: bool,
    trace_ids: tuple[str, ...],
    limit: int | None,
) -> None:
    """Show what tracegrade derives from each trace: user inputs, LLM calls, tool calls with
    arguments and results, tokens, the final answer, and gaps. Reads files directly (OTLP/JSON,
    protobuf, gzip; a traces file brings its logs sibling) or, without files, the store."""
    if schema:
        click.echo(json.dumps(json_schema(), indent=2))
        return
    if not files:
        require_store(db)
    errors: list[InputError] = []
    reported = ErrorReport()
    if explain:
        _explain(files, db, messages_key, as_json, trace_ids, limit, errors, reported)
        return
    batches = load_batches(
        files, db, messages_key, errors, trace_ids=trace_ids, limit=limit, on_errors=reported
    )
    wanted = set(trace_ids)
    count = llm_calls = tool_calls = 0
    for batch in batches:  # printed batch by batch: memory stays flat
        traces = [t for t in batch if not wanted or t.trace_id in wanted]
        traces = traces[: None if limit is None else limit - count]
        count += len(traces)
        llm_calls += sum(len(t.llm_calls) for t in traces)
        tool_calls += sum(len(t.tool_calls) for t in traces)
        emit(traces, as_json, partial(render.traces, total=False), ())
        if limit is not None and count >= limit:
            break
    if not count and not files:
        raise no_traces_error(files, db, trace_ids=trace_ids, limit=limit)
    reported(errors)  # met after the last batch printed, or past a --limit cut
    emit(
        [],
        as_json,
        lambda _: render.traces_total(count, llm_calls, tool_calls),
        errors,
        reported=True,
    )


def _explain(
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    as_json: bool,
    trace_ids: tuple[str, ...],
    limit: int | None,
    errors: list[InputError],
    reported: ErrorReport,
) -> None:
    count = 0
    wanted = set(trace_ids)
    batches = explained_batches(
        files, db, messages_key, errors=errors, trace_ids=trace_ids, limit=limit, on_errors=reported
    )
    for batch in batches:
        items = [e for e in batch if not wanted or e.trace.trace_id in wanted]
        items = items[: None if limit is None else limit - count]
        count += len(items)
        if as_json:
            for item in items:
                click.echo(json.dumps(item.to_dict(), ensure_ascii=False))
        else:
            render.explanations(items)
        if limit is not None and count >= limit:
            break
    if not count and not files:
        raise no_traces_error(files, db, trace_ids=trace_ids, limit=limit)
    reported(errors)
