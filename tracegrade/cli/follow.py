"""``tracegrade score --follow``'s printing: a line per scored trace, a summary at the end."""

from __future__ import annotations

import signal
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from tracegrade.errors import ExitCode
from tracegrade.judge.budget import BUDGET_SKIP, parse_budget
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.follow import Follower, make_follower
from tracegrade.pipeline.follow_workers import run_follower
from tracegrade.pipeline.judging import judge_cache
from tracegrade.report.evaluation_signals import SESSION_KEY

if TYPE_CHECKING:
    from tracegrade.scoring.results import CaseResult


def line(result: CaseResult, updated: bool = False) -> str:
    """``PASS|FAIL score trace_id [case id] [updated] [judge skipped (budget)] reasons``; a
    whole conversation's: ``SESSION PASS|FAIL score key turns=N ...``."""
    verdict = "PASS" if result.passed else "FAIL"
    score = "  -  " if result.score is None else f"{result.score:.2f}"
    case = f" case={result.case_id}" if result.case_id else ""
    reasons = f"  {'; '.join(result.reasons[:3])}" if not result.passed and result.reasons else ""
    judge = ((result.details.get("judge") or {}).get("details") or {}).get("skipped")
    skipped = " (judge skipped: budget)" if judge == BUDGET_SKIP else ""
    marks = f"{' (updated)' if updated else ''}{skipped}"
    if (session := result.metadata.get(SESSION_KEY)) is not None:  # a whole conversation
        turns = result.metadata.get("turns")
        return f"SESSION {verdict} {score} {session} turns={turns}{marks}{reasons}"
    return f"{verdict} {score} {result.trace_id}{case}{marks}{reasons}"


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
    failed = sum(not passed for passed in [*results.values(), *follower.session_passed.values()])
    click.echo(f"tracegrade score --follow: {summary(follower, results)}", err=True)
    return ExitCode.FAILED if failed else ExitCode.OK


def summary(follower: Follower, results: dict[str, bool]) -> str:
    """``N traces scored, M failed`` and, where they apply, the eval-run traces left out,
    what the judge spent and the judge scores its budget skipped."""
    failed = sum(not passed for passed in results.values())
    parts = [f"{len(results)} traces scored, {failed} failed"]
    if follower.sessions is not None:
        conversations = follower.session_passed
        lost = sum(not passed for passed in conversations.values())
        parts.append(f"{len(conversations)} conversations scored, {lost} failed")
    if follower.excluded:
        parts.append(f"{follower.excluded} eval-run traces left out")
    budget = follower.judge_budget
    if budget is not None:
        parts.append(f"judge spent ${budget.spent_usd:.4f} ({budget.limits})")
        parts.append(f"{budget.skipped} judge scores skipped (budget)")
    return ", ".join(parts)


def follow_command(
    options: ScoreOptions,
    quiet_s: float,
    window: str | None,
    lease_s: float,
    rootless_quiet_s: float,
    judge_budget: Sequence[str] = (),
    session_quiet_s: float | None = None,
) -> ExitCode:
    """``score --follow``: the follower of ``options``, run until stopped (judge verdicts
    cached in the store); ``session_quiet_s`` (``--sessions``): whole conversations scored
    after that many quiet seconds."""
    follower, judge = make_follower(
        options,
        quiet_s=quiet_s,
        window=window,
        lease_s=lease_s,
        rootless_quiet_s=rootless_quiet_s,
        judge_budget=parse_budget(judge_budget),
        session_quiet_s=session_quiet_s,
    )
    with judge_cache(options.db, judge):
        return follow_until_stopped(follower)
