"""Normalised traces and golden cases built directly (no spans, no normaliser), for any test
directory.

Every id, duration and token count is explicit or a fixed default, so expected values can be
worked out by hand from the product spec.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from tracegrade.config import ModelPrice
from tracegrade.dataset import Case, Dataset
from tracegrade.trace import AgentInfo, AgentTrace, Gap, LlmCall, ToolCall

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
START_NS = 1_700_000_000_000_000_000

_AUTO: Any = object()


def tool(
    name: str,
    arguments: Any = None,
    *,
    result: str | None = None,
    error: str | None = _AUTO,
    call_id: str | None = None,
    span_id: str | None = None,
    duration_ms: float | None = 10.0,
    agent_span_id: str | None = None,
    arguments_recorded: bool = True,
) -> ToolCall:
    """One tool call. As the normaliser does (``result_error``), a result starting with
    ``Error:`` marks the call as failed unless ``error`` is given explicitly."""
    if error is _AUTO:
        error = result.strip() if result and result.strip().lower().startswith("error:") else None
    return ToolCall(
        name=name,
        call_id=call_id,
        arguments={} if arguments is None else arguments,
        result=result,
        error=error,
        arguments_recorded=arguments_recorded,
        span_id=span_id,
        start_unix_nano=START_NS,
        duration_ms=duration_ms,
        agent_span_id=agent_span_id,
    )


def llm(
    model: str | None = "gpt-4o",
    *,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
    cached_input_tokens: int | None = None,
    duration_ms: float = 100.0,
    output_text: str | None = None,
    tool_call_ids: tuple[str | None, ...] = (),
    span_id: str = "llm-1",
    agent_span_id: str | None = None,
    error: str | None = None,
) -> LlmCall:
    """One LLM call."""
    return LlmCall(
        span_id=span_id,
        model=model,
        provider="openai",
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached_input_tokens,
        start_unix_nano=START_NS,
        duration_ms=duration_ms,
        finish_reason="tool_calls" if tool_call_ids else "stop",
        output_text=output_text,
        tool_call_ids=tool_call_ids,
        agent_span_id=agent_span_id,
        error=error,
    )


def agent(
    name: str, span_id: str, *, parent: str | None = None, duration_ms: float = 0.0
) -> AgentInfo:
    return AgentInfo(
        name=name, span_id=span_id, parent_agent_span_id=parent, duration_ms=duration_ms
    )


def gap(field: str, reason: str = "not recorded in this test") -> Gap:
    return Gap(field, reason)


def _total(values: Iterable[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def make_trace(
    *,
    trace_id: str = TRACE_ID,
    user_inputs: Iterable[str] = ("Show me my recent orders",),
    final_output: str | None = "Done.",
    tool_calls: Iterable[ToolCall] = (),
    llm_calls: Iterable[LlmCall] = (),
    agents: Iterable[AgentInfo] = (),
    gaps: Iterable[Gap] = (),
    duration_ms: float = 1000.0,
    input_tokens: int | None = _AUTO,
    output_tokens: int | None = _AUTO,
    cached_input_tokens: int | None = _AUTO,
    system_instructions: str | None = None,
    root_attributes: Mapping[str, Any] | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
) -> AgentTrace:
    """A normalised trace. Token totals default to the sums over ``llm_calls`` (as the
    normaliser computes them); pass them explicitly to override."""
    llm_calls = tuple(llm_calls)
    return AgentTrace(
        trace_id=trace_id,
        user_inputs=tuple(user_inputs),
        final_output=final_output,
        llm_calls=llm_calls,
        tool_calls=tuple(tool_calls),
        agents=tuple(agents),
        system_instructions=system_instructions,
        start_unix_nano=START_NS,
        duration_ms=duration_ms,
        input_tokens=_total(c.input_tokens for c in llm_calls)
        if input_tokens is _AUTO
        else input_tokens,
        output_tokens=_total(c.output_tokens for c in llm_calls)
        if output_tokens is _AUTO
        else output_tokens,
        cached_input_tokens=(
            _total(c.cached_input_tokens for c in llm_calls)
            if cached_input_tokens is _AUTO
            else cached_input_tokens
        ),
        gaps=tuple(gaps),
        root_attributes=dict(root_attributes or {}),
        resource_attributes=dict(resource_attributes or {}),
    )


def make_case(**fields: Any) -> Case:
    """A validated golden case; ``input`` defaults to the default trace's user input."""
    if "input" not in fields and "turns" not in fields:
        fields["input"] = "Show me my recent orders"
    return Case.model_validate(fields)


def make_dataset(*cases: Case, **settings: Any) -> Dataset:
    return Dataset(cases=list(cases), **settings)


# USD per million tokens, chosen so costs are easy to compute by hand.
TEST_PRICES = {
    "gpt-4o": ModelPrice(input=2.0, cached_input=1.0, output=10.0),
    "gpt-4o-mini": ModelPrice(input=0.5, output=2.0),
}
