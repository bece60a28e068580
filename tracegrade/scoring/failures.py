"""Errors: tool calls and LLM calls that failed (span status ERROR, ``error.type``, an
exception event, or a tool result reporting an error). Reference-free.

The value is the fraction of calls that succeeded. Failures are not hard failures: an agent
that recovers from a tool error may still do the job; the correctness scorers judge that.
"""

from __future__ import annotations

from dataclasses import dataclass

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class Errors:
    """Fraction of tool and LLM calls that did not fail."""

    name: str = "errors"

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        total = len(trace.tool_calls) + len(trace.llm_calls)
        if total == 0:
            return skipped(self.name, "no tool or LLM calls")
        failed_tools = [c for c in trace.tool_calls if c.error]
        failed_llm = [c for c in trace.llm_calls if c.error]
        failed = len(failed_tools) + len(failed_llm)
        described = [f"{c.name}: {c.error}" for c in failed_tools[:5]] + [
            f"LLM {c.model}: {c.error}" for c in failed_llm[:3]
        ]
        reason = f"{failed} of {total} call(s) failed" + (
            f" ({'; '.join(described)})" if described else ""
        )
        details = {
            "failed_tool_calls": [{"name": c.name, "error": c.error} for c in failed_tools],
            "failed_llm_calls": [{"model": c.model, "error": c.error} for c in failed_llm],
        }
        return Score(self.name, 1 - failed / total, reason, details=details)


@register("errors")
def _errors(config: Config) -> Errors:
    return Errors()
