"""Production rules: what fails a trace without a golden case (reference-free), so sampled
production traffic is held to what a CI run holds it to.

- **Invented values**: the final answer states values (prices, ids, dates, quantities; the
  kinds in ``reference_free.ungrounded_kinds``) that no tool result, retrieved document,
  reference, user input or system prompt contains (:mod:`tracegrade.scoring.values`). More than
  ``reference_free.max_ungrounded`` (default 0) is a hard failure.
- **Hidden tool errors**: a tool call failed, no later call of the same tool succeeded, and the
  answer acknowledges no failure (none of ``reference_free.acknowledgements``, matched
  case-insensitively on word boundaries). A hard failure.
- **Budgets**: the config's ``budgets:`` are checked by the ``budgets`` scorer, whose breaches
  are hard failures with or without a case.

The value is 1 when no rule fires, else 0. With a golden case the rules are reported but do
not fail the case unless ``reference_free.enforce_with_case`` is true (the case's own
expectations judge it). Rules and words live in ``config/scoring.yaml``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.grounding import evidence_names, evidence_texts
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.values import LazyEvidenceValues, extract
from tracegrade.trace import AgentTrace, ToolCall

ALL_KINDS = ("price", "percent", "number", "date", "time", "id")


def hidden_errors(
    calls: Sequence[ToolCall], answer: str, acknowledgements: re.Pattern[str] | None
) -> list[ToolCall]:
    """Failed calls not recovered by a later successful call of the same tool, when the
    answer acknowledges no failure (all of them when ``acknowledgements`` is None)."""
    unrecovered = [
        call
        for i, call in enumerate(calls)
        if call.error and not any(c.name == call.name and c.performed for c in calls[i + 1 :])
    ]
    if unrecovered and acknowledgements is not None and acknowledgements.search(answer):
        return []
    return unrecovered


def _words(words: Sequence[str]) -> re.Pattern[str] | None:
    if not words:
        return None
    alternatives = "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))
    return re.compile(rf"(?<!\w)(?:{alternatives})(?!\w)", re.IGNORECASE)


@dataclass(frozen=True)
class ProductionRules:
    """Invented values and hidden tool errors as hard failures (see the module docstring)."""

    kinds: tuple[str, ...] = ALL_KINDS
    max_ungrounded: int = 0
    check_hidden_errors: bool = True
    acknowledgements: re.Pattern[str] | None = None
    enforce_with_case: bool = False
    name: str = "production_rules"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if trace.final_output is None:
            gap = trace.gap("final_output")
            return skipped(self.name, gap.reason if gap else "no final answer")
        evidence = LazyEvidenceValues.of(evidence_texts(trace, case))
        invented = [
            v
            for v in extract(trace.final_output)
            if v.kind in self.kinds and not evidence.supports(v)
        ]
        hidden = (
            hidden_errors(trace.tool_calls, trace.final_output, self.acknowledgements)
            if self.check_hidden_errors
            else []
        )
        problems = []
        if len(invented) > self.max_ungrounded:
            texts = ", ".join(v.text for v in invented[:8])
            problems.append(
                f"the answer states values no {evidence_names(trace, case)} contains: {texts}"
            )
        if hidden:
            calls = "; ".join(f"{c.name}: {c.error}" for c in hidden[:3])
            problems.append(f"a tool call failed and the answer does not say so ({calls})")
        details: Mapping[str, Any] = {
            "invented": [{"kind": v.kind, "text": v.text} for v in invented],
            "hidden_errors": [{"name": c.name, "error": c.error} for c in hidden],
        }
        if not problems:
            return Score(self.name, 1.0, "no invented values, no hidden tool errors", (), details)
        hard = tuple(problems) if case is None or self.enforce_with_case else ()
        return Score(self.name, 0.0, "; ".join(problems), hard, details)


@register("production_rules")
def _production_rules(config: Config) -> ProductionRules:
    rules = config.reference_free
    return ProductionRules(
        kinds=tuple(rules.get("ungrounded_kinds", ALL_KINDS)),
        max_ungrounded=int(rules.get("max_ungrounded", 0)),
        check_hidden_errors=bool(rules.get("hidden_tool_errors", True)),
        acknowledgements=_words(rules.get("acknowledgements", ())),
        enforce_with_case=bool(rules.get("enforce_with_case", False)),
    )
