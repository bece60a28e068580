"""``tracegrade dataset``: golden datasets from real conversations (``dataset build``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from tracegrade.cli.options import db_option, files_argument, messages_key_option, report_errors
from tracegrade.curate.build import (
    BuildOptions,
    build_dataset,
    parse_where,
    read_existing,
    write_dataset,
)
from tracegrade.curate.derive import DeriveOptions
from tracegrade.errors import ConfigError, ExitCode
from tracegrade.otlp.files import ReadOptions
from tracegrade.pipeline import sources
from tracegrade.pipeline.selection import parse_since
from tracegrade.store.traces import Store, default_path
from tracegrade.store.verdicts import judge_verdicts


@click.group("dataset")
def command() -> None:
    """Golden datasets: build one from real conversations."""


def _sample(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number <= 0 or (number >= 1 and not number.is_integer()):
        raise ConfigError(f"--sample {value!r}: a fraction in (0, 1) or a count of conversations")
    return number


def _load(files: tuple[str, ...], db: str | None, messages_key: str, since_ns: int | None) -> Any:
    """(loaded traces, judge verdicts from stored runs, where they came from)."""
    if files:
        loaded = sources.from_files(files, ReadOptions(messages_key=messages_key))
        return loaded, {}, ", ".join(files)
    with Store(db) as store:
        loaded = sources.from_store(store, since_unix_nano=since_ns)
        verdicts = judge_verdicts(store, [t.trace_id for t in loaded.traces])
    return loaded, verdicts, f"the store {default_path(db)}"


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
    help="Leave tools matching this pattern (get_*) out of the expectations (repeatable).",
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
def build(
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
    headroom: float,
    similarity: float,
) -> None:
    """One golden case per conversation of FILES (or of the store), with expectations derived
    from its trace, marked ``review: pending``; writes (or with --append, extends) OUT."""
    options = BuildOptions(
        derive=DeriveOptions(
            exact_args=exact_args, all_args=all_args, ignore_tools=ignore_tools, headroom=headroom
        ),
        where=parse_where(where),
        trace_ids=trace_ids,
        sample=_sample(sample),
        redact=redact,
        similarity=similarity,
    )
    since_ns = parse_since(since)
    loaded, verdicts, origin = _load(files, db, messages_key, since_ns)
    report_errors(loaded.errors)
    traces = [t for t in loaded.traces if since_ns is None or t.start_unix_nano >= since_ns]
    path = Path(out)
    document, existing = read_existing(path) if append and path.exists() else (None, [])
    report = build_dataset(traces, options, existing, verdicts)
    if not report.cases and not existing:
        raise ConfigError(
            f"no case built from {report.conversations} conversation(s) in {origin} "
            f"({report.selected} selected; check --since/--where/--trace-id/--sample)"
        )
    write_dataset(path, report.cases, document, origin)
    click.echo(
        f"{len(report.cases)} case(s) {'added to' if existing else 'written to'} {path} from "
        f"{report.selected} of {report.conversations} conversation(s); "
        f"{report.duplicates} near-duplicate(s) collapsed"
        + (f", {report.skipped} without a user input" if report.skipped else "")
        + (f"; {len(existing)} existing case(s) kept" if existing else "")
    )
    if loaded.errors:
        raise SystemExit(int(ExitCode.USAGE))
