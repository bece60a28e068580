"""The span an evaluation of a trace is about (:attr:`AgentTrace.evaluated_span_id`: the
parent of ``--export-otlp``'s ``gen_ai.evaluation.result`` records)."""

from __future__ import annotations

from tests.support.sdk import agent_turn, trace_request
from tracegrade.normalize import normalize_all
from tracegrade.otlp.codec import spans_from_request
from tracegrade.trace import AgentInfo, AgentTrace, LlmCall

TRACE = "0af7651916cd43dd8448eb211c80319c"


def test_the_evaluated_span_is_the_outermost_agent_then_the_first_llm_call():
    (trace,) = normalize_all(spans_from_request(trace_request(agent_turn)))
    agent = next(a for a in trace.agents if a.parent_agent_span_id is None)
    assert trace.evaluated_span_id == agent.span_id
    call = LlmCall("c1", None, None, None, None, None, 0, 0.0, None, None)
    bare = AgentTrace(TRACE, (), None, (call, LlmCall("c2", *[None] * 5, 0, 0.0, None, None)), ())
    assert bare.evaluated_span_id == "c1"
    nested = AgentTrace(
        TRACE, (), None, (), (), agents=(AgentInfo("sub", "s2", "s1"), AgentInfo("main", "s1"))
    )
    assert nested.evaluated_span_id == "s1"
    assert AgentTrace(TRACE, (), None, (), ()).evaluated_span_id is None
