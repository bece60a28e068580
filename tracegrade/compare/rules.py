"""Regression rules: when CURRENT counts as a regression against BASE.

A regression is any of:

(a) a case that passed in BASE fails in CURRENT and is not flaky (its repeats agree in both
    runs);
(b) the mean score dropped by more than ``max_score_drop`` (default 0.05); when either run has
    repeats, the drop must also be significant in the paired test over cases (Wilcoxon
    signed-rank, p < ``alpha``);
(c) the hallucination rate rose by more than ``max_hallucination_rise`` (default 0.02, i.e. 2
    percentage points);
(d) p95 latency or total cost grew by more than a ratio (``max_latency_p95_ratio``,
    ``max_cost_ratio``; e.g. 1.2 = 20% more; off by default).

Set them in ``tracegrade.yaml`` under ``regression:`` (the same field names); ``--alpha`` on
the command line wins.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracegrade.errors import ConfigError


@dataclass(frozen=True)
class RegressionRules:
    """The rules above; ``None`` turns a ratio rule off."""

    max_score_drop: float = 0.05
    max_hallucination_rise: float = 0.02
    max_latency_p95_ratio: float | None = None
    max_cost_ratio: float | None = None
    alpha: float = 0.05
    case_score_tolerance: float = 0.05
    """A case's score must move by more than this to be ``improved`` / ``regressed`` when its
    verdict did not flip."""
    fail_on_case_regression: bool = True
    """Rule (a); False leaves case flips to the run-level rules."""

    def to_dict(self) -> dict[str, Any]:
        """The rules as a JSON object."""
        return dataclasses.asdict(self)

    def with_alpha(self, alpha: float | None) -> RegressionRules:
        """A copy with ``alpha`` replaced when given."""
        return self if alpha is None else dataclasses.replace(self, alpha=alpha)


class RegressionFile(BaseModel):
    """The ``regression:`` section of ``tracegrade.yaml`` (unknown keys are errors)."""

    model_config = ConfigDict(extra="forbid")

    max_score_drop: float | None = Field(None, ge=0, le=1)
    max_hallucination_rise: float | None = Field(None, ge=0, le=1)
    max_latency_p95_ratio: float | None = Field(None, gt=0)
    max_cost_ratio: float | None = Field(None, gt=0)
    alpha: float | None = Field(None, gt=0, lt=1)
    case_score_tolerance: float | None = Field(None, ge=0, le=1)
    fail_on_case_regression: bool | None = None


def rules_from(
    settings: Mapping[str, Any] | None, file: str = "tracegrade.yaml"
) -> RegressionRules:
    """Rules from the ``regression:`` settings of the config (absent keys keep the defaults).

    Raises:
        ConfigError: an unknown key or a bad value (the message names ``file``, the config
            file, and the field).
    """
    try:
        parsed = RegressionFile.model_validate(dict(settings or {}))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{file}: field 'regression.{where}': {first['msg']}") from exc
    return dataclasses.replace(RegressionRules(), **parsed.model_dump(exclude_none=True))
