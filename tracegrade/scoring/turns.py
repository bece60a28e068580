"""Multi-turn cases against conversations recorded one trace per turn.

Every agent framework we record makes each user turn its own trace (the first LLM call of
turn 2 replays turn 1 as :attr:`~tracegrade.trace.AgentTrace.history`). A case with
``turns`` then matches no single trace: turn 1's trace has only the first input, turn 2's
starts with the second. This is the fourth matching rule (after the case id attribute, the
explicit mapping, and the first user input of one trace; see
:mod:`tracegrade.scoring.evaluation`):

4. a trace that is *a turn of* a multi-turn case (:func:`turn_of`: its conversation starts
   with the case's input, yet the trace alone does not hold every turn) is held; once every
   trace is seen, the held traces of a case are grouped into conversations
   (:func:`~tracegrade.normalize.conversations.conversations`: by conversation id, else by
   history continuity), each conversation is merged into one trace
   (:func:`~tracegrade.normalize.conversations.merge_traces`), and a merged conversation
   whose user inputs start with the case's turns is scored against the case, as one result
   named by its first trace's id.

The rule applies only to a case no earlier rule matched, so runs labelled with
``tracegrade.case_id`` (``tracegrade run`` merges those by case id itself) are unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrade.dataset import Case
from tracegrade.dataset.placeholders import same_message
from tracegrade.normalize.conversations import conversations, merge_traces
from tracegrade.trace import AgentTrace

__all__ = ["conversation_opener", "joined_conversations", "turn_of"]


def _normalized(text: str | None) -> str:
    return " ".join((text or "").split())


def conversation_opener(trace: AgentTrace) -> str | None:
    """The first user message of the trace's conversation (whitespace-normalised): the first
    turn of its history, else its first user input; None without either."""
    first = trace.history[:1] or trace.user_inputs[:1]
    return _normalized(first[0]) if first else None


def follows_turns(trace: AgentTrace, case: Case) -> bool:
    """Whether the trace's user inputs start with the case's ``turns`` (whitespace-normalised,
    a placeholder of redacted data any text: :func:`~tracegrade.dataset.placeholders.
    same_message`; true for a case without turns)."""
    turns = case.turns or ()
    seen = trace.user_inputs[: len(turns)]
    return len(seen) == len(turns) and all(map(same_message, turns, seen))


def turn_of(trace: AgentTrace, case: Case) -> bool:
    """Whether ``trace`` is one turn of ``case``'s conversation but not all of it: the case has
    two turns or more, the trace's conversation opens with the case's input, and the trace's
    own user inputs do not already follow every turn."""
    if len(case.turns or ()) < 2 or not (trace.history or trace.user_inputs):
        return False
    return same_message(case.input, conversation_opener(trace)) and not (
        not trace.history and follows_turns(trace, case)
    )


def joined_conversations(
    case: Case, traces: Sequence[AgentTrace]
) -> list[tuple[AgentTrace, list[str]]]:
    """The conversations of ``traces`` (turns of ``case``, any order) merged into one trace
    each, oldest first, keeping those whose user inputs follow the case's turns; each with
    the ids of the traces merged into it."""
    groups = [(merge_traces(group), [t.trace_id for t in group]) for group in conversations(traces)]
    return [(merged, ids) for merged, ids in groups if follows_turns(merged, case)]
