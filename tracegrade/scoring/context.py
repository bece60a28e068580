"""Context preserved: did the conversation survive an agent revival?

A case with ``revive`` has ``tracegrade run`` end the agent's session before those turns and
start it again with the same conversation id (a fresh process, a rebuilt callable, a
restarted service), sending it only the new messages. The agent keeps the conversation only
if it persisted it. ``context_preserved`` checks each revived turn from the trace:

1. the turn's first LLM call (:attr:`~tracegrade.trace.AgentTrace.turn_starts`, matched to
   the case's turn by its text) carries every earlier user message in its history: the
   case's earlier turns and any other turn the trace shows before it (clarification
   follow-ups); or
2. the agent's own memory spans show the missing messages loaded: a tool call's result or a
   retrieved document, between the last LLM call before the turn and the next turn's start,
   contains each of them.

Messages match casefolded with whitespace collapsed, inside the text they are looked for in
(a framework may wrap a message in its prompt template; a JSON result is searched in its
strings). The value is the fraction of revived turns that kept their context; each lost turn
is a hard failure naming the turn and the missing messages.
Skipped for a case without ``revive``, and when the trace cannot tell (message content not
recorded, or no LLM call given the turn's message). A simulated user's conversation is checked
on the messages it sent (``tracegrade run`` scores it with those as the case's turns), on the
revived turns it reached.

**Every turn of a conversation** (``every_turn``, what ``score --follow --sessions`` scores a
whole production conversation with, no case needed): each turn after the first must have
kept the earlier ones the same way, whether or not the agent was revived; the value is the
fraction of those turns that did, and each lost turn is a hard failure.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.scoring.registry import register
from tracegrade.scoring.score import Score, skipped
from tracegrade.scoring.text import normalize
from tracegrade.trace import AgentTrace, TurnStart

NAME = "context_preserved"
_QUOTED_CHARS = 80


def _has(texts: Sequence[str], message: str) -> bool:
    """True when one of ``texts`` contains ``message`` (normalised)."""
    needle = normalize(message)
    return any(needle in normalize(text) for text in texts)


def _strings(text: str) -> str:
    """A JSON document's strings on their own lines (escapes undone), else ``text``."""
    try:
        value = json.loads(text)
    except ValueError:
        return text
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return "\n".join(reversed(found)) if found else text


def _quoted(text: str) -> str:
    return repr(text if len(text) <= _QUOTED_CHARS else text[: _QUOTED_CHARS - 1] + "…")


def match_turns(trace: AgentTrace, turns: Sequence[str]) -> list[int | None]:
    """For each case turn, the index in ``trace.turn_starts`` of the first turn start after
    the previous turn's that was given its message (None when none was)."""
    found: list[int | None] = []
    position = 0
    for turn in turns:
        index = next(
            (
                i
                for i in range(position, len(trace.turn_starts))
                if _has([trace.turn_starts[i].user_input], turn)
            ),
            None,
        )
        found.append(index)
        position = position if index is None else index + 1
    return found


def _window(trace: AgentTrace, starts: Sequence[TurnStart], index: int) -> tuple[float, float]:
    """(from, to) unix ns: from the end of the last LLM call before turn start ``index`` to
    the start of the next turn's first LLM call."""
    call = starts[index].llm_call_index
    before = trace.llm_calls[call - 1] if call > 0 else None
    after = trace.llm_calls[starts[index + 1].llm_call_index] if index + 1 < len(starts) else None
    begin = before.start_unix_nano + before.duration_ms * 1e6 if before else float("-inf")
    return begin, after.start_unix_nano if after else float("inf")


def loaded_texts(trace: AgentTrace, index: int) -> list[tuple[str, str]]:
    """``(source, text)`` of the tool results and retrieved documents in turn start
    ``index``'s window (:func:`_window`): what the agent's memory spans returned."""
    begin, end = _window(trace, trace.turn_starts, index)
    found = [
        (f"tool {c.name}", _strings(c.result))
        for c in trace.tool_calls
        if c.result and c.start_unix_nano is not None and begin <= c.start_unix_nano < end
    ]
    found += [
        (f"retrieval {r.name or r.span_id}", d.content)
        for r in trace.retrievals
        if begin <= r.start_unix_nano < end
        for d in r.documents
        if d.content
    ]
    return found


def check_turn(
    trace: AgentTrace, index: int, turns_before: Sequence[str]
) -> tuple[list[str], list[str]]:
    """(earlier user messages missing from turn start ``index``'s history and from what its
    memory spans loaded, the memory spans that loaded any of them). The earlier messages are those
    of the turn starts before it (follow-ups included) and the case's ``turns_before`` (so a
    trace holding only the revived turn is still held to them)."""
    start = trace.turn_starts[index]
    earlier = [s.user_input for s in trace.turn_starts[:index]]
    earlier += [t for t in turns_before if not _has(earlier, t)]
    missing = [m for m in earlier if not _has(start.history, m)]
    if not missing:
        return [], []
    loaded = loaded_texts(trace, index)
    loaded_by = [span for span, text in loaded if any(_has([text], m) for m in missing)]
    return [m for m in missing if not any(_has([text], m) for _, text in loaded)], loaded_by


@dataclass(frozen=True)
class ContextPreserved:
    """Each revived turn's agent still had the earlier turns (see the module docstring);
    with ``every_turn``, each turn of a conversation after its first, case or not."""

    name: str = NAME
    every_turn: bool = False

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        if self.every_turn and (case is None or not case.revived_turns):
            return self._every_turn(trace)
        if case is None or not case.revived_turns:
            return skipped(self.name, "the case asks for no agent revival")
        turns = case.turns or []
        revived = [n for n in case.revived_turns if n <= len(turns)]
        if not revived:  # a simulated conversation that ended before its revived turn
            return skipped(self.name, "the conversation ended before a revived turn")
        if not trace.turn_starts:
            gap = trace.gap("message_content") or trace.gap("user_inputs")
            why = gap.reason if gap else "no LLM call records its input messages"
            return skipped(self.name, f"cannot tell: {why}")
        matched = match_turns(trace, turns)
        unseen = [n for n in revived if matched[n - 1] is None]
        if unseen:
            texts = ", ".join(f"turn {n} ({_quoted(turns[n - 1])})" for n in unseen)
            return skipped(self.name, f"cannot tell: no LLM call was given {texts}")
        return self._verdict(trace, revived, turns, matched)

    def _verdict(
        self,
        trace: AgentTrace,
        revived: Sequence[int],
        turns: Sequence[str],
        matched: list[int | None],
    ) -> Score:
        lost: list[dict[str, Any]] = []
        loaded: dict[int, list[str]] = {}
        for number in revived:
            index = matched[number - 1]
            assert index is not None
            missing, loaded_by = check_turn(trace, index, turns[: number - 1])
            if missing:
                lost.append({"turn": number, "message": turns[number - 1], "missing": missing})
            elif loaded_by:
                loaded[number] = loaded_by
        hard = tuple(
            f"context lost after the agent was revived before turn {item['turn']} "
            f"({_quoted(item['message'])}): its first LLM call lacked "
            + ", ".join(_quoted(m) for m in item["missing"])
            for item in lost
        )
        kept = len(revived) - len(lost)
        reason = "; ".join(hard) or (
            f"{kept} revived turn(s) kept the earlier turns"
            + (f" (loaded by {sorted({s for v in loaded.values() for s in v})})" if loaded else "")
        )
        details = {"revived_turns": list(revived), "lost": lost, "loaded_by": loaded}
        return Score(self.name, kept / len(revived), reason, hard, details)

    def _every_turn(self, trace: AgentTrace) -> Score:
        starts = trace.turn_starts
        if not starts:
            gap = trace.gap("message_content") or trace.gap("user_inputs")
            why = gap.reason if gap else "no LLM call records its input messages"
            return skipped(self.name, f"cannot tell: {why}")
        if len(starts) < 2:
            return skipped(self.name, "a single turn: nothing earlier to keep")
        lost: list[dict[str, Any]] = []
        for index in range(1, len(starts)):
            missing, _ = check_turn(trace, index, ())
            if missing:
                message = starts[index].user_input
                lost.append({"turn": index + 1, "message": message, "missing": missing})
        hard = tuple(
            f"context lost at turn {item['turn']} ({_quoted(item['message'])}): its first LLM "
            "call lacked " + ", ".join(_quoted(m) for m in item["missing"])
            for item in lost
        )
        later = len(starts) - 1
        reason = "; ".join(hard) or f"each of {later} later turn(s) kept the earlier turns"
        details = {"turns": len(starts), "lost": lost}
        return Score(self.name, (later - len(lost)) / later, reason, hard, details)


@register(NAME)
def _context_preserved(config: Config) -> ContextPreserved:
    return ContextPreserved()
