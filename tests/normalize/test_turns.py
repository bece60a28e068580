"""Where each user turn starts, and the history its first LLM call was given (the evidence of
``context_preserved`` after an agent revival)."""

from __future__ import annotations

import dataclasses
import json

from tests.normalize.test_replayed_history import _task, traces  # noqa: F401  (fixture)
from tests.support.spanfactory import TraceBuilder
from tracegrade.normalize import normalize_trace
from tracegrade.normalize.conversations import merge_traces
from tracegrade.runner.execute import merge_traces as merge_span_traces
from tracegrade.spans import TraceData
from tracegrade.trace import AgentTrace

SYSTEM = {"role": "system", "content": "You are a shop assistant."}


def _chat(builder: TraceBuilder, parent: str, start_ms: float, *messages: dict) -> None:
    builder.add(
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(list(messages)),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": "ok"}]),
        },
        parent=parent,
        start_ms=start_ms,
    )


def _user(text: str) -> dict:
    return {"role": "user", "content": text}


def _assistant(text: str) -> dict:
    return {"role": "assistant", "content": text}


def _conversation(trace_id: str, turns: list[list[dict]], start_ms: float = 0) -> TraceBuilder:
    """One agent span per turn, each with one LLM call per message list."""
    builder = TraceBuilder(trace_id=trace_id)
    root = builder.add("tracegrade case c", start_ms=start_ms, duration_ms=100)
    for number, calls in enumerate(turns):
        agent = builder.add(
            "invoke_agent shop",
            {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
            parent=root,
            start_ms=start_ms + 10 * number,
            duration_ms=9,
        )
        for k, messages in enumerate(calls):
            _chat(builder, agent, start_ms + 10 * number + k + 1, *messages)
    return builder


U1, A1, U2 = _user("Find running shoes"), _assistant("The Pegasus, $130."), _user("In stock?")
TOOL = {"role": "tool", "tool_call_id": "c1", "content": "{}"}


def _starts(trace: AgentTrace) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(s.user_input, s.llm_call_index, s.history) for s in trace.turn_starts]


def test_a_turn_starts_at_the_first_call_given_a_new_user_message_with_its_history():
    trace = _conversation(
        "a" * 32, [[[SYSTEM, U1], [SYSTEM, U1, A1, TOOL]], [[SYSTEM, U1, A1, U2]]]
    ).normalize()
    assert _starts(trace) == [
        ("Find running shoes", 0, ()),
        ("In stock?", 2, ("Find running shoes",)),
    ]


def test_a_turn_whose_agent_forgot_the_thread_has_no_history():
    trace = _conversation("b" * 32, [[[SYSTEM, U1]], [[SYSTEM, U2]]]).normalize()
    assert _starts(trace) == [("Find running shoes", 0, ()), ("In stock?", 1, ())]


def _renumbered(data: TraceData, prefix: str) -> TraceData:
    """The trace with span ids of its own (each builder numbers its spans from 1)."""

    def new(span_id: str | None) -> str | None:
        return None if span_id is None else prefix + span_id[len(prefix) :]

    spans = [
        dataclasses.replace(s, span_id=new(s.span_id), parent_span_id=new(s.parent_span_id))
        for s in data.spans
    ]
    return TraceData(data.trace_id, spans, [])


def test_turns_recorded_as_separate_traces_keep_their_starts_when_merged():
    first = _conversation("c" * 32, [[[SYSTEM, U1]]]).data()
    second = _renumbered(_conversation("d" * 32, [[[SYSTEM, U1, A1, U2]]], start_ms=50).data(), "d")
    spans = merge_span_traces([first, second])  # how the runner merges a case's traces
    assert _starts(normalize_trace(spans)) == [
        ("Find running shoes", 0, ()),
        ("In stock?", 1, ("Find running shoes",)),
    ]
    separately = merge_traces([normalize_trace(first), normalize_trace(second)])
    assert _starts(separately) == _starts(normalize_trace(spans))


def test_real_replayed_histories_start_one_turn_per_user_message(traces):  # noqa: F811
    for trace in traces:
        if trace.gap("attributes"):
            continue  # histories past the SDK's attribute limit lost their earliest turns
        assert [s.user_input for s in trace.turn_starts] == _task(trace)["user_messages"]
        for start in trace.turn_starts:
            assert list(start.history) == _task(trace)["user_messages"][: len(start.history)]
