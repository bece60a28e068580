"""The judge on a whole conversation: the ``judge`` scorer asked one rubric (by default the
built-in ``conversation`` rubric, :mod:`tracegrade.judge.rubrics`) of a conversation's merged
trace, whatever the case's own rubric (``score --follow --sessions``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from tracegrade.dataset import Case, Judge
from tracegrade.judge.scorer import NAME, JudgeScorer, Pair
from tracegrade.scoring.score import Score
from tracegrade.trace import AgentTrace


@dataclass
class ConversationJudge:
    """``judge`` asked ``spec`` (a rubric and threshold) of each conversation."""

    judge: JudgeScorer
    spec: Judge
    name: str = NAME
    evaluator_type: ClassVar[str] = "llm_judge"
    """Its kind in an evaluator's identity (:mod:`tracegrade.scoring.identity`)."""

    @property
    def judge_model(self) -> str:
        """The model asked (the rubric's own, else the judge's)."""
        return self.spec.model or self.judge.judge_model

    def prefetch(self, pairs: Sequence[Pair]) -> None:
        """Ask about every conversation up front (concurrently, cached, within the budget)."""
        self.judge.prefetch(pairs, spec=self.spec)

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        return self.judge.judged(trace, case, self.spec)
