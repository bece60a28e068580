"""``score --follow``'s options: scoring the store's traces as they settle."""

from __future__ import annotations

import click

from tracegrade import environment
from tracegrade.cli.options import stacked
from tracegrade.pipeline.sessions import DEFAULT_QUIET_S as SESSION_QUIET_S
from tracegrade.store.follow import DEFAULT_LEASE_S, DEFAULT_ROOTLESS_QUIET_S
from tracegrade.store.traces import DEFAULT_QUIET_S

follow_options = stacked(
    [
        click.option(
            "--follow",
            is_flag=True,
            help="Keep scoring the store's traces as they settle (behind tracegrade collect), "
            "one line per trace, until Ctrl-C; exit 1 if any failed. A worker starts with "
            "every stored trace not yet scored within its horizon (--since, else the store's "
            "retention, else all), then scores new ones.",
        ),
        click.option(
            "--quiet-s",
            type=click.FloatRange(min=0),
            default=DEFAULT_QUIET_S,
            show_default=True,
            help="--follow: seconds without new spans before an ended trace is scored.",
        ),
        click.option(
            "--rootless-quiet-s",
            type=click.FloatRange(min=0),
            default=DEFAULT_ROOTLESS_QUIET_S,
            show_default=True,
            help="--follow: seconds without new spans before a trace whose root or agent span "
            "never arrived is scored anyway.",
        ),
        click.option(
            "--window",
            help="--follow: store and print aggregates per window (e.g. 5m) and service.name; "
            "thresholds in the config's windows: section raise an alert.",
        ),
        click.option(
            "--alert-webhook",
            envvar=environment.TRACEGRADE_ALERT_WEBHOOK,
            help="POST alerts (JSON, Slack-compatible 'text') to this URL: on a regression against "
            "--baseline; with --follow --window, on window thresholds.",
        ),
        click.option(
            "--sessions",
            is_flag=True,
            help="--follow: also score each whole conversation (by conversation id, or history "
            "continuity) once it is quiet: context kept over every turn, the judge's "
            "conversation rubric, the rules over all turns; again when a later turn arrives.",
        ),
        click.option(
            "--session-quiet-s",
            type=click.FloatRange(min=0),
            default=SESSION_QUIET_S,
            show_default=True,
            help="--sessions: seconds without a new turn before a conversation is scored.",
        ),
        click.option(
            "--judge-budget",
            "judge_budget",
            multiple=True,
            metavar="USD/h,USD/d",
            help="--follow: what the LLM judge may spend, per rolling hour and/or day (e.g. "
            "2/h,20/d; the judge model needs a price). Once spent, judge scores are skipped "
            "with the reason and the other scorers go on.",
        ),
        click.option(
            "--lease-s",
            type=click.FloatRange(min=1),
            default=DEFAULT_LEASE_S,
            show_default=True,
            help="--follow: seconds a claim lasts unless its worker renews it (it does while "
            "scoring); a dead worker's claims go to another worker after this.",
        ),
    ]
)
"""``--follow``, ``--quiet-s``, ``--rootless-quiet-s``, ``--window``, ``--alert-webhook``,
``--sessions``, ``--session-quiet-s``, ``--judge-budget``, ``--lease-s``."""
