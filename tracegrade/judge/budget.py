"""A spending limit for online judging (``score --follow --judge-budget 2/h,20/d``).

Every judge call a follower makes is priced (the judge model's price in the pricing table:
:class:`~tracegrade.config.Pricing`) and recorded in a ledger shared by every worker of the
store (:mod:`tracegrade.store.judge_spend`). A call starts only while the spend of the last
hour is below the hourly limit and the spend of the last 24 hours below the daily one
(rolling periods); once a limit is reached, the judge's questions are skipped with the reason
(the score reads ``judge skipped: judge budget spent ...`` and its details carry ``skipped:
judge_budget``), and the deterministic scorers go on. Calls already in flight when the limit
is reached finish, so the spend may pass a limit by at most ``--judge-concurrency`` calls.
Verdicts served from the judge cache cost nothing and are never skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from tracegrade.errors import ConfigError

BUDGET_SKIP = "judge_budget"
"""``details.skipped`` of a judge score skipped because the budget was spent."""
HOUR_S = 3600.0
DAY_S = 86400.0
_PART = re.compile(r"^\$?(\d+(?:\.\d+)?)\s*/\s*(h|hour|d|day)$")


@dataclass(frozen=True)
class BudgetLimits:
    """USD the judge may spend per rolling hour and per rolling day (None: no limit)."""

    per_hour_usd: float | None = None
    per_day_usd: float | None = None

    def __str__(self) -> str:
        parts = [f"${self.per_hour_usd:g}/h"] if self.per_hour_usd is not None else []
        parts += [f"${self.per_day_usd:g}/d"] if self.per_day_usd is not None else []
        return ",".join(parts)


def parse_budget(values: Iterable[str]) -> BudgetLimits | None:
    """Limits from ``--judge-budget`` values such as ``2/h``, ``20/d``, ``2/h,20/d`` or
    ``$0.50/hour`` (None when none is given).

    Raises:
        ConfigError: another form, or the same period twice.
    """
    found: dict[str, float] = {}
    for value in values:
        for part in filter(None, (p.strip() for p in value.split(","))):
            match = _PART.match(part.lower())
            if not match:
                raise ConfigError(
                    f"--judge-budget {part!r}: use USD per hour or per day, e.g. 2/h, 20/d "
                    "or 2/h,20/d"
                )
            period = match.group(2)[0]
            if period in found:
                raise ConfigError(f"--judge-budget gives the {_PERIODS[period]} limit twice")
            found[period] = float(match.group(1))
    if not found:
        return None
    return BudgetLimits(found.get("h"), found.get("d"))


_PERIODS = {"h": "hourly", "d": "daily"}


class Ledger(Protocol):
    """Where the judge's spend is recorded and summed (shared by every worker)."""

    def spent(self, within_s: float) -> float:
        """USD recorded in the last ``within_s`` seconds."""
        ...  # pragma: no cover

    def add(self, usd: float, service: str | None) -> None:
        """Record ``usd`` spent now on a trace of ``service``."""
        ...  # pragma: no cover


class JudgeBudget:
    """The limits and the ledger of a follower's judge (see the module docstring)."""

    def __init__(self, limits: BudgetLimits, ledger: Ledger) -> None:
        self.limits = limits
        self.ledger = ledger
        self.skipped = 0
        """Questions skipped for the budget by this process."""
        self.spent_usd = 0.0
        """USD this process's judge calls cost."""

    def refusal(self) -> str | None:
        """Why no judge call may start now (a limit is reached), else None."""
        for limit, within_s, period in (
            (self.limits.per_hour_usd, HOUR_S, "hour"),
            (self.limits.per_day_usd, DAY_S, "day"),
        ):
            if limit is None:
                continue
            spent = self.ledger.spent(within_s)
            if spent >= limit:
                return f"judge budget spent: ${spent:.4f} of ${limit:g} in the last {period}"
        return None

    def skip(self) -> None:
        """Count one question skipped."""
        self.skipped += 1

    def spend(self, usd: float | None, service: str | None) -> None:
        """Record one call's cost (None: its model has no price; nothing recorded)."""
        if usd:
            self.spent_usd += usd
            self.ledger.add(usd, service)
