"""``tracegrade score --follow``'s printing: a line per scored trace, a summary at the end."""

from __future__ import annotations

import signal
import threading

import click

from tracegrade.errors import ExitCode
from tracegrade.pipeline._score import CaseResult, ScoreOptions
from tracegrade.pipeline.follow import Follower, make_follower
from tracegrade.pipeline.follow_workers import run_follower
from tracegrade.pipeline.judging import judge_cache


def line(result: CaseResult, updated: bool = False) -> str:
    """``PASS|FAIL score trace_id [case id] [updated] reasons``."""
    verdict = "PASS" if result.passed else "FAIL"
    score = "  -  " if result.score is None else f"{result.score:.2f}"
    case = f" case={result.case_id}" if result.case_id else ""
    reasons = f"  {'; '.join(result.reasons[:3])}" if not result.passed and result.reasons else ""
    return f"{verdict} {score} {result.trace_id}{case}{' (updated)' if updated else ''}{reasons}"


def follow_until_stopped(follower: Follower) -> ExitCode:
    """Run ``follower`` until SIGINT/SIGTERM; print a summary; OK when every trace's latest
    result passed, else FAILED."""
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    click.echo(
        f"tracegrade score --follow: scoring traces as they settle (quiet {follower.quiet_s:g} s"
        f"{f', {follower.workers} processes' if follower.workers > 1 else ''}); Ctrl-C to stop",
        err=True,
    )
    results = run_follower(
        follower, stop, lambda result, updated: click.echo(line(result, updated)), click.echo
    )
    failed = sum(not passed for passed in results.values())
    click.echo(
        f"tracegrade score --follow: {len(results)} traces scored, {failed} failed", err=True
    )
    return ExitCode.FAILED if failed else ExitCode.OK


def follow_command(
    options: ScoreOptions,
    quiet_s: float,
    window: str | None,
    lease_s: float,
    rootless_quiet_s: float,
) -> ExitCode:
    """``score --follow``: the follower of ``options``, run until stopped (judge verdicts
    cached in the store)."""
    follower, judge = make_follower(
        options, quiet_s=quiet_s, window=window, lease_s=lease_s, rootless_quiet_s=rootless_quiet_s
    )
    with judge_cache(options.db, judge):
        return follow_until_stopped(follower)
