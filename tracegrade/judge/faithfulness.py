"""Faithfulness with a judge: the answer's values (:mod:`tracegrade.scoring.faithfulness`)
and its statements, which only a model can read.

With ``tracegrade score --judge`` (or ``run --judge``) the ``faithfulness`` scorer of a RAG
trace also asks the judge the built-in ``faithfulness`` rubric over the same evidence (user
input, tool results, retrieved documents, the case's reference, the answer:
:mod:`.evidence`). The verdict's ``missed`` items, the claims the judge found unsupported or
contradicted, are the unsupported statements (``details.statements``); the score is the
lower of the values' fraction and the judge's score. A judge error leaves the values' score
as it is and says why the statements were not judged (the ``judge`` scorer reports judge
errors as failures; this one does not fail a case twice).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from tracegrade.dataset import Case, Judge
from tracegrade.judge.rubrics import FAITHFULNESS
from tracegrade.judge.scorer import JudgeScorer, Pair
from tracegrade.scoring.faithfulness import NAME, Faithfulness, has_context
from tracegrade.scoring.score import Score, Scorer
from tracegrade.trace import AgentTrace

RUBRIC = Judge(rubric=FAITHFULNESS)


@dataclass
class JudgedFaithfulness:
    """``faithfulness`` on values (``values``) and, through ``judge``, on statements."""

    values: Faithfulness
    judge: JudgeScorer
    name: str = NAME
    evaluator_type: ClassVar[str] = "llm_judge"
    """Its kind in an evaluator's identity (:mod:`tracegrade.scoring.identity`)."""

    @property
    def judge_model(self) -> str:
        """The judge's model."""
        return self.judge.judge_model

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Ask the judge about every RAG pair up front (concurrently, cached)."""
        wanted = [(t, c) for t, c in pairs if has_context(t, c) and t.final_output]
        if wanted:
            self.judge.prefetch(wanted, spec=RUBRIC)

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        score = self.values(trace, case)
        if score.value is None:
            return score
        verdict = self.judge.judged(trace, case, RUBRIC)
        judge = verdict.details
        if verdict.value is None:
            why = judge.get("error") or verdict.reason
            return replace(score, reason=f"{score.reason} (statements not judged: {why})")
        statements = list(judge.get("missed") or [])
        details: dict[str, Any] = {
            **score.details,
            "statements": statements,
            "judge": {
                "score": verdict.value,
                "reasoning": judge.get("reasoning"),
                "model": judge.get("model"),
            },
        }
        reason = f"{score.reason}; judge {verdict.value:.2f}" + (
            f", unsupported statements: {'; '.join(statements[:5])}" if statements else ""
        )
        return Score(self.name, min(score.value, verdict.value), reason, (), details)


def with_judged_faithfulness(scorers: list[Scorer], judge: JudgeScorer | None) -> list[Scorer]:
    """``scorers`` with the values-only ``faithfulness`` scorer judged too, when the run
    judges every trace (``--judge``); otherwise unchanged."""
    if judge is None or not judge.enabled or not judge.judge_all:
        return scorers
    return [JudgedFaithfulness(s, judge) if isinstance(s, Faithfulness) else s for s in scorers]
