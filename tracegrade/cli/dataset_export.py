"""``tracegrade dataset export NAME``: a dataset kept in the store (the dashboard's case
editor) written out as its YAML file."""

from __future__ import annotations

from pathlib import Path

import click

from tracegrade.cli.options import reading_db_option
from tracegrade.errors import ConfigError
from tracegrade.pipeline.datasets import STORE_PREFIX, export_dataset


@click.command("export")
@click.argument("name")
@reading_db_option
@click.option(
    "--out",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the YAML to this file (default: print it).",
)
@click.option("--force", is_flag=True, help="Replace --out when it exists.")
def export_command(name: str, db: str | None, out: Path | None, force: bool) -> None:
    """Write the stored dataset NAME (or store:NAME) as YAML, comments and order as the
    editor kept them: to review in git, or to run where the store is not. Exit 2 when no
    dataset of that name is stored (the message lists those that are) or OUT exists."""
    name = name.removeprefix(STORE_PREFIX)
    if out is not None and out.exists() and not force:
        raise ConfigError(f"--out {out} exists: --force replaces it")
    text = export_dataset(name, db)
    if out is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    click.echo(f"dataset {name!r} written to {out} (run it: tracegrade run {out} ...)", err=True)
