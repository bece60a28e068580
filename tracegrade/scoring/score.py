"""What a scorer returns, and what a scorer is.

A scorer is a callable ``(trace, case) -> Score`` with a ``name``: a small frozen dataclass
whose fields are its configuration, or a plain function. ``case`` is None when scoring
without a golden dataset (reference-free). A scorer never raises for missing data: it
returns a :class:`Score` with ``value=None`` and the reason, and the overall score leaves
it out visibly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from tracegrade.dataset import Case
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class Score:
    """One scorer's verdict on one trace.

    ``value`` is in [0, 1], or None when the scorer could not run or does not apply (the
    reason says which). ``hard_failures`` fail the case whatever the overall score (a
    ``must_not_contain`` hit, a forbidden tool, an exceeded budget). ``details`` carries
    structured evidence (missing tools, failed arguments, ungrounded values).
    """

    name: str
    value: float | None
    reason: str
    hard_failures: tuple[str, ...] = ()
    details: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ran(self) -> bool:
        """True when the scorer produced a value."""
        return self.value is not None


def skipped(name: str, reason: str) -> Score:
    """A score for a scorer that could not run or does not apply."""
    return Score(name, None, reason)


class Scorer(Protocol):
    """``name`` plus ``__call__(trace, case) -> Score``; must not do I/O or raise on missing
    data. ``name`` may be a plain attribute or read-only (a frozen dataclass field)."""

    @property
    def name(self) -> str: ...  # pragma: no cover

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score: ...  # pragma: no cover
