"""``tracegrade prune``: remove what the store received before a cutoff."""

from __future__ import annotations

import click

from tracegrade.cli.options import reading_db_option
from tracegrade.pipeline.retention import PruneOptions, prune, summary


@click.command("prune")
@click.option(
    "--older-than",
    required=True,
    metavar="DURATION",
    help="Remove what arrived before this long ago (12h, 30d, 4w), in whole UTC days.",
)
@reading_db_option
@click.option("--dry-run", is_flag=True, help="Count what would be removed; remove nothing.")
@click.option(
    "--runs", is_flag=True, help="Also remove stored runs created before then (never a baseline)."
)
def command(older_than: str, db: str | None, dry_run: bool, runs: bool) -> None:
    """Remove spans, log records, queued claims, follow results and windows older than
    --older-than (stored runs only with --runs; datasets are kept). PostgreSQL drops whole
    day partitions; SQLite deletes in batches and gives the space back to the file system."""
    done = prune(PruneOptions(older_than, db=db, dry_run=dry_run, runs=runs))
    click.echo(f"tracegrade prune: {summary(done)}")
