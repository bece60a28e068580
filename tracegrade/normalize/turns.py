"""Where each user turn starts, and what its first LLM call was given of the conversation.

Every chat loop sends the model the conversation so far, ending with the latest user message
(then tool results, within a turn). A call whose last user message is one not seen before (by
text and position in the request) starts a user turn; the user messages before it in that
call's input are the turn's *history*. After an agent restart, an agent that kept its thread
replays the earlier turns there, one that lost it sends the new message alone
(:mod:`tracegrade.scoring.context` checks it).

Only the top agent's LLM calls count (a sub-agent's delegated task is not a user turn); calls
that record no input messages (content capture off) are skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrade.normalize.messages import Message
from tracegrade.normalize.view import SpanView
from tracegrade.trace import TurnStart


def _last_user(messages: Sequence[Message]) -> tuple[int, int, str] | None:
    """(index, position, text) of the last user message with text, walking from the end."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and message.text:
            position = index if message.position is None else message.position
            return index, position, message.text
    return None


def turn_starts(calls: Sequence[SpanView], scoped: Sequence[SpanView]) -> tuple[TurnStart, ...]:
    """The turn starts among ``scoped`` (the top agent's LLM calls, a subset of ``calls``,
    both in causal order); each ``llm_call_index`` is an index into ``calls``."""
    index_of = {id(view): i for i, view in enumerate(calls)}
    seen: set[tuple[int, str]] = set()
    found: list[TurnStart] = []
    for view in scoped:
        last = _last_user(view.input_messages or ())
        if last is None or (last[1], last[2]) in seen:
            continue
        seen.add((last[1], last[2]))
        messages = view.input_messages or ()
        history = tuple(m.text for m in messages[: last[0]] if m.role == "user" and m.text)
        found.append(TurnStart(last[2], index_of[id(view)], history))
    return tuple(found)
