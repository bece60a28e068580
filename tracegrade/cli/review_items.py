"""``tracegrade review next | show | label | skip``: one conversation at a time (registered on
the ``review`` group by :mod:`.review`)."""

from __future__ import annotations

import click

from tracegrade.cli.options import config_option, parse_pairs, reading_db_option, reviewer_option
from tracegrade.cli.render import console
from tracegrade.cli.review_render import print_conversation
from tracegrade.config import load_config
from tracegrade.pipeline.review import (
    LabelInput,
    next_item,
    record_label,
    skip_item,
)
from tracegrade.store.traces import Store
from tracegrade.web.pages import review_view


@click.command("next")
@click.argument("queue_name", metavar="QUEUE")
@reading_db_option
@config_option
@reviewer_option
def next_(queue_name: str, db: str | None, config_path: str | None, reviewer: str) -> None:
    """Claim the next conversation of QUEUE for the reviewer and show it."""
    with Store(db) as store:
        item = next_item(store, queue_name, reviewer)
        if item is None:
            click.echo(f"queue {queue_name}: nothing left for {reviewer}")
            return
        view = review_view(store, item.trace_ids, load_config(config_path))
    ids = " ".join(item.trace_ids)
    click.echo(f"{queue_name} #{item.position + 1} ({item.reason}); label it with:")
    click.echo(f"  tracegrade review label {ids} --queue {queue_name} --verdict pass|fail")
    print_conversation(console(), view)


@click.command("show")
@click.argument("trace_ids", nargs=-1, required=True)
@reading_db_option
@config_option
def show(trace_ids: tuple[str, ...], db: str | None, config_path: str | None) -> None:
    """Show the conversation of TRACE_IDS: chat, scores, feedback, labels."""
    with Store(db) as store:
        print_conversation(console(), review_view(store, trace_ids, load_config(config_path)))


@click.command("label")
@click.argument("trace_ids", nargs=-1, required=True)
@reading_db_option
@click.option("--verdict", type=click.Choice(["pass", "fail"]), required=True)
@click.option(
    "--axis",
    "axes",
    multiple=True,
    metavar="AXIS=pass|fail",
    help="tools_right, answer_grounded or answer_complete (repeatable).",
)
@click.option("--note", help="Why.")
@click.option("--queue", "queue_name", help="The queue item this label completes.")
@reviewer_option
def label(
    trace_ids: tuple[str, ...],
    db: str | None,
    verdict: str,
    axes: tuple[str, ...],
    note: str | None,
    queue_name: str | None,
    reviewer: str,
) -> None:
    """Record a verdict on the conversation of TRACE_IDS (who and when are kept)."""
    with Store(db) as store:
        stored, _ = record_label(
            store,
            LabelInput(
                trace_ids, reviewer, verdict, parse_pairs(axes, "--axis"), note, None, queue_name
            ),
        )
    click.echo(f"labelled {stored.conversation} {stored.verdict} by {stored.reviewer}")


@click.command("skip")
@click.argument("queue_name", metavar="QUEUE")
@click.argument("conversation")
@reading_db_option
@reviewer_option
def skip(queue_name: str, conversation: str, db: str | None, reviewer: str) -> None:
    """Give CONVERSATION back to QUEUE; it is not offered to this reviewer again."""
    with Store(db) as store:
        skip_item(store, queue_name, conversation, reviewer)
    click.echo(f"skipped {conversation}")


def register(group: click.Group) -> None:
    """Add next, show, label and skip to the ``review`` group."""
    for command in (next_, show, label, skip):
        group.add_command(command)
