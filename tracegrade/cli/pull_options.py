"""``--from SOURCE`` and its options, shared by ``import``, ``score`` and ``dataset build``:
pull traces from a trace backend into the store first (:mod:`tracegrade.pipeline.pull`)."""

from __future__ import annotations

import time
from typing import Any

import click

from tracegrade.cli.options import F, stacked
from tracegrade.errors import ConfigError
from tracegrade.pipeline.pull import Pulled, PullOptions, pull
from tracegrade.sources import SOURCES

PROGRESS_EVERY_S = 2.0
"""A long pull prints its running count on stderr at most this often."""


FROM_OPTIONS = [
    click.option(
        "--from",
        "source",
        type=click.Choice(sorted(SOURCES)),
        help="Pull traces from this backend into the store first (credentials from its own "
        "environment variables; see the guide of each).",
    ),
    click.option(
        "--url",
        "source_url",
        metavar="URL",
        help="--from: the backend's URL (default: its "
        "environment variable, else its usual local address).",
    ),
    click.option(
        "--project",
        "source_project",
        help="--from: Phoenix project, MLflow experiment (id or name), Jaeger or Tempo service.",
    ),
    click.option(
        "--search",
        "source_search",
        help="--from: the backend's own filter (Phoenix filter expression, MLflow filter "
        "string, Langfuse query parameters, Jaeger operation, Tempo TraceQL).",
    ),
    click.option("--until", "source_until", help="--from: only traces started before this time."),
    click.option(
        "--page-size",
        "source_page_size",
        type=click.IntRange(1, 1000),
        default=100,
        show_default=True,
        help="--from: traces asked of the backend per request.",
    ),
    click.option(
        "--source-trace-id",
        "source_trace_ids",
        multiple=True,
        metavar="ID",
        help="--from: these traces only (repeatable; MLflow's tr- ids too).",
    ),
]


def from_options(function: F) -> F:
    """``--from`` and the options of a pull, for ``score`` and ``dataset build`` (whose
    ``--since`` and ``--limit`` also bound the pull)."""
    return stacked(FROM_OPTIONS)(function)


def pull_options_of(params: dict[str, Any]) -> PullOptions | None:
    """The pull a command's parameters ask for (None without ``--from``)."""
    if not params.get("source"):
        return None
    return PullOptions(
        source=params["source"],
        db=params.get("db"),
        url=params.get("source_url"),
        project=params.get("source_project"),
        search=params.get("source_search"),
        since=params.get("since"),
        until=params.get("source_until"),
        trace_ids=tuple(params.get("source_trace_ids") or ()),
        limit=params.get("limit"),
        page_size=params.get("source_page_size") or 100,
    )


class _Progress:
    """Prints a running count on stderr, at most every :data:`PROGRESS_EVERY_S` seconds."""

    def __init__(self) -> None:
        self.shown: float | None = None

    def __call__(self, pulled: Pulled) -> None:
        if self.shown is None:  # the first page: the clock starts, a short pull prints nothing
            self.shown = time.monotonic()
        elif time.monotonic() - self.shown >= PROGRESS_EVERY_S:
            self.shown = time.monotonic()
            click.echo(
                f"pulling from {pulled.source}: {len(pulled.trace_ids)} trace(s) found, "
                f"{len(pulled.new)} new, {pulled.requests} request(s)",
                err=True,
            )


def pull_showing_progress(options: PullOptions) -> Pulled:
    """Pull, printing the progress of a long pull on stderr (see :class:`_Progress`)."""
    return pull(options, progress=_Progress())


def run_pull(options: PullOptions) -> Pulled:
    """Pull (progress on stderr), then print one line of what was pulled on stderr."""
    pulled = pull_showing_progress(options)
    click.echo(pulled_line(pulled), err=True)
    return pulled


def pull_first(params: dict[str, Any], follow: bool = False) -> list[str] | None:
    """For ``score`` and ``dataset build``: with ``--from``, pull (progress and a summary on
    stderr) and return the ids of the traces found; None without ``--from``.

    Raises:
        ConfigError: ``--from`` with files or ``--follow``; nothing pulled.
    """
    options = pull_options_of(params)
    if options is None:
        return None
    if params.get("files") or follow:
        raise ConfigError("--from pulls traces into the store: give no files (and no --follow)")
    pulled = run_pull(options)
    if not pulled.trace_ids:
        raise ConfigError(f"no traces pulled from {pulled.source} at {pulled.location}")
    return pulled.trace_ids


def pulled_line(pulled: Pulled) -> str:
    """One line: what a pull found and stored, and where it resumed from."""
    resumed = ""
    if pulled.resumed_from is not None:
        moment = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(pulled.resumed_from / 1e9))
        resumed = f" (resumed from {moment}, where the last pull ended)"
    return (
        f"pulled {len(pulled.trace_ids)} trace(s) from {pulled.source} at {pulled.location}"
        f"{resumed}: {len(pulled.new)} new ({pulled.spans} span(s)), "
        f"{len(pulled.known)} already stored, into {pulled.store}"
    )
