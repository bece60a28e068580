"""Issue 23 rule 8: traces of one conversation are linked, by id or by history continuity."""

from __future__ import annotations

from tracegrade.normalize.conversations import conversations, group_conversations, turn_index
from tracegrade.trace import AgentTrace


def _trace(trace_id, start, inputs, history=(), conversation_id=None):
    return AgentTrace(
        trace_id=trace_id,
        user_inputs=tuple(inputs),
        final_output="ok",
        llm_calls=(),
        tool_calls=(),
        history=tuple(history),
        conversation_id=conversation_id,
        start_unix_nano=start,
    )


def test_traces_with_one_conversation_id_are_one_conversation():
    a = _trace("a", 1, ["hi"], conversation_id="c1")
    b = _trace("b", 2, ["more"], ["hi"], conversation_id="c1")
    c = _trace("c", 3, ["other"], conversation_id="c2")
    keys = group_conversations([c, b, a])
    assert keys["a"] == keys["b"] == "id:c1" and keys["c"] == "id:c2"


def test_history_continuity_links_traces_without_an_id():
    first = _trace("a", 1, ["What is the status of order D400?"])
    second = _trace("b", 2, ["Which carrier?"], ["What is the status of order D400?"])
    third = _trace(
        "c", 3, ["And the price?"], ["What is the status of order D400?", "Which carrier?"]
    )
    stranger = _trace("d", 4, ["Hello"])
    keys = group_conversations([first, second, third, stranger])
    assert keys["a"] == keys["b"] == keys["c"] == "trace:a"
    assert keys["d"] == "trace:d"
    assert [[t.trace_id for t in g] for g in conversations([stranger, third, first, second])] == [
        ["a", "b", "c"],
        ["d"],
    ]
    assert turn_index(keys, [first, second, third, stranger]) == {"a": 0, "b": 1, "c": 2, "d": 0}


def test_a_history_that_matches_no_earlier_trace_starts_its_own_conversation():
    orphan = _trace("b", 2, ["Which carrier?"], ["a turn we never saw"])
    assert group_conversations([_trace("a", 1, ["hi"]), orphan])["b"] == "trace:b"
