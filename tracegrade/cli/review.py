"""``tracegrade review``: queues of stored conversations for people to label, the labels, and
promotion to golden cases (one conversation at a time: :mod:`.review_items`; labels as data and
promotion: :mod:`.review_data`)."""

from __future__ import annotations

import click

from tracegrade.cli.options import config_option, parse_pairs, reading_db_option, reviewer_option
from tracegrade.cli.render import console
from tracegrade.cli.review_render import queues_table
from tracegrade.config import load_config
from tracegrade.pipeline.review import QueueRule, build_queue, list_queues
from tracegrade.store.traces import Store


@click.group("review")
def command() -> None:
    """Review queues: label real conversations, export and import labels, promote cases."""


@command.command("queue")
@click.argument("name")
@reading_db_option
@config_option
@click.option("--since", help="Conversations started since: 30m, 12h, 7d or an ISO date.")
@click.option("--until", help="Conversations started before this (same forms).")
@click.option("--service", help="Only this service.name.")
@click.option(
    "--where",
    multiple=True,
    metavar="KEY=VALUE",
    help="A tag: resource or root-span attribute (repeatable; all hold).",
)
@click.option(
    "--failed",
    is_flag=True,
    help="Signal: the reference-free verdict fails (production rules, budgets).",
)
@click.option(
    "--failed-scorer",
    "failed_scorers",
    multiple=True,
    metavar="NAME",
    help="Signal: this scorer scores below 1 (repeatable).",
)
@click.option("--score-below", type=click.FloatRange(0, 1), help="Signal: the score is below this.")
@click.option(
    "--judge-below",
    type=click.FloatRange(0, 1),
    help="Signal: a stored judge verdict is below this.",
)
@click.option(
    "--feedback",
    type=click.Choice(["negative", "any"]),
    help="Signal: end-user feedback (negative, or any).",
)
@click.option(
    "--sample",
    type=click.FloatRange(0, min_open=True),
    help="Keep a fraction (0.1) or a count (50), by trace id.",
)
@click.option("--limit", type=click.IntRange(min=1), help="At most this many conversations.")
@reviewer_option
def queue(
    name: str, db: str | None, config_path: str | None, reviewer: str, **rule: object
) -> None:
    """Create queue NAME from a rule over the stored conversations: filters all hold; with
    signals, any one selects a conversation (its reason is kept)."""
    rule["where"] = parse_pairs(rule.pop("where"), "--where")  # type: ignore[arg-type]
    parsed = QueueRule.model_validate({k: v for k, v in rule.items() if v not in (None, (), False)})
    built = build_queue(db, name, parsed, reviewer, load_config(config_path))
    click.echo(f"queue {built.name}: {built.items} of {built.considered} conversation(s)")


@command.command("queues")
@reading_db_option
def queues(db: str | None) -> None:
    """The queues, their rules and progress."""
    with Store(db) as store:
        console().print(queues_table(list_queues(store)))


from tracegrade.cli import review_data, review_items  # noqa: E402  (the other subcommands)

review_items.register(command)
review_data.register(command)
