"""Latency, tokens and cost of a trace, of one agent's subtree, or of one tool.

Latency is span duration in milliseconds (trace: the root span; per LLM/tool call: its span).
Cost is computed per LLM call from its model's price (USD per million tokens, cached input
at the cached rate; :class:`~tracegrade.config.Pricing`); a call whose model has no price
leaves the total incomplete, and ``unpriced_models`` says which.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from tracegrade.config import Pricing
from tracegrade.trace import AgentTrace, LlmCall


@dataclass(frozen=True)
class Usage:
    """Measurements of a trace or subtree; ``None`` where the trace does not record it."""

    duration_ms: float | None
    input_tokens: int | None
    output_tokens: int | None
    cost_usd: float | None
    llm_calls: int
    tool_calls: int
    llm_durations_ms: tuple[float, ...] = ()
    tool_durations_ms: tuple[float, ...] = ()
    unpriced_models: tuple[str, ...] = field(default_factory=tuple)

    @property
    def total_tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)


def _cost(calls: Sequence[LlmCall], pricing: Pricing) -> tuple[float | None, tuple[str, ...]]:
    total, unpriced, priced_any = 0.0, [], False
    for call in calls:
        cost = pricing.cost_usd(
            call.model, call.input_tokens, call.output_tokens, call.cached_input_tokens
        )
        if cost is None:
            if call.input_tokens is not None or call.output_tokens is not None:
                unpriced.append(call.model or "unknown")
            continue
        total, priced_any = total + cost, True
    return (total if priced_any and not unpriced else None), tuple(sorted(set(unpriced)))


def _sum(values: Sequence[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def measure(trace: AgentTrace, pricing: Pricing) -> Usage:
    """Usage of the whole trace (tokens: the trace's totals, which never double count)."""
    cost, unpriced = _cost(trace.llm_calls, pricing)
    timed = trace.gap("timing") is None
    return Usage(
        duration_ms=trace.duration_ms if timed else None,
        input_tokens=trace.input_tokens,
        output_tokens=trace.output_tokens,
        cost_usd=cost,
        llm_calls=len(trace.llm_calls),
        tool_calls=len(trace.tool_calls),
        llm_durations_ms=tuple(c.duration_ms for c in trace.llm_calls) if timed else (),
        tool_durations_ms=tuple(
            c.duration_ms for c in trace.tool_calls if c.duration_ms is not None
        )
        if timed
        else (),
        unpriced_models=unpriced,
    )


def agent_subtree_ids(trace: AgentTrace, name: str) -> set[str]:
    """Span ids of agents named ``name`` and of every agent nested inside them."""
    ids = {a.span_id for a in trace.agents if a.name == name}
    changed = True
    while changed:
        inner = {a.span_id for a in trace.agents if a.parent_agent_span_id in ids} - ids
        ids |= inner
        changed = bool(inner)
    return ids


def measure_agent(trace: AgentTrace, name: str, pricing: Pricing) -> Usage:
    """Usage of agent ``name``'s subtree: its longest invocation, and the LLM and tool calls
    under it or under agents nested in it."""
    ids = agent_subtree_ids(trace, name)
    calls = [c for c in trace.llm_calls if c.agent_span_id in ids]
    tools = [c for c in trace.tool_calls if c.agent_span_id in ids]
    durations = [a.duration_ms for a in trace.agents if a.name == name]
    cost, unpriced = _cost(calls, pricing)
    return Usage(
        max(durations) if durations and trace.gap("timing") is None else None,
        _sum([c.input_tokens for c in calls]),
        _sum([c.output_tokens for c in calls]),
        cost,
        len(calls),
        len(tools),
        unpriced_models=unpriced,
    )


def measure_tool(trace: AgentTrace, name: str) -> Usage:
    """Usage of tool ``name``: its slowest call and its number of calls."""
    calls = [c for c in trace.tool_calls if c.name == name]
    durations = [c.duration_ms for c in calls if c.duration_ms is not None]
    slowest = max(durations) if durations and trace.gap("timing") is None else None
    return Usage(slowest, None, None, None, 0, len(calls), tool_durations_ms=tuple(durations))
