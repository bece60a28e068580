"""Hallucination checks from the case: ``must_not_contain`` and ``must_contain``.

A ``must_not_contain`` phrase in the answer is a hard failure (the case fails whatever its
score). ``must_contain`` gives partial credit: the fraction of phrases found; a phrase not
found is reported as "expected phrase missing" (reports label the scorer "expected phrases":
:mod:`tracegrade.scoring.labels`; its stored name stays ``hallucination``). Phrases match
case-insensitively on word boundaries, with thousands separators ignored ("1,327" contains
"1327", not "327"). ``contain_scope: any_response`` searches every assistant response of the
run instead of only the final answer (tau-bench checks its ``outputs`` that way).
"""

from __future__ import annotations

from dataclasses import dataclass

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.text import found_phrases
from tracegrade.trace import AgentTrace


def searched_text(trace: AgentTrace, scope: str) -> str | None:
    """The final answer, or the replies / all assistant texts joined (see the module doc)."""
    if scope in ("replies", "any_response"):
        texts = [
            c.output_text
            for c in trace.llm_calls
            if c.output_text and (scope == "any_response" or not c.tool_call_ids)
        ]
        if trace.final_output and trace.final_output not in texts:
            texts.append(trace.final_output)
        return "\n".join(texts) if texts else None
    return trace.final_output


@dataclass(frozen=True)
class Hallucination:
    """must_not_contain hits fail the case; must_contain scores the fraction found."""

    name: str = "hallucination"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None or not (case.must_contain or case.must_not_contain):
            return skipped(self.name, "the case has no must_contain / must_not_contain")
        text = searched_text(trace, case.contain_scope)
        if text is None:
            gap = trace.gap("final_output") or trace.gap("message_content")
            if gap:
                return skipped(self.name, gap.reason)
            text = ""
        forbidden = found_phrases(text, case.must_not_contain)
        required = found_phrases(text, case.must_contain)
        missing = [p for p in case.must_contain if p not in required]
        hard = tuple(f"answer contains forbidden phrase {p!r}" for p in forbidden)
        value = len(required) / len(case.must_contain) if case.must_contain else 1.0
        parts = [*hard]
        if case.must_contain:
            parts.append(_expected(missing, len(required), len(case.must_contain)))
        return Score(
            self.name,
            0.0 if forbidden else value,
            "; ".join(parts) or "no forbidden phrase",
            hard,
            {
                "forbidden_found": forbidden,
                "required": list(case.must_contain),
                "required_missing": missing,
            },
        )


def _expected(missing: list[str], found: int, expected: int) -> str:
    """The ``must_contain`` part of the reason, in a reader's words: a phrase missing is
    "expected phrase missing", not an invented fact (:mod:`tracegrade.scoring.labels`)."""
    counted = f"{found}/{expected} expected phrase{'' if expected == 1 else 's'} found"
    if not missing:
        return counted
    phrases = ", ".join(repr(p) for p in missing)
    return f"expected phrase{'' if len(missing) == 1 else 's'} missing: {phrases} ({counted})"


@register("hallucination")
def _hallucination(config: Config) -> Hallucination:
    return Hallucination()
