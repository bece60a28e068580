"""Groundedness: did the agent consult its tools before answering, and does its answer
state only values its evidence contains?

- ``groundedness`` (binary, as in the design documents): a case that marks itself factual
  (``criteria.grounded`` / ``criteria.tool_called``) or expects tools scores 1 when the agent
  made at least one tool call (performed, by default) and 0 when it answered without one.
- ``value_grounding`` (reference-free, so it also runs on production traffic): the prices,
  percentages, numbers, dates, times and ids in the final answer that appear in no evidence
  (tool results, retrieved documents, the case's reference, user inputs, system
  instructions: :func:`evidence_texts`) are reported as ungrounded; the value is the
  fraction of stated values that are grounded. A value the agent derived itself (a sum it
  did not compute with a tool) counts as ungrounded: that is the signal.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.values import LazyEvidenceValues, extract
from tracegrade.trace import AgentTrace, ToolCall

Counting = Literal["performed", "attempted"]


def counted_calls(trace: AgentTrace, counting: Counting) -> list[ToolCall]:
    """The tool calls that count as done: all attempted ones, or only those performed."""
    return [c for c in trace.tool_calls if counting == "attempted" or c.performed]


TOOL_CALL_FINISHES = frozenset({"tool_calls", "tool_use", "function_call"})
"""Finish reasons of a model response that requested tools (OpenAI, Anthropic, legacy)."""


def no_tool_requested(trace: AgentTrace) -> bool:
    """True when every LLM call of the trace records a finish reason and none requested a
    tool (``gen_ai.response.finish_reasons``, GenAI semconv; recorded with content off): the
    trace shows that no tool was called even when it cannot show tool calls' content."""
    calls = trace.llm_calls
    return bool(calls) and all(
        c.finish_reason is not None and c.finish_reason not in TOOL_CALL_FINISHES for c in calls
    )


def tool_calls_unrecorded(name: str, trace: AgentTrace) -> Score | None:
    """The skipped score of a tool scorer when the trace cannot show tool calls, else None
    (also when it has no tool span because no LLM call asked for a tool:
    :func:`no_tool_requested`)."""
    gap = trace.gap("tool_calls")
    if gap is None or (not trace.tool_calls and no_tool_requested(trace)):
        return None
    return skipped(name, f"tool calls not recorded: {gap.reason}")


@dataclass(frozen=True)
class Groundedness:
    """Binary: a factual case must call a tool before answering."""

    counting: Counting = "performed"
    name: str = "groundedness"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if case is None:
            return skipped(self.name, "needs a golden case")
        factual = bool(
            case.criteria.get("grounded")
            or case.criteria.get("tool_called")
            or case.all_expected_tools
        )
        if not factual:
            return skipped(self.name, "the case expects no tool use")
        if unrecorded := tool_calls_unrecorded(self.name, trace):
            return unrecorded
        calls = counted_calls(trace, self.counting)
        if calls:
            return Score(
                self.name, 1.0, f"answered after {len(calls)} {self.counting} tool call(s)"
            )
        attempted = len(trace.tool_calls)
        why = f" ({attempted} attempted, all failed)" if attempted else ""
        return Score(
            self.name, 0.0, f"expected a tool call before answering; none was {self.counting}{why}"
        )


def retrieved_texts(trace: AgentTrace) -> list[str]:
    """The content of every retrieved document, in retrieval order."""
    return [d.content for r in trace.retrievals for d in r.documents if d.content]


def reference_texts(case: Case | None) -> list[str]:
    """The content of the case's reference documents (none without a case)."""
    return [d.content for d in case.reference_documents if d.content] if case else []


def evidence_texts(trace: AgentTrace, case: Case | None = None) -> list[str]:
    """What an answer may draw on: tool results, retrieved documents, the case's reference,
    user inputs and system instructions. Retrieved content is evidence exactly as a tool
    result is (a RAG agent's retriever is its lookup tool)."""
    texts = [c.result for c in trace.tool_calls if c.result]
    texts.extend(retrieved_texts(trace))
    texts.extend(reference_texts(case))
    texts.extend(trace.user_inputs)
    if trace.system_instructions:
        texts.append(trace.system_instructions)
    return texts


def evidence_names(trace: AgentTrace, case: Case | None = None) -> str:
    """What :func:`evidence_texts` drew on, for a reason: "tool result or input", with
    "retrieved document" and "reference" named when the trace or case has them."""
    names = ["tool result"]
    if trace.retrievals:
        names.append("retrieved document")
    if reference_texts(case):
        names.append("reference")
    return ", ".join(names) + " or input" if len(names) > 1 else "tool result or input"


@dataclass(frozen=True)
class ValueGrounding:
    """The fraction of concrete values in the answer that the evidence contains."""

    name: str = "value_grounding"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if trace.final_output is None:
            gap = trace.gap("final_output")
            return skipped(
                self.name, gap.reason if gap else "no final answer (the run ended on a tool call)"
            )
        values = extract(trace.final_output)
        if not values:
            return Score(
                self.name, 1.0, "the answer states no concrete values", details={"values": 0}
            )
        evidence = LazyEvidenceValues.of(evidence_texts(trace, case))
        ungrounded = [v for v in values if not evidence.supports(v)]
        grounded = len(values) - len(ungrounded)
        reason = f"{grounded}/{len(values)} values grounded" + (
            f"; ungrounded: {', '.join(v.text for v in ungrounded[:8])}" if ungrounded else ""
        )
        details = {
            "values": len(values),
            "ungrounded": [{"kind": v.kind, "text": v.text} for v in ungrounded],
        }
        return Score(self.name, grounded / len(values), reason, details=details)


@register("groundedness")
def _groundedness(config: Config) -> Groundedness:
    return Groundedness(config.count_tool_calls)


@register("value_grounding")
def _value_grounding(config: Config) -> ValueGrounding:
    return ValueGrounding()
