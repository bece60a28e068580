"""Conversations across traces: which traces are turns of one conversation.

Every framework we record makes each user turn its own trace, and the first LLM call of turn
2 replays turn 1. Traces are linked into one conversation by, in order of evidence:

1. **An id**: :attr:`~tracegrade.trace.AgentTrace.conversation_id` (``gen_ai.conversation.id``,
   ``session.id``, a framework's session or thread id, read by the convention modules);
2. **History continuity**, for traces without an id: a trace whose :attr:`history` (the
   earlier turns its first LLM call replays) equals all the user turns of an earlier trace
   (that trace's history and inputs) continues that trace's conversation. The latest such
   trace wins, so a conversation forked from the same start stays two conversations only
   where their histories differ.

Everything else is a conversation of its own. Keys are ``id:<conversation id>`` or
``trace:<trace id of the conversation's first trace>``; :func:`turn_index` numbers a trace
within its conversation (0-based, in start order); :func:`merge_traces` makes one
:class:`~tracegrade.trace.AgentTrace` of a conversation's traces (what ``dataset build``
turns into a multi-turn case).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from tracegrade.trace import AgentTrace, LlmCall, ToolCall, TurnStart


def _turns(trace: AgentTrace) -> tuple[str, ...]:
    """Every user turn the trace knows of: its history, then its own inputs."""
    return (*trace.history, *trace.user_inputs)


def group_conversations(traces: Sequence[AgentTrace]) -> dict[str, str]:
    """``trace id -> conversation key`` for every trace (see the module docstring)."""
    keys: dict[str, str] = {}
    latest_by_turns: dict[tuple[str, ...], str] = {}
    for trace in sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id)):
        if trace.conversation_id:
            key = f"id:{trace.conversation_id}"
        elif trace.history and trace.history in latest_by_turns:
            key = keys[latest_by_turns[trace.history]]
        else:
            key = f"trace:{trace.trace_id}"
        keys[trace.trace_id] = key
        turns = _turns(trace)
        if turns:
            latest_by_turns[turns] = trace.trace_id
    return keys


def conversations(traces: Sequence[AgentTrace]) -> list[list[AgentTrace]]:
    """The traces grouped into conversations, each in start order, oldest conversation first."""
    keys = group_conversations(traces)
    groups: dict[str, list[AgentTrace]] = {}
    for trace in sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id)):
        groups.setdefault(keys[trace.trace_id], []).append(trace)
    return list(groups.values())


def turn_index(keys: Mapping[str, str], traces: Sequence[AgentTrace]) -> dict[str, int]:
    """``trace id -> its 0-based turn within its conversation`` (start order)."""
    seen: dict[str, int] = {}
    out: dict[str, int] = {}
    for trace in sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id)):
        key = keys[trace.trace_id]
        out[trace.trace_id] = seen.get(key, 0)
        seen[key] = out[trace.trace_id] + 1
    return out


def _sum(values: Sequence[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def merge_traces(traces: Sequence[AgentTrace]) -> AgentTrace:
    """One trace of a conversation's traces, oldest first: the first trace's history and then
    every trace's user inputs, LLM and tool calls and turn starts in order (their
    ``llm_call_index`` shifted to the merged list), usage summed, the last trace's answer,
    the first trace's id. A single trace is returned as it is."""
    ordered = sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id))
    if len(ordered) == 1:
        return ordered[0]
    first, last = ordered[0], ordered[-1]
    llm_calls: list[LlmCall] = []
    tool_calls: list[ToolCall] = []
    starts: list[TurnStart] = []
    offset = 0
    for trace in ordered:
        llm_calls += trace.llm_calls
        tool_calls += [
            dataclasses.replace(
                c, llm_call_index=None if c.llm_call_index is None else c.llm_call_index + offset
            )
            for c in trace.tool_calls
        ]
        starts += [
            dataclasses.replace(s, llm_call_index=s.llm_call_index + offset)
            for s in trace.turn_starts
        ]
        offset += len(trace.llm_calls)
    end = max(t.start_unix_nano + t.duration_ms * 1e6 for t in ordered)
    return dataclasses.replace(
        last,
        trace_id=first.trace_id,
        user_inputs=(*first.history, *(u for t in ordered for u in t.user_inputs)),
        history=(),
        llm_calls=tuple(llm_calls),
        tool_calls=tuple(tool_calls),
        agents=tuple(a for t in ordered for a in t.agents),
        conversation_id=first.conversation_id or last.conversation_id,
        start_unix_nano=first.start_unix_nano,
        duration_ms=(end - first.start_unix_nano) / 1e6,
        input_tokens=_sum([t.input_tokens for t in ordered]),
        output_tokens=_sum([t.output_tokens for t in ordered]),
        cached_input_tokens=_sum([t.cached_input_tokens for t in ordered]),
        gaps=tuple(dict.fromkeys(g for t in ordered for g in t.gaps)),
        root_attributes={**last.root_attributes, **first.root_attributes},
        resource_attributes={**last.resource_attributes, **first.resource_attributes},
        span_count=sum(t.span_count for t in ordered),
        log_record_count=sum(t.log_record_count for t in ordered),
        turn_starts=tuple(starts),
    )
