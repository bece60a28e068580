"""The regression gate's options (``--baseline``, ``--alpha``, ``--alert-webhook``,
``--markdown``, ``--min-score``), shared by ``score``, ``run`` and ``compare``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from tracegrade import environment
from tracegrade.cli.options import stacked

F = Callable[..., Any]

webhook_option = click.option(
    "--alert-webhook",
    metavar="URL",
    envvar=environment.TRACEGRADE_ALERT_WEBHOOK,
    help="POST a JSON alert (Slack-compatible 'text') here on a regression.",
)
"""``--alert-webhook URL`` (default ``$TRACEGRADE_ALERT_WEBHOOK``)."""

alpha_option = click.option(
    "--alpha",
    type=click.FloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="Significance level of the paired tests (default 0.05 or tracegrade.yaml).",
)
"""``--alpha X``: significance level of the paired tests (0-1, open), None: the config's."""

markdown_option = click.option(
    "--markdown",
    "markdown_path",
    type=click.Path(dir_okay=False),
    help="Write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set).",
)
"""``--markdown FILE`` (parameter ``markdown_path``)."""


def gate_options(function: F, *, webhook: bool = True) -> F:
    """``--baseline``, ``--alpha``, ``--alert-webhook`` (unless the command has its own),
    ``--markdown`` and ``--min-score`` for ``score`` and ``run``."""
    options = [
        click.option(
            "--baseline",
            metavar="BASE",
            help="Compare with a run: baseline, latest, latest~N, a run id or a run-document "
            "JSON file; exit 1 on a regression.",
        ),
        alpha_option,
        webhook_option,
        markdown_option,
        click.option(
            "--min-score",
            type=click.FloatRange(0, 1),
            default=None,
            help="Fail the run (exit 1) when the mean overall score is below this.",
        ),
    ]
    if not webhook:
        options = [o for o in options if o is not webhook_option]
    return stacked(options)(function)
