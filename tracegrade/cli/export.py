"""``tracegrade export OUT``: write stored traces as an OpenTelemetry Collector file."""

from __future__ import annotations

from pathlib import Path

import click

from tracegrade.cli.options import reading_db_option
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.otlp.files import write_jsonl, write_protobuf
from tracegrade.pipeline.reading import parse_since
from tracegrade.store.scan import trace_id_batches
from tracegrade.store.traces import Store

BATCH = 256
"""Traces per exported request (one line of the JSON format, one message of the proto one)."""


def _logs_path(out: Path) -> Path:
    name = out.name.replace("traces", "logs", 1) if "traces" in out.name else f"logs.{out.name}"
    return out.with_name(name)


@click.command("export")
@click.argument("out", type=click.Path(dir_okay=False))
@reading_db_option
@click.option("--trace-id", "trace_ids", multiple=True, help="Only these trace ids (repeatable).")
@click.option("--since", help="Only traces started since: 30m, 12h, 7d or an ISO date/time.")
@click.option("--limit", type=click.IntRange(min=1), help="At most this many traces, newest first.")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["json", "proto"]),
    default="json",
    show_default=True,
    help="Collector file exporter format: OTLP/JSON lines, or 4-byte length-prefixed protobuf.",
)
def command(
    out: str,
    db: str | None,
    trace_ids: tuple[str, ...],
    since: str | None,
    limit: int | None,
    fmt: str,
) -> None:
    """Write stored spans (OUT) and log records (its ``logs`` sibling) in the OpenTelemetry
    Collector file exporter format; OUT ending in .gz is gzip-compressed (JSON format)."""
    path = Path(out)
    writer = write_jsonl if fmt == "json" else write_protobuf
    count, logs_written = 0, False
    with Store(db) as store:
        batches = trace_id_batches(
            store,
            since_unix_nano=parse_since(since),
            limit=limit,
            trace_ids=trace_ids,
            batch_size=BATCH,
        )
        for ids in batches:  # one request per batch: memory stays flat
            traces, logs = store.requests(ids)
            writer(path, [traces], append=count > 0)
            if logs.resource_logs:
                writer(_logs_path(path), [logs], append=logs_written)
                logs_written = True
            count += len(ids)
    if not count:
        writer(path, [ExportTraceServiceRequest()])
    written = [str(path)] + ([str(_logs_path(path))] if logs_written else [])
    click.echo(f"exported {count} trace(s) to {' and '.join(written)}")
