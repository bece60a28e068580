"""Judge calibration: how often the judge agrees with human pass/fail labels.

``tracegrade judge-check DATASET`` runs the judge on the cases that carry ``label: pass`` or
``label: fail`` and compares: the judge says *pass* when its (median) score reaches the
case's threshold. Agreement is measured by the same function as ``tracegrade agreement``
(:func:`tracegrade.scoring.agreement.rater_agreement`: counts, accuracy, precision and recall
of "fail", Cohen's kappa with its confidence interval; the label is the reference, the judge
the rater), so ``judge-check`` is that report's judge row over a dataset's labelled cases. A
case the judge could not judge (judge error, nothing to judge) or that no trace matched is
listed and left out of the numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tracegrade.dataset import Dataset
from tracegrade.errors import DatasetError
from tracegrade.judge.client import JudgeUsage
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.scoring.agreement import RaterAgreement, rater_agreement
from tracegrade.scoring.evaluation import match_cases
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
    stats: RaterAgreement

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every field, rows as objects, usage as its dict, ``agreement`` as
        ``tracegrade agreement`` reports a rater."""
        return {
            "compared": self.compared,
            "accuracy": self.accuracy,
            "kappa": self.kappa,
            "kappa_low": self.stats.kappa_low,
            "kappa_high": self.stats.kappa_high,
            "agreement": self.stats.to_dict(),
            "confusion": dict(self.confusion),
            "not_compared": self.not_compared,
            "judge_usage": self.usage.to_dict(),
            "rows": [asdict(r) for r in self.rows],
        }


def agreement(rows: Sequence[Row], usage: JudgeUsage | None = None) -> Agreement:
    """The agreement (:func:`~tracegrade.scoring.agreement.rater_agreement`, label as the
    reference) and the confusion counts over the rows the judge could judge."""
    pairs = [(r.label == "pass", r.judge == "pass") for r in rows if r.judge is not None]
    confusion = {f"{h}/{j}": 0 for h in ("pass", "fail") for j in ("pass", "fail")}
    for human, judge in pairs:
        confusion[f"{'pass' if human else 'fail'}/{'pass' if judge else 'fail'}"] += 1
    stats = rater_agreement(pairs)
    return Agreement(
        tuple(rows),
        len(pairs),
        stats.accuracy,
        stats.kappa,
        confusion,
        len(rows) - len(pairs),
        usage or JudgeUsage(),
        stats,
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
