"""``tracegrade users``: the named accounts of ``tracegrade ui`` (passwords hashed with
Argon2id; the single ``--token`` keeps working for scripts)."""

from __future__ import annotations

import sys

import click

from tracegrade.cli.options import db_option
from tracegrade.web.accounts import account_names, remove_account, set_password


@click.group("users")
def command() -> None:
    """Named accounts of the dashboard: add, list, remove."""


@command.command("add")
@click.argument("name")
@db_option
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from standard input (one line) instead of prompting.",
)
def add(name: str, db: str | None, password_stdin: bool) -> None:
    """Create account NAME, or set its password."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("password", hide_input=True, confirmation_prompt=True)
    created = set_password(db, name, password)
    click.echo(f"{'created' if created else 'changed the password of'} account {name}")


@command.command("list")
@db_option
def list_(db: str | None) -> None:
    """The account names."""
    for name in account_names(db):
        click.echo(name)


@command.command("remove")
@click.argument("name")
@db_option
def remove(name: str, db: str | None) -> None:
    """Delete account NAME."""
    remove_account(db, name)
    click.echo(f"removed account {name}")
