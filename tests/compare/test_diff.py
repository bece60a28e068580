"""The structural trace diff on normalised traces: tools added and removed as multisets,
arguments by name, per-call token, cost and latency deltas."""

from __future__ import annotations

import pytest

from tests.compare.documents import case
from tracegrade.compare import diff_traces
from tracegrade.config import ModelPrice, Pricing
from tracegrade.trace import AgentTrace, LlmCall, ToolCall


def _llm(tokens_in: int, tokens_out: int, ms: float) -> LlmCall:
    return LlmCall("s", "gpt-4o", None, tokens_in, tokens_out, None, 0, ms, "stop", None)


def _trace(trace_id: str, tools: list[ToolCall], llm: list[LlmCall]) -> AgentTrace:
    return AgentTrace(trace_id, ("hi",), "answer", tuple(llm), tuple(tools))


def test_tools_arguments_and_calls_are_diffed() -> None:
    base = _trace(
        "b",
        [
            ToolCall(
                "search", "1", {"query": "headphones", "max_price": 300}, "[]", duration_ms=20
            ),
            ToolCall("search", "2", {"query": "cases"}, "[]", duration_ms=30),
            ToolCall("get_price", "3", {"id": "p1"}, "{}", duration_ms=10),
        ],
        [_llm(100, 10, 200.0)],
    )
    current = _trace(
        "c",
        [
            ToolCall(
                "search", "1", {"query": "headphones", "max_price": 250}, "[]", duration_ms=25
            ),
            ToolCall("cancel_order", "4", {"id": "o1"}, "{}", duration_ms=5),
        ],
        [_llm(100, 10, 200.0), _llm(150, 30, 400.0)],
    )
    pricing = Pricing({"gpt-4o": ModelPrice(input=2.5, output=10.0)})
    diff = diff_traces(case("x", 1.0), case("x", 0.5), base, current, pricing)
    assert diff.source == "traces"
    assert diff.tools_removed == ("search", "get_price") and diff.tools_added == ("cancel_order",)
    (change,) = diff.arguments_changed
    assert (change.tool, change.occurrence, change.argument) == ("search", 0, "max_price")
    assert (change.base, change.current) == (300, 250)
    second_llm = next(c for c in diff.calls if c.kind == "llm" and c.occurrence == 1)
    assert second_llm.tokens.base is None and second_llm.tokens.current == 180
    assert second_llm.cost_usd.current == pytest.approx((150 * 2.5 + 30 * 10.0) / 1e6)
    first_search = next(c for c in diff.calls if c.name == "search" and c.occurrence == 0)
    assert first_search.latency_ms.delta == pytest.approx(5.0)


def test_without_traces_the_diff_comes_from_the_results() -> None:
    found = {"value_grounding": {"details": {"ungrounded": [{"kind": "price", "text": "$9.99"}]}}}
    hit = {"hallucination": {"details": {"forbidden_found": ["guaranteed"]}}}
    base = case("x", 1.0, duration_ms=100)
    current = case("x", 0.3, duration_ms=150, details={**found, **hit})
    diff = diff_traces(base, current)
    assert diff.source == "results" and not diff.empty
    assert diff.newly_ungrounded == ("$9.99",) and diff.newly_forbidden == ("guaranteed",)
    assert diff.latency_ms.delta == 50
