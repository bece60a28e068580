"""How well one rater's pass/fail verdicts agree with a reference's (a person's labels, end
users' feedback): counts, accuracy, precision, recall and Cohen's kappa with its confidence
interval.

Pairs are ``(reference passed, rater passed)``. The **positive class is "fail"**: a scorer is
read as a detector of bad conversations, so *precision* is the share of the rater's fails that
the reference also failed, *recall* the share of the reference's fails the rater caught.
Cohen's kappa (Cohen, 1960) discounts the agreement two raters reach by chance from their
pass rates: kappa = (p_o - p_e) / (1 - p_e). It and its asymptotic standard error and
confidence interval come from :func:`statsmodels.stats.inter_rater.cohens_kappa` (Fleiss,
Cohen and Everitt's large-sample variance, as SAS reports it: the interval is that normal
distribution's central ``1 - alpha``), clipped to [-1, 1]; there is none when that standard
error is 0 (one rater gave one verdict throughout, or they agree perfectly). Kappa is None
agreement is already 1 (both raters gave one and the same verdict every time); a ratio is
None when its denominator is 0.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tracegrade._util.extras import import_extra

DEFAULT_ALPHA = 0.05
"""1 - the confidence of the kappa interval (95%)."""


@dataclass(frozen=True)
class RaterAgreement:
    """Agreement over ``n`` pairs (see the module docstring): ``both_fail`` (true positives),
    ``rater_fail_only`` (false positives), ``rater_pass_only`` (false negatives),
    ``both_pass`` (true negatives); ratios in [0, 1]; kappa and its interval in [-1, 1]."""

    n: int
    both_fail: int
    rater_fail_only: int
    rater_pass_only: int
    both_pass: int
    accuracy: float | None
    precision: float | None
    recall: float | None
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    confidence: float = 1 - DEFAULT_ALPHA

    @property
    def agreed(self) -> int:
        """Pairs where rater and reference gave the same verdict."""
        return self.both_fail + self.both_pass

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every field and ``agreed``."""
        return {**asdict(self), "agreed": self.agreed}


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _finite(value: float) -> float | None:
    return None if math.isnan(value) or math.isinf(value) else float(value)


def kappa_interval(
    table: Sequence[Sequence[int]], alpha: float = DEFAULT_ALPHA
) -> tuple[float | None, float | None, float | None]:
    """(kappa, low, high) of a 2x2 table (reference in rows, rater in columns) with the
    ``1 - alpha`` confidence interval, by :func:`statsmodels.stats.inter_rater.cohens_kappa`;
    all None when kappa is undefined (module docstring)."""
    n = sum(sum(row) for row in table)
    rows = [sum(row) / n for row in table] if n else []
    cols = [sum(row[j] for row in table) / n for j in range(2)] if n else []
    chance = sum(r * c for r, c in zip(rows, cols, strict=True))
    if not n or chance >= 1.0 - 1e-12:
        return None, None, None
    # ~1 s to import: only when needed
    cohens_kappa = import_extra(
        "statsmodels.stats.inter_rater", "Cohen's kappa with its interval"
    ).cohens_kappa

    with warnings.catch_warnings():  # a degenerate table's variance is nan: no interval then
        warnings.simplefilter("ignore", RuntimeWarning)
        result = cohens_kappa(table)
    kappa = _finite(result.kappa)
    if kappa is None:
        return None, None, None
    if not result.std_kappa > 0:  # a constant rater, or perfect agreement: no interval
        return kappa, None, None
    # the asymptotic normal distribution of kappa statsmodels fits (a scipy.stats.norm)
    interval = result.distribution_kappa.interval(1 - alpha)
    low, high = _finite(interval[0]), _finite(interval[1])
    return (
        kappa,
        None if low is None else max(-1.0, low),
        None if high is None else min(1.0, high),
    )


def rater_agreement(
    pairs: Sequence[tuple[bool, bool]], alpha: float = DEFAULT_ALPHA
) -> RaterAgreement:
    """The agreement of ``(reference passed, rater passed)`` pairs (module docstring)."""
    both_fail = sum(1 for ref, rater in pairs if not ref and not rater)
    rater_fail_only = sum(1 for ref, rater in pairs if ref and not rater)
    rater_pass_only = sum(1 for ref, rater in pairs if not ref and rater)
    both_pass = sum(1 for ref, rater in pairs if ref and rater)
    table = [[both_fail, rater_pass_only], [rater_fail_only, both_pass]]
    kappa, low, high = kappa_interval(table, alpha)
    return RaterAgreement(
        n=len(pairs),
        both_fail=both_fail,
        rater_fail_only=rater_fail_only,
        rater_pass_only=rater_pass_only,
        both_pass=both_pass,
        accuracy=_ratio(both_fail + both_pass, len(pairs)),
        precision=_ratio(both_fail, both_fail + rater_fail_only),
        recall=_ratio(both_fail, both_fail + rater_pass_only),
        kappa=kappa,
        kappa_low=low,
        kappa_high=high,
        confidence=1 - alpha,
    )
