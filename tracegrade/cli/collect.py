"""``tracegrade collect``: run the local OTLP receiver until SIGINT/SIGTERM."""

from __future__ import annotations

from typing import Any

import click

from tracegrade.cli.options import db_option, receiver_feedback_options
from tracegrade.cli.serving import STATUS_EVERY_S, serve
from tracegrade.collector import receiver as receiving
from tracegrade.collector.address import is_loopback
from tracegrade.collector.admission import DEFAULT_REDACT
from tracegrade.collector.memory import DEFAULT_MAX_MEMORY_BYTES
from tracegrade.collector.memory import return_large_allocations_to_the_os as trim_heap
from tracegrade.collector.service import DEFAULT_MAX_REQUEST_BYTES
from tracegrade.errors import ConfigError
from tracegrade.pipeline.retention import retained


@click.command("collect")
@db_option
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback by default)."
)
@click.option(
    "--grpc-port",
    type=click.IntRange(0, 65535),
    default=receiving.DEFAULT_GRPC_PORT,
    show_default=True,
    help="OTLP/gRPC port (0: any free port).",
)
@click.option(
    "--http-port",
    type=click.IntRange(0, 65535),
    default=receiving.DEFAULT_HTTP_PORT,
    show_default=True,
    help="OTLP/HTTP port (0: any free port).",
)
@click.option(
    "--token",
    envvar=receiving.TOKEN_ENV,
    show_envvar=True,
    default=None,
    help="Require 'authorization: Bearer TOKEN' on both protocols.",
)
@click.option(
    "--redact",
    "redact",
    multiple=True,
    metavar="PATTERN",
    help="Key pattern whose values are redacted before storage, at any depth (repeatable; "
    "replaces the keys of config/redaction.yaml: "
    + ", ".join(f"``{key}``" for key in DEFAULT_REDACT[:6])
    + ", ...).",
)
@click.option("--no-redact", is_flag=True, help="Store everything as received (no redaction).")
@click.option(
    "--max-request-mib",
    type=click.FloatRange(0, min_open=True),
    default=DEFAULT_MAX_REQUEST_BYTES / 2**20,
    show_default=True,
    help="Largest request accepted, MiB (413 / RESOURCE_EXHAUSTED beyond).",
)
@click.option(
    "--max-queue-mib",
    type=click.FloatRange(0, min_open=True),
    default=64.0,
    show_default=True,
    help="Receive queue bound, MiB of requests (429 / RESOURCE_EXHAUSTED beyond).",
)
@click.option(
    "--max-memory-mib",
    type=click.FloatRange(0, min_open=True),
    default=DEFAULT_MAX_MEMORY_BYTES / 2**20,
    show_default=True,
    help="Memory the receiver may hold beyond its start-up footprint, MiB: requests being "
    "received, decoded and stored reserve 75% of it less the store's working memory (429 / "
    "RESOURCE_EXHAUSTED with a retry delay beyond), and new requests are refused while the "
    "resident set is near the footprint plus 75% of it (docs/guides/receiving-otlp.md).",
)
@receiver_feedback_options
@click.option(
    "--retention",
    metavar="DURATION",
    help="Prune what the store received before this long ago (30d), hourly (tracegrade prune).",
)
@click.option("--verbose", "-v", is_flag=True, help="A status line every --status-every seconds.")
@click.option(
    "--status-every",
    type=click.FloatRange(0.1),
    default=STATUS_EVERY_S,
    show_default=True,
    help="Seconds between status lines with --verbose.",
)
def command(
    db: str | None,
    host: str,
    grpc_port: int,
    http_port: int,
    token: str | None,
    redact: tuple[str, ...],
    no_redact: bool,
    max_request_mib: float,
    max_queue_mib: float,
    max_memory_mib: float,
    feedback: dict[str, Any],
    retention: str | None,
    verbose: bool,
    status_every: float,
) -> None:
    """Receive OTLP traces and logs (gRPC and HTTP) into the trace store until SIGINT/SIGTERM.

    A request is acknowledged once its spans are committed (metrics: answered, not stored).
    Prints one readiness line (ports, store) when serving."""
    if token is not None and not token.strip():
        raise ConfigError("--token / TRACEGRADE_TOKEN is empty")
    if token is None and not is_loopback(host):
        click.echo(f"warning: --host {host} is not loopback and no --token is set", err=True)
    config = receiving.ReceiverConfig(
        host=host,
        grpc_port=grpc_port,
        http_port=http_port,
        db=db,
        token=token,
        redact=() if no_redact else (redact or DEFAULT_REDACT),
        redact_values=() if no_redact else None,
        max_request_bytes=int(max_request_mib * 2**20),
        max_queue_bytes=int(max_queue_mib * 2**20),
        max_memory_bytes=int(max_memory_mib * 2**20),
        guard_resident=True,
        **feedback,
    )
    trim_heap()
    try:
        receiver = receiving.Receiver(config).start()
    except OSError as exc:
        raise ConfigError(f"cannot start the receiver on {host}: {exc}") from exc
    try:
        with retained(db, retention, lambda text: click.echo(f"collect: {text}", err=True)):
            serve(receiver, verbose, status_every)
    finally:
        receiver.stop()
    stats = receiver.stats
    stored, rejected = f"{stats.stored_items:,}", f"{stats.rejected_items:,}"
    click.echo(f"tracegrade collect: stopped; {stored} items stored, {rejected} rejected", err=True)
