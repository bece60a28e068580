"""``tracegrade export OUT``: write stored traces as an OpenTelemetry Collector file."""

from __future__ import annotations

from pathlib import Path

import click

from tracegrade.cli.options import db_option
from tracegrade.cli.selection import parse_since
from tracegrade.otlp.files import write_jsonl, write_protobuf
from tracegrade.store.traces import Store


def _logs_path(out: Path) -> Path:
    name = out.name.replace("traces", "logs", 1) if "traces" in out.name else f"logs.{out.name}"
    return out.with_name(name)


@click.command("export")
@click.argument("out", type=click.Path(dir_okay=False))
@db_option
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
    with Store(db) as store:
        ids = store.trace_ids(since_unix_nano=parse_since(since), limit=limit, trace_ids=trace_ids)
        traces, logs = store.requests(ids)
    writer = write_jsonl if fmt == "json" else write_protobuf
    writer(path, [traces])
    written = [str(path)]
    if logs.resource_logs:
        writer(_logs_path(path), [logs])
        written.append(str(_logs_path(path)))
    click.echo(f"exported {len(ids)} trace(s) to {' and '.join(written)}")
