"""The ``tracegrade`` command: a small click group, one module per command.

Every command is thin: it parses options and calls the library. Errors tracegrade raises on
purpose (:class:`~tracegrade.errors.TracegradeError`) print as one line and exit with their
code (2 for usage, configuration or input errors); see :class:`~tracegrade.errors.ExitCode`.
"""

from __future__ import annotations

import importlib
import sys
from typing import NoReturn

import click

from tracegrade._util.extras import missing_extra
from tracegrade.errors import TracegradeError
from tracegrade.version import __version__

__all__ = ["COMMANDS", "cli", "main"]

COMMANDS: dict[str, tuple[str, str]] = {
    "import": ("tracegrade.cli.import_", "Store spans and log records from trace files."),
    "inspect": ("tracegrade.cli.inspect", "Show what was derived from each trace."),
    "lint": ("tracegrade.cli.lint", "Which scoring inputs each trace provides, and why not."),
    "score": ("tracegrade.cli.score", "Score traces against a golden dataset (or reference-free)."),
    "backfill": (
        "tracegrade.cli.backfill",
        "Score the stored traces the current evaluator has not scored.",
    ),
    "run": ("tracegrade.cli.run", "Run a golden dataset against an agent and score its traces."),
    "export": ("tracegrade.cli.export", "Write stored traces as OTLP/JSON lines."),
    "judge-check": ("tracegrade.cli.judge_check", "Check the LLM judge against human labels."),
    "collect": ("tracegrade.cli.collect", "Receive OTLP traces and logs (gRPC and HTTP)."),
    "dataset": (
        "tracegrade.cli.dataset",
        "Golden datasets: build one from conversations; export a stored one.",
    ),
    "ui": ("tracegrade.cli.ui", "Serve the web dashboard and case editor."),
    "runs": ("tracegrade.cli.runs", "Stored runs; show one, or mark it as the baseline."),
    "compare": ("tracegrade.cli.compare", "Compare two runs case by case; exit 1 on a regression."),
    "review": (
        "tracegrade.cli.review",
        "Review queues: label real conversations, export labels, promote cases.",
    ),
    "agreement": (
        "tracegrade.cli.agreement",
        "How well each scorer and the judge agree with human labels and feedback.",
    ),
    "users": ("tracegrade.cli.users", "Named accounts of the dashboard."),
    "prune": ("tracegrade.cli.prune", "Remove what the store received before a cutoff."),
    "mcp": (
        "tracegrade.cli.mcp",
        "Serve runs, cases and traces to coding agents over MCP (stdio or HTTP).",
    ),
    "history": (
        "tracegrade.cli.history",
        "A dataset's runs over time, with sparklines or a chart.",
    ),
}
"""Command name -> (module defining ``command``, one-line help). Modules are imported only when
their command runs, so ``tracegrade --help`` and each command start fast. A new command adds
one entry here."""


class _LazyGroup(click.Group):
    """The commands of :data:`COMMANDS`, each module imported when its command is asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        try:
            command = importlib.import_module(COMMANDS[cmd_name][0]).command
        except ModuleNotFoundError as exc:  # a command whose extra is not installed
            error = missing_extra(exc, f"tracegrade {cmd_name}")
            if error is None:
                raise
            _exit(error)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except TracegradeError as exc:
            _exit(exc)
        except ModuleNotFoundError as exc:  # an extra's library imported deep in a command
            error = missing_extra(exc, f"tracegrade {ctx.invoked_subcommand or ''}".strip())
            if error is None:
                raise
            _exit(error)


def _exit(exc: TracegradeError) -> NoReturn:
    """Print ``exc`` as one ``error:`` line and exit with its code."""
    click.echo(f"error: {exc}", err=True)
    sys.exit(int(exc.exit_code))


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="tracegrade")
@click.option(
    "--conventions",
    "conventions",
    multiple=True,
    type=click.Path(dir_okay=False),
    help="A convention map file (YAML) for an in-house tracer, read before the built-in maps "
    "(repeatable; also TRACEGRADE_CONVENTIONS). See the conventions guide.",
)
def cli(conventions: tuple[str, ...]) -> None:
    """Evaluate AI agents from their OpenTelemetry traces."""
    if conventions:
        from tracegrade.pipeline.reading import add_conventions

        try:
            add_conventions(conventions)
        except TracegradeError as exc:
            click.echo(f"error: {exc}", err=True)
            sys.exit(int(exc.exit_code))


def main() -> None:
    """Console-script entry point."""
    cli()
