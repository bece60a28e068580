"""Faithfulness: does the answer contain only information present in its context?

The evaluation design names it first among scorers ("does the output only contain information
present in the reference context"), the context being the retrieved documents. Here the
context is what the trace retrieved (:attr:`~tracegrade.trace.AgentTrace.retrievals`) and the
case's ``reference``; tool results, user inputs and system instructions are evidence too
(:func:`~tracegrade.scoring.grounding.evidence_texts`), as they are for value grounding.

It applies to RAG traces: a trace with a retrieval, or a case with a reference. Elsewhere it
is skipped with the reason (``value_grounding`` holds answers to tool results).

The claims checked:

- **values** (prices, percentages, numbers, dates, times, ids; :mod:`.values`) in the final
  answer: each is supported when some evidence contains it; the details name the evidence
  that contains it (``document <id>``, ``reference <id>``, ``tool <name>``, ``user input``,
  ``system prompt``) and the reason names each unsupported value;
- **statements**, with an LLM judge (``tracegrade score --judge``): the faithfulness
  rubric's unsupported or contradicted claims (:mod:`tracegrade.judge.faithfulness`).

The value is the fraction of values supported (1 when the answer states none); a judge lowers
it to its own score when that is lower. Not a hard failure: weight it (``weights:
{faithfulness: ...}``) or read it in the report; an unsupported value also makes the case
count as hallucinated (:func:`~tracegrade.scoring.evaluation.hallucinated`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.grounding import evidence_texts, reference_texts
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.values import LazyEvidenceValues, Value, extract
from tracegrade.trace import AgentTrace

NAME = "faithfulness"


def _labelled_evidence(trace: AgentTrace, case: Case | None) -> Iterator[tuple[str, str]]:
    """(label, text) of every piece of evidence, labelled for a reader."""
    for number, retrieval in enumerate(trace.retrievals, start=1):
        for index, document in enumerate(retrieval.documents, start=1):
            if document.content:
                yield f"document {document.id or f'{number}.{index}'}", document.content
    if case is not None:
        for index, reference in enumerate(case.reference_documents, start=1):
            if reference.content:
                yield f"reference {reference.id or index}", reference.content
    for call in trace.tool_calls:
        if call.result:
            yield f"tool {call.name}", call.result
    for text in trace.user_inputs:
        yield "user input", text
    if trace.system_instructions:
        yield "system prompt", trace.system_instructions


def has_context(trace: AgentTrace, case: Case | None) -> bool:
    """True when faithfulness applies: the trace retrieved something or the case has a
    reference."""
    return bool(trace.retrievals) or bool(reference_texts(case))


def _context(trace: AgentTrace, case: Case | None) -> dict[str, int]:
    documents = [d for r in trace.retrievals for d in r.documents]
    return {
        "retrievals": len(trace.retrievals),
        "documents": len(documents),
        "documents_with_content": sum(1 for d in documents if d.content),
        "reference": len(reference_texts(case)),
    }


@dataclass(frozen=True)
class Faithfulness:
    """The values of the final answer that no evidence supports (module docstring)."""

    name: str = NAME

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if not has_context(trace, case):
            return skipped(
                self.name,
                "no retrieval in the trace and no reference in the case: nothing to "
                "be faithful to (value_grounding checks tool results)",
            )
        if trace.final_output is None:
            gap = trace.gap("final_output")
            return skipped(self.name, gap.reason if gap else "no final answer")
        context = _context(trace, case)
        if not context["documents_with_content"] and not context["reference"]:
            if any(not r.documents_recorded for r in trace.retrievals):
                return skipped(
                    self.name, "the retrievals record no documents (content capture off?)"
                )
            if context["documents"]:
                return skipped(
                    self.name, "the retrieved documents carry ids and scores but no content"
                )
        values = extract(trace.final_output)
        evidence = LazyEvidenceValues.of(evidence_texts(trace, case))
        pieces = [
            (label, LazyEvidenceValues.of([text]))
            for label, text in _labelled_evidence(trace, case)
        ]
        supported: list[dict[str, Any]] = []
        unsupported: list[Value] = []
        for value in values:
            if evidence.supports(value):
                found = list(dict.fromkeys(lbl for lbl, ev in pieces if ev.supports(value)))
                supported.append({"kind": value.kind, "text": value.text, "evidence": found})
            else:
                unsupported.append(value)
        details: dict[str, Any] = {
            "values": len(values),
            "supported": supported,
            "unsupported": [{"kind": v.kind, "text": v.text} for v in unsupported],
            "statements": [],
            "context": context,
        }
        if not values:
            return Score(self.name, 1.0, "the answer states no concrete values", details=details)
        reason = f"{len(supported)}/{len(values)} values supported by the context" + (
            f"; unsupported: {', '.join(v.text for v in unsupported[:8])}" if unsupported else ""
        )
        return Score(self.name, len(supported) / len(values), reason, details=details)


@register(NAME)
def _faithfulness(config: Config) -> Faithfulness:
    return Faithfulness()
