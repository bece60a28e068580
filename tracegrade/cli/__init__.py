"""The ``tracegrade`` command: a small click group, one module per command.

Every command is thin: it parses options and calls the library. Errors tracegrade raises on
purpose (:class:`~tracegrade.errors.TracegradeError`) print as one line and exit with their
code (2 for usage, configuration or input errors); see :class:`~tracegrade.errors.ExitCode`.
"""

from __future__ import annotations

import sys

import click

from tracegrade import __version__
from tracegrade.cli import collect, export, import_, inspect, judge_check, lint, run, score
from tracegrade.errors import TracegradeError


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except TracegradeError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(int(exc.exit_code))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracegrade")
def cli() -> None:
    """Evaluate AI agents from their OpenTelemetry traces."""


for _module in (import_, inspect, lint, score, run, export, judge_check, collect):
    cli.add_command(_module.command)


def main() -> None:
    """Console-script entry point."""
    cli()
