"""``tracegrade review export | import | promote``: labels as JSONL, and a reviewed
conversation as a golden case (registered on the ``review`` group by :mod:`.review`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from tracegrade.cli.options import parse_pairs, reading_db_option, report_errors, reviewer_option
from tracegrade.curate.promote import CHOICES, CaseEdits
from tracegrade.errors import ExitCode
from tracegrade.pipeline._promote import promote
from tracegrade.pipeline.reading import parse_since
from tracegrade.pipeline.review import export_labels, import_labels
from tracegrade.store.traces import Store


@click.command("export")
@click.argument("path", type=click.Path(dir_okay=False))
@reading_db_option
@click.option("--since", help="Labels made since: 30m, 12h, 7d or an ISO date.")
def export_command(path: str, db: str | None, since: str | None) -> None:
    """Write the stored labels to PATH, one JSON object a line (tracegrade.label/1)."""
    since_ns = parse_since(since)
    written = export_labels(db, path, None if since_ns is None else since_ns / 1e9)
    click.echo(f"wrote {written} label(s) to {path}")


@click.command("import")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@reading_db_option
def import_command(path: str, db: str | None) -> None:
    """Store the labels of PATH (JSONL as export writes; bad lines are reported and skipped,
    exit 2)."""
    imported = import_labels(db, path)
    click.echo(f"imported {imported.added} label(s) ({imported.duplicates} already stored)")
    report_errors(imported.errors)
    if imported.errors:
        sys.exit(int(ExitCode.USAGE))


def _choices(items: tuple[str, ...]) -> dict[int, Any]:
    picks = parse_pairs(items, "--tool-call")
    out = {}
    for index, choice in picks.items():
        if not index.isdigit() or choice not in CHOICES:
            raise click.BadParameter(
                f"{index}={choice}: INDEX={'|'.join(CHOICES)}", param_hint="--tool-call"
            )
        out[int(index)] = choice
    return out


@click.command("promote")
@click.argument("trace_ids", nargs=-1, required=True)
@reading_db_option
@click.option("--dataset", required=True, help="The dataset file to append to, or store:NAME.")
@click.option("--case-id", help="The case id (default: derived).")
@click.option(
    "--tool-call",
    "tool_calls",
    multiple=True,
    metavar="INDEX=none|name|arguments",
    help="What a call seen (0-based) expects (repeatable; default: performed calls by name).",
)
@click.option(
    "--must-contain", multiple=True, help="An answer fact (repeatable; replaces the derived ones)."
)
@click.option("--must-not-contain", multiple=True, help="A forbidden claim (repeatable).")
@click.option("--reference", help="The corrected answer.")
@click.option(
    "--label",
    type=click.Choice(["pass", "fail"]),
    help="The human label (default: the latest stored label).",
)
@reviewer_option
def promote_command(
    trace_ids: tuple[str, ...],
    db: str | None,
    dataset: str,
    case_id: str | None,
    tool_calls: tuple[str, ...],
    must_contain: tuple[str, ...],
    must_not_contain: tuple[str, ...],
    reference: str | None,
    label: Any,
    reviewer: str,
) -> None:
    """Append the conversation of TRACE_IDS to DATASET as a golden case: expectations derived
    as dataset build derives them, with these edits."""
    edits = CaseEdits(
        case_id,
        _choices(tool_calls),
        list(must_contain) or None,
        must_not_contain,
        reference,
        label,
    )
    with Store(db) as store:
        promoted = promote(store, trace_ids, dataset, reviewer, edits)
    click.echo(f"added case {promoted.case['id']} to {promoted.dataset}")


def register(group: click.Group) -> None:
    """Add export, import and promote to the ``review`` group."""
    for command in (export_command, import_command, promote_command):
        group.add_command(command)
