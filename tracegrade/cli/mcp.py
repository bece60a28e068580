"""``tracegrade mcp``: serve the store's runs, cases and traces to coding agents over the Model
Context Protocol (stdio, or streamable HTTP behind the dashboard's token)."""

from __future__ import annotations

import click

from tracegrade.cli.options import db_option
from tracegrade.errors import ConfigError
from tracegrade.web.security import TOKEN_ENV, is_loopback


@click.command("mcp")
@db_option
@click.option(
    "--allow-writes",
    is_flag=True,
    help="Also serve the write tools: mark a baseline, label a review item (default read-only).",
)
@click.option(
    "--http", "use_http", is_flag=True, help="Serve streamable HTTP at /mcp instead of stdio."
)
@click.option("--host", default="127.0.0.1", show_default=True, help="--http: address to bind.")
@click.option("--port", type=click.IntRange(0, 65535), default=8766, show_default=True)
@click.option(
    "--token",
    envvar=TOKEN_ENV,
    show_envvar=True,
    help="--http: require 'Authorization: Bearer TOKEN' (the dashboard's token); required off "
    "loopback.",
)
def command(
    db: str | None,
    allow_writes: bool,
    use_http: bool,
    host: str,
    port: int,
    token: str | None,
) -> None:
    """Serve tracegrade's tools over MCP: list runs, a run's failed cases with reasons, compare
    two runs case by case, a case's trace as a chat, lint a trace file, score a file against a
    dataset, search traces (and, with --allow-writes, mark a baseline, label a review item).
    Needs the mcp extra: pip install 'tracegrade[mcp]'."""
    from tracegrade.mcp.server import build_server, http_app

    if token is not None and not token.strip():
        raise ConfigError(f"--token / {TOKEN_ENV} is blank: set a token of visible characters")
    server = build_server(db, allow_writes=allow_writes)
    if not use_http:
        server.run("stdio")
        return
    if not is_loopback(host) and not token:
        raise ConfigError(f"--host {host} is not loopback: set --token (or {TOKEN_ENV})")
    import uvicorn

    click.echo(f"tracegrade mcp: serving http://{host}:{port}/mcp", err=True)
    uvicorn.run(http_app(server, token, host), host=host, port=port, log_level="warning")
