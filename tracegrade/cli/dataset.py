"""``tracegrade dataset``: golden datasets from real conversations (``dataset build``)."""

from __future__ import annotations

from typing import Any

import click

from tracegrade.cli.dataset_export import export_command
from tracegrade.cli.options import (
    db_option,
    files_argument,
    messages_key_option,
    report_errors,
    require_store,
)
from tracegrade.cli.pull_options import from_options, pull_first
from tracegrade.cli.render import built_line
from tracegrade.errors import ExitCode
from tracegrade.pipeline.dataset_build import DatasetBuildOptions, build


@click.group("dataset")
def command() -> None:
    """Golden datasets: build one from real conversations; export a stored one as YAML."""


command.add_command(export_command)


@command.command("build")
@files_argument
@db_option
@messages_key_option
@click.option(
    "--out", required=True, type=click.Path(dir_okay=False), help="Dataset file to write (YAML)."
)
@click.option("--since", help="Only conversations started since: 30m, 12h, 7d or an ISO date.")
@click.option(
    "--where",
    multiple=True,
    metavar="KEY=VALUE",
    help="Only conversations with this resource or root-span attribute (repeatable; all hold).",
)
@click.option(
    "--trace-id", "trace_ids", multiple=True, help="Only conversations holding these trace ids."
)
@click.option(
    "--sample", help="Keep a fraction (0.1) or a count (50) of conversations, by trace id."
)
@click.option(
    "--exact-args",
    multiple=True,
    metavar="TOOL",
    help="Expect this tool's calls with their exact arguments, required (repeatable).",
)
@click.option("--all-args", is_flag=True, help="Exact arguments for every tool.")
@click.option(
    "--ignore-tool",
    "ignore_tools",
    multiple=True,
    metavar="GLOB",
    help="Leave tools matching this pattern (e.g. ``get_*``) out of the expectations (repeatable).",
)
@click.option(
    "--redact",
    multiple=True,
    metavar="PATTERN",
    help="Regular expression replaced in inputs and expectations (repeatable; e-mail, phone and "
    "card numbers always are).",
)
@click.option("--append", is_flag=True, help="Add to an existing dataset, skipping known cases.")
@click.option(
    "--force", is_flag=True, help="Replace OUT when it exists (without it, or --append, refused)."
)
@click.option(
    "--headroom",
    type=click.FloatRange(min=1),
    default=2.0,
    show_default=True,
    help="Latency and token budgets: observed figure times this.",
)
@click.option(
    "--similarity",
    type=click.FloatRange(0, 100),
    default=90.0,
    show_default=True,
    help="Inputs at least this similar (rapidfuzz ratio, 0-100) are one case.",
)
@click.option(
    "--simulated-user",
    is_flag=True,
    help="A simulated user per conversation instead of its recorded turns: the opening, a goal "
    "and the facts the user gave, for a person to review (tracegrade run plays it).",
)
@from_options
def build_command(
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    out: str,
    since: str | None,
    where: tuple[str, ...],
    trace_ids: tuple[str, ...],
    sample: str | None,
    exact_args: tuple[str, ...],
    all_args: bool,
    ignore_tools: tuple[str, ...],
    redact: tuple[str, ...],
    append: bool,
    force: bool,
    headroom: float,
    similarity: float,
    simulated_user: bool,
    **pull_params: Any,
) -> None:
    """One golden case per conversation of FILES (or of the store), with expectations derived
    from its trace, marked ``review: pending``; writes OUT (an existing OUT: --append extends
    it, --force replaces it, else exit 2 and the file is kept). --from pulls the conversations
    from a trace backend into the store first."""
    pull_params.update(db=db, since=since, files=files)
    if (pulled := pull_first(pull_params)) is not None:
        trace_ids = (*trace_ids, *pulled)
    elif not files:
        require_store(db)
    params = DatasetBuildOptions(
        files,
        db,
        messages_key,
        out,
        since,
        where,
        trace_ids,
        sample,
        exact_args,
        all_args,
        ignore_tools,
        redact,
        append,
        headroom,
        similarity,
        force,
        simulated_user,
    )
    built = build(params, report_errors)
    click.echo(built_line(built.report, len(built.existing), str(built.path)))
    if built.input_errors:
        raise SystemExit(int(ExitCode.USAGE))
