"""The structural diff of one case's BASE and CURRENT traces (:class:`TraceDiff`).

From the two :class:`~tracegrade.trace.AgentTrace` (when both are at hand): tools called now
and not before and vice versa (multisets), arguments that changed (calls paired by tool name
and occurrence, compared argument by argument), and token, cost and latency deltas per LLM call
(paired by position) and per tool call. From the case results alone (always): answer values
newly ungrounded (``value_grounding``), newly hit ``must_not_contain`` phrases
(``hallucination``), and the trace's total tokens, cost and latency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from itertools import zip_longest
from typing import Any

from tracegrade.compare.model import ArgumentChange, CallDelta, Delta, TraceDiff
from tracegrade.config import Pricing
from tracegrade.run_document import CaseEntry, CaseUsage, read_case
from tracegrade.trace import AgentTrace, LlmCall, ToolCall


def delta(base: float | None, current: float | None) -> Delta:
    """Both values and current - base (None when either is None)."""
    return Delta(base, current, None if base is None or current is None else current - base)


def _detail(case: CaseEntry | None, scorer: str, key: str) -> list[Any]:
    detail = case.details.get(scorer) if case else None
    return list((detail.details.get(key) if detail else None) or [])


def _ungrounded(case: CaseEntry | None) -> list[str]:
    return [
        str(v.get("text") if isinstance(v, Mapping) else v)
        for v in _detail(case, "value_grounding", "ungrounded")
    ]


def _new(base: Sequence[str], current: Sequence[str]) -> tuple[str, ...]:
    before = set(base)
    return tuple(dict.fromkeys(v for v in current if v not in before))


def _usage(case: CaseEntry | None) -> CaseUsage:
    return (case.usage if case else None) or CaseUsage()


def _tokens(case: CaseEntry | None) -> float | None:
    usage = _usage(case)
    if usage.input_tokens is None and usage.output_tokens is None:
        return None
    return (usage.input_tokens or 0) + (usage.output_tokens or 0)


def _by_occurrence(calls: Sequence[ToolCall]) -> dict[tuple[str, int], ToolCall]:
    seen: Counter[str] = Counter()
    keyed = {}
    for call in calls:
        keyed[(call.name, seen[call.name])] = call
        seen[call.name] += 1
    return keyed


def _arguments(base: ToolCall, current: ToolCall, occurrence: int) -> list[ArgumentChange]:
    old, new = base.arguments, current.arguments
    if not isinstance(old, Mapping) or not isinstance(new, Mapping):
        return [] if old == new else [ArgumentChange(base.name, occurrence, "*", old, new)]
    return [
        ArgumentChange(base.name, occurrence, str(name), old.get(name), new.get(name))
        for name in dict.fromkeys([*old, *new])
        if old.get(name) != new.get(name)
    ]


def _llm_tokens(call: LlmCall | None) -> int | None:
    if call is None or (call.input_tokens is None and call.output_tokens is None):
        return None
    return (call.input_tokens or 0) + (call.output_tokens or 0)


def _llm_cost(call: LlmCall | None, pricing: Pricing | None) -> float | None:
    if call is None or pricing is None:
        return None
    return pricing.cost_usd(
        call.model, call.input_tokens, call.output_tokens, call.cached_input_tokens
    )


def _llm_deltas(base: AgentTrace, current: AgentTrace, pricing: Pricing | None) -> list[CallDelta]:
    rows = []
    for i, (old, new) in enumerate(zip_longest(base.llm_calls, current.llm_calls)):
        name = (new or old).model or "llm"
        rows.append(
            CallDelta(
                "llm",
                name,
                i,
                delta(_llm_tokens(old), _llm_tokens(new)),
                delta(_llm_cost(old, pricing), _llm_cost(new, pricing)),
                delta(_ms(old), _ms(new)),
            )
        )
    return rows


def _ms(call: LlmCall | ToolCall | None) -> float | None:
    return None if call is None else call.duration_ms


def _tool_deltas(
    old: dict[tuple[str, int], ToolCall], new: dict[tuple[str, int], ToolCall]
) -> list[CallDelta]:
    none = Delta(None, None, None)
    return [
        CallDelta(
            "tool", name, n, none, none, delta(_ms(old.get((name, n))), _ms(new.get((name, n))))
        )
        for name, n in dict.fromkeys([*old, *new])
    ]


def diff_traces(
    base_case: CaseEntry | Mapping[str, Any] | None,
    current_case: CaseEntry | Mapping[str, Any] | None,
    base_trace: AgentTrace | None = None,
    current_trace: AgentTrace | None = None,
    pricing: Pricing | None = None,
) -> TraceDiff:
    """The diff of one case (see the module docstring). ``*_case`` are case entries of run
    documents; the traces are optional (without both, ``source`` is ``results``). ``pricing``
    prices each LLM call (per-call ``cost_usd`` is None without it).

    Raises:
        InputError: a case entry is not one (the field named).
    """
    base = None if base_case is None else read_case(base_case)
    current = None if current_case is None else read_case(current_case)
    common: dict[str, Any] = {
        "base_trace_id": base.trace_id if base else None,
        "current_trace_id": current.trace_id if current else None,
        "newly_ungrounded": _new(_ungrounded(base), _ungrounded(current)),
        "newly_forbidden": _new(
            _detail(base, "hallucination", "forbidden_found"),
            _detail(current, "hallucination", "forbidden_found"),
        ),
        "tokens": delta(_tokens(base), _tokens(current)),
        "cost_usd": delta(_usage(base).cost_usd, _usage(current).cost_usd),
        "latency_ms": delta(_usage(base).duration_ms, _usage(current).duration_ms),
    }
    if base_trace is None or current_trace is None:
        return TraceDiff(source="results", **common)
    old, new = Counter(base_trace.tools_called), Counter(current_trace.tools_called)
    old_calls, new_calls = (
        _by_occurrence(base_trace.tool_calls),
        _by_occurrence(current_trace.tool_calls),
    )
    changed = [
        change
        for key, call in old_calls.items()
        if key in new_calls
        for change in _arguments(call, new_calls[key], key[1])
    ]
    return TraceDiff(
        source="traces",
        tools_added=tuple((new - old).elements()),
        tools_removed=tuple((old - new).elements()),
        arguments_changed=tuple(changed),
        calls=(
            *_llm_deltas(base_trace, current_trace, pricing),
            *_tool_deltas(old_calls, new_calls),
        ),
        **common,
    )
