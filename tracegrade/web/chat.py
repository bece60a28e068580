"""A conversation as a chat: the user's messages, the assistant's replies, and each tool call
with its arguments and result inline, in the order they happened.

A conversation may span several traces (one per turn, as most frameworks record it; linked by
conversation id or replayed history, :func:`tracegrade.normalize.conversations.conversations`).
Each trace is read from its normalised :class:`~tracegrade.trace.AgentTrace`: its new user
messages, then per LLM call the tool calls it requested (with their results) and its text, then
the final answer. A trace that holds several user turns places each before the first LLM call
whose input includes it (counted from the call's recorded input messages; without them, every
user message comes first).

Message text is the agent's own text (Markdown, usually); the face renders it safely. Nothing
here is HTML. Used by the case, trace and side-by-side pages (and any page that shows a
conversation: the chat is one template partial over a :class:`Chat`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracegrade.normalize import read_view
from tracegrade.normalize.view import Context
from tracegrade.spans import LogRecord, TraceData
from tracegrade.trace import AgentTrace, LlmCall, ToolCall

MAX_TEXT = 20_000
"""Characters shown of one message, argument list or result; the rest is cut, said so."""


@dataclass(frozen=True)
class ChatToolCall:
    """One tool call: arguments as indented JSON (None when not recorded), the result as
    text (JSON indented), the error when it failed, its span and duration (ms)."""

    name: str
    arguments: str | None
    result: str | None
    error: str | None
    span_id: str | None
    duration_ms: float | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class ChatMessage:
    """One chat message. ``role``: ``user``, ``assistant`` (text and/or tool calls) or
    ``history`` (an earlier user turn this conversation's first trace replays, its own trace
    not shown); ``text`` is Markdown source or None; ``trace_id`` the trace it came from."""

    role: Literal["user", "assistant", "history"]
    text: str | None
    trace_id: str
    tool_calls: tuple[ChatToolCall, ...] = ()
    model: str | None = None
    error: str | None = None
    final: bool = False
    """The trace's final answer."""

    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["tool_calls"] = [c.to_json() for c in self.tool_calls]
        return data


@dataclass(frozen=True)
class Chat:
    """A conversation: ``messages`` in order, the ``trace_ids`` shown (oldest first),
    ``missing`` (trace ids asked for but not in the store)."""

    messages: tuple[ChatMessage, ...]
    trace_ids: tuple[str, ...]
    missing: tuple[str, ...] = ()
    conversation_id: str | None = None

    @property
    def failed_tool_calls(self) -> int:
        """How many tool calls in the conversation failed."""
        return sum(1 for m in self.messages for c in m.tool_calls if c.error)

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_ids": list(self.trace_ids),
            "missing": list(self.missing),
            "conversation_id": self.conversation_id,
            "messages": [m.to_json() for m in self.messages],
        }


def _cut(text: str) -> str:
    if len(text) > MAX_TEXT:
        return text[:MAX_TEXT] + f"\n… ({len(text) - MAX_TEXT} more characters)"
    return text


def _json_text(value: Any) -> str:
    return _cut(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _result_text(result: str | None) -> str | None:
    if result is None:
        return None
    try:
        parsed = json.loads(result)
    except ValueError:
        return _cut(result)
    return _json_text(parsed) if isinstance(parsed, dict | list) else _cut(result)


def tool_call(call: ToolCall) -> ChatToolCall:
    """The chat form of one normalised tool call."""
    return ChatToolCall(
        name=call.name,
        arguments=_json_text(call.arguments) if call.arguments_recorded else None,
        result=_result_text(call.result),
        error=call.error,
        span_id=call.span_id,
        duration_ms=call.duration_ms,
    )


def _users_seen(data: TraceData, trace: AgentTrace) -> list[int | None]:
    """Per LLM call, how many of the trace's new user messages its input holds (None when
    its input messages are not recorded)."""
    logs: dict[str, list[LogRecord]] = {}
    for record in data.logs:
        if record.span_id:
            logs.setdefault(record.span_id, []).append(record)
    spans = {s.span_id: s for s in data.spans}
    context = Context(logs)
    seen: list[int | None] = []
    for call in trace.llm_calls:
        span = spans.get(call.span_id)
        messages = read_view(span, context).input_messages if span is not None else None
        if messages is None:
            seen.append(None)
            continue
        users = sum(1 for m in messages if m.role == "user" and m.text)
        seen.append(users - len(trace.history))
    return seen


def _placement(data: TraceData, trace: AgentTrace) -> list[int]:
    """Per LLM call, how many user messages come before it (non-decreasing, all of them
    before the first call when unknown)."""
    total = len(trace.user_inputs)
    out, before = [], 0
    for i, seen in enumerate(_users_seen(data, trace)):
        shown = (total if i == 0 else before) if seen is None else seen
        before = min(max(shown, before, 1 if i == 0 else 0), total)
        out.append(before)
    return out


def _assistant(call: LlmCall, calls: Sequence[ToolCall], trace_id: str) -> ChatMessage:
    return ChatMessage(
        "assistant",
        call.output_text,
        trace_id,
        tuple(tool_call(c) for c in calls),
        model=call.model,
        error=call.error,
    )


def _trace_messages(data: TraceData, trace: AgentTrace) -> list[ChatMessage]:
    """One trace's messages (see the module docstring)."""
    tid = trace.trace_id
    users = [ChatMessage("user", text, tid) for text in trace.user_inputs]
    placement = _placement(data, trace)
    out: list[ChatMessage] = []
    shown = 0
    loose = [c for c in trace.tool_calls if c.llm_call_index is None]
    for i, call in enumerate(trace.llm_calls):
        out += users[shown : placement[i]]
        shown = max(shown, placement[i])
        early = [c for c in loose if (c.start_unix_nano or 0) < call.start_unix_nano]
        if early:
            out.append(ChatMessage("assistant", None, tid, tuple(tool_call(c) for c in early)))
            loose = loose[len(early) :]
        requested = [c for c in trace.tool_calls if c.llm_call_index == i]
        if call.output_text or requested or call.error:
            out.append(_assistant(call, requested, tid))
    out += users[shown:]
    if loose:
        out.append(ChatMessage("assistant", None, tid, tuple(tool_call(c) for c in loose)))
    return _with_final(out, trace)


def _with_final(messages: list[ChatMessage], trace: AgentTrace) -> list[ChatMessage]:
    """Mark the final answer: the last assistant text when it is the answer, else a new one."""
    answer = trace.final_output
    if answer is None:
        return messages
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if message.role == "assistant" and message.text is not None:
            if message.text.strip() == answer.strip() and not message.tool_calls:
                messages[i] = ChatMessage(
                    "assistant", message.text, message.trace_id, (), message.model, None, True
                )
                return messages
            break
    messages.append(ChatMessage("assistant", answer, trace.trace_id, final=True))
    return messages


def build_chat(
    traces: Sequence[tuple[TraceData, AgentTrace]],
    missing: Sequence[str] = (),
) -> Chat:
    """The chat of one conversation's traces (any order: shown oldest first). The first
    trace's replayed history comes first, as ``history`` messages."""
    ordered = sorted(traces, key=lambda pair: (pair[1].start_unix_nano, pair[1].trace_id))
    messages: list[ChatMessage] = []
    if ordered:
        first = ordered[0][1]
        messages += [ChatMessage("history", text, first.trace_id) for text in first.history]
    for data, trace in ordered:
        messages += _trace_messages(data, trace)
    conversation = next((t.conversation_id for _, t in ordered if t.conversation_id), None)
    return Chat(
        tuple(messages),
        tuple(t.trace_id for _, t in ordered),
        tuple(missing),
        conversation,
    )
