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
within its conversation (0-based, in start order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracegrade.trace import AgentTrace


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
