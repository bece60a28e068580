"""Trace lint: which scoring inputs a trace provides, and for each one missing, why.

Every scorer needs some inputs (the user's input, the final answer, tool calls with
arguments and results, tokens, timing). :func:`lint` checks each against a normalised trace
and its gaps, so a team can fix its instrumentation before trusting a score.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from tracegrade.normalize import plausibility
from tracegrade.trace import AgentTrace

Status = Literal["ok", "partial", "missing", "implausible"]
"""``implausible``: present, but not the kind of value it should be (:mod:`.plausibility`);
like ``missing``, it makes the trace not ok."""


@dataclass(frozen=True)
class Check:
    """One scoring input: ``status`` ok/partial/missing/implausible, ``detail`` what was found
    or why not,
    ``used_by`` the scorers that need it."""

    input: str
    status: Status
    detail: str
    used_by: str


@dataclass(frozen=True)
class LintReport:
    """The checks of one trace."""

    trace_id: str
    conventions: tuple[str, ...]
    checks: tuple[Check, ...]

    @property
    def ok(self) -> bool:
        """True when no check is missing or implausible (partial checks are allowed)."""
        return all(c.status not in ("missing", "implausible") for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        """JSON form:
        ``{trace_id, conventions, ok, checks: [{input, status, detail, used_by}]}``."""
        return {
            "trace_id": self.trace_id,
            "conventions": list(self.conventions),
            "ok": self.ok,
            "checks": [asdict(c) for c in self.checks],
        }


def _gap_check(
    trace: AgentTrace, name: str, used_by: str, ok_detail: str, *, partial: bool = False
) -> Check:
    gap = trace.gap(name)
    if gap is None:
        return Check(name, "ok", ok_detail, used_by)
    return Check(name, "partial" if partial else "missing", gap.reason, used_by)


def _final_output(trace: AgentTrace) -> Check:
    used_by = "completeness, hallucination, value grounding, judge"
    if trace.final_output is not None:
        return Check("final_output", "ok", f"{len(trace.final_output)} characters", used_by)
    gap = trace.gap("final_output")
    if gap is not None:
        return Check("final_output", "missing", gap.reason, used_by)
    tools = ", ".join(dict.fromkeys(_requested_tools(trace))) or "a tool"
    return Check(
        "final_output",
        "ok",
        f"none: the run ended on a tool call ({tools}), not an answer",
        used_by,
    )


def _requested_tools(trace: AgentTrace) -> list[str]:
    """Names of the tool calls the last LLM call requested (by its ``llm_call_index``)."""
    last = len(trace.llm_calls) - 1
    return [c.name for c in trace.tool_calls if c.llm_call_index == last and last >= 0]


def _tokens(trace: AgentTrace) -> Check:
    used_by = "tokens, cost"
    if gap := trace.gap("tokens"):
        return Check("tokens", "missing", gap.reason, used_by)
    detail = f"{trace.input_tokens or 0} in / {trace.output_tokens or 0} out"
    if gap := trace.gap("llm_call_tokens"):
        return Check("tokens", "partial", f"{detail}; {gap.reason}", used_by)
    return Check("tokens", "ok", detail, used_by)


def _tools(trace: AgentTrace) -> list[Check]:
    calls = trace.tool_calls
    used_by = "tool correctness, groundedness"
    if trace.gap("tool_calls"):
        first = Check("tool_calls", "missing", trace.gap("tool_calls").reason, used_by)  # type: ignore[union-attr]
    else:
        names = ", ".join(dict.fromkeys(trace.tools_called)) or "none"
        first = Check("tool_calls", "ok", f"{len(calls)} tool call(s): {names}", used_by)
    return [
        first,
        _gap_check(trace, "tool_arguments", "tool arguments", "all recorded", partial=True),
        _gap_check(
            trace, "tool_results", "value grounding, judge evidence", "all recorded", partial=True
        ),
        _gap_check(
            trace,
            "tool_call_ids",
            "parallel/sequential call analysis",
            "all recorded",
            partial=True,
        ),
    ]


def lint(trace: AgentTrace) -> LintReport:
    """Check every scoring input of one trace (see the module docstring)."""
    models = ", ".join(sorted({c.model for c in trace.llm_calls if c.model})) or "unknown"
    checks = [
        _gap_check(
            trace,
            "user_inputs",
            "matching cases, grounding, judge",
            f"{len(trace.user_inputs)} user message(s)",
        ),
        _final_output(trace),
        _gap_check(
            trace,
            "llm_calls",
            "tokens, cost, latency",
            f"{len(trace.llm_calls)} LLM call(s), model {models}",
        ),
        _gap_check(trace, "message_content", "everything that reads messages", "captured"),
        _tokens(trace),
        _gap_check(trace, "model", "cost", models, partial=True),
        *_tools(trace),
        _gap_check(trace, "timing", "latency", f"{trace.duration_ms:.0f} ms"),
        Check(
            "conversation_id",
            "ok" if trace.conversation_id else "partial",
            trace.conversation_id
            or "none: gen_ai.conversation.id / session.id not set (traces group by trace id)",
            "multi-turn grouping",
        ),
    ]
    unread = trace.gap("unread_content")
    if unread is not None:
        checks.insert(0, Check("unread_content", "missing", unread.reason, "everything"))
    order = trace.gap("llm_call_order")
    if order is not None:
        checks.append(
            Check("llm_call_order", "partial", order.reason, "final output, tool call order")
        )
    if trace.gap("attributes"):
        checks.append(Check("attributes", "partial", trace.gap("attributes").reason, "all"))  # type: ignore[union-attr]
    return LintReport(trace.trace_id, trace.conventions, tuple(_plausible(checks, trace)))


def _judged(check: Check, problems: list[tuple[bool, str]]) -> Check:
    """``check`` downgraded by plausibility problems: implausible when one is certain,
    partial when all are doubts; unchanged without problems or when already missing."""
    if not problems or check.status == "missing":
        return check
    status: Status = "implausible" if any(c for c, _ in problems) else "partial"
    reasons = "; ".join(reason for _, reason in problems)
    return Check(check.input, status, f"{reasons} ({check.detail})", check.used_by)


def _plausible(checks: list[Check], trace: AgentTrace) -> list[Check]:
    """The checks with :mod:`.plausibility`'s findings applied: lint checks that a present
    value is plausible, not only that it is present."""
    found = {
        **plausibility.texts(trace),
        "tool_arguments": plausibility.argument_problems(trace.tool_calls),
        "tool_results": [(True, r) for r in plausibility.result_problems(trace.tool_calls)],
    }
    return [_judged(c, found.get(c.input, [])) for c in checks]
