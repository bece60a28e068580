"""Judge calibration: how often the judge agrees with human pass/fail labels.

``tracegrade judge-check DATASET`` runs the judge on the cases that carry ``label: pass`` or
``label: fail`` and compares: the judge says *pass* when its (median) score reaches the
case's threshold. Agreement is reported as accuracy (share of equal verdicts) and Cohen's
kappa, which discounts the agreement two raters reach by chance from their pass rates
(Cohen, 1960: kappa = (p_o - p_e) / (1 - p_e), p_e = P(both pass) + P(both fail) under
independence). Kappa is undefined (None) when chance agreement is already 1, i.e. both
raters gave one and the same verdict to every case. A case the judge could not judge (judge
error, nothing to judge) or that no trace matched is listed and left out of both numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tracegrade.dataset import Dataset
from tracegrade.errors import DatasetError
from tracegrade.judge.client import JudgeUsage
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.scoring.evaluate import match_cases
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class Row:
    """One labelled case against one trace: the human label, the judge's score and verdict
    (None when it could not judge: ``note`` says why)."""

    case_id: str
    trace_id: str | None
    label: str
    score: float | None
    judge: str | None
    note: str


@dataclass(frozen=True)
class Agreement:
    """Agreement of judge and labels over the ``compared`` rows; ``confusion`` counts
    ``{"label/judge": n}`` for pass/pass, pass/fail, fail/pass, fail/fail."""

    rows: tuple[Row, ...]
    compared: int
    accuracy: float | None
    kappa: float | None
    confusion: Mapping[str, int]
    not_compared: int
    usage: JudgeUsage

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every field, rows as objects, usage as its dict."""
        return {
            "compared": self.compared,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "confusion": dict(self.confusion),
            "not_compared": self.not_compared,
            "judge_usage": self.usage.to_dict(),
            "rows": [asdict(r) for r in self.rows],
        }


def cohen_kappa(pairs: Sequence[tuple[bool, bool]]) -> float | None:
    """Cohen's kappa of two raters' binary verdicts (see the module docstring); None for no
    pairs or when chance agreement is 1."""
    if not pairs:
        return None
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    first, second = sum(a for a, _ in pairs) / n, sum(b for _, b in pairs) / n
    chance = first * second + (1 - first) * (1 - second)
    return None if chance >= 1.0 else (observed - chance) / (1 - chance)


def agreement(rows: Sequence[Row], usage: JudgeUsage | None = None) -> Agreement:
    """Accuracy, kappa and the confusion counts over the rows the judge could judge."""
    pairs = [(r.label == "pass", r.judge == "pass") for r in rows if r.judge is not None]
    confusion = {f"{h}/{j}": 0 for h in ("pass", "fail") for j in ("pass", "fail")}
    for human, judge in pairs:
        confusion[f"{'pass' if human else 'fail'}/{'pass' if judge else 'fail'}"] += 1
    accuracy = sum(h == j for h, j in pairs) / len(pairs) if pairs else None
    return Agreement(
        tuple(rows),
        len(pairs),
        accuracy,
        cohen_kappa(pairs),
        confusion,
        len(rows) - len(pairs),
        usage or JudgeUsage(),
    )


def judge_check(
    traces: Sequence[AgentTrace],
    dataset: Dataset,
    scorer: JudgeScorer,
    mapping: Mapping[str, Sequence[str]] | None = None,
) -> Agreement:
    """Judge every labelled case of ``dataset`` on its matched trace(s) and compare with the
    labels. ``scorer`` should judge every case (``judge_all=True``: a case without a rubric
    uses the dataset's default or ``faithfulness``).

    Raises:
        DatasetError: no case carries a ``label``.
        ConfigError: judging needs a call and no API key is configured.
    """
    labelled = [c for c in dataset.cases if c.label is not None]
    if not labelled:
        raise DatasetError(
            f"{dataset.source or dataset.name}: no case carries a 'label: pass|fail' to check the "
            "judge against"
        )
    pairs, _ = match_cases(labelled, traces, mapping)
    scorer.prefetch([(t, c) for c, matched in pairs for t in matched])
    rows, usage = [], JudgeUsage()
    for case, matched in pairs:
        if not matched:
            rows.append(
                Row(case.id or "", None, case.label or "", None, None, "no trace matched this case")
            )
        for trace in matched:
            score = scorer(trace, case)
            usage += JudgeUsage.from_dict(score.details.get("usage") or {})
            spec = scorer.spec(case)
            verdict = (
                None
                if score.value is None or spec is None
                else ("pass" if score.value >= spec.threshold else "fail")
            )
            rows.append(
                Row(
                    case.id or "",
                    trace.trace_id,
                    case.label or "",
                    score.value,
                    verdict,
                    score.reason,
                )
            )
    return agreement(rows, usage)
