"""Issue 16: walks over replayed histories resume where the walk of their prefix ended.

Every LLM call's input replays the previous call's history; walking each history whole made
result pairing quadratic in the conversation's length. These tests pin that a history which
extends an earlier one walks only its new messages, and that the results are those of
walking every history whole.
"""

from __future__ import annotations

from collections import Counter

from tracegrade.normalize.messages import Message, Part
from tracegrade.normalize.prefixes import Resumable
from tracegrade.normalize.results import LooseResult
from tracegrade.normalize.toolcalls import _close, _key, results_from_histories


class Recording(list):
    """A message list that records which positions were read one by one."""

    def __init__(self, items: list[Message]) -> None:
        super().__init__(items)
        self.read: list[int] = []

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, int):
            self.read.append(index)
        return super().__getitem__(index)

    def __iter__(self):
        for index in range(len(self)):
            yield self[index]


def _call(call_id: str, name: str = "lookup") -> Message:
    return Message("assistant", [Part("tool_call", id=call_id, name=name, arguments={})])


def _result(call_id: str | None, text: str, name: str | None = None) -> Message:
    return Message("tool", [Part("tool_call_response", id=call_id, name=name, response=text)])


def _user(text: str) -> Message:
    return Message("user", [Part("text", content=text)])


def _positioned(messages: list[Message]) -> list[Message]:
    for position, message in enumerate(messages):
        message.position = position
    return messages


def _whole_walks(histories, owners=()):
    """The walk without resumption: every history from its first message."""
    results: dict = {}
    loose: dict = {}
    for number, history in enumerate(histories):
        owner = owners[number] if number < len(owners) else None
        counts: Counter = Counter()
        open_calls: list = []
        for index, message in enumerate(history):
            for part in message.tool_calls:
                key = _key(part.id, part.name)
                if key is not None:
                    counts[key] += 1
                    open_calls.append((key, counts[key]))
            for part in message.tool_responses:
                match = _close(open_calls, _key(part.id, None), _key(None, part.name))
                if match is not None:
                    results.setdefault(match, part.response)
                else:
                    position = index if message.position is None else message.position
                    loose.setdefault(
                        (position, part.id, part.response),
                        LooseResult(part.id, part.response, owner),
                    )
    return results, list(loose.values())


def test_a_history_extending_an_earlier_one_is_walked_from_its_new_messages():
    messages = _positioned([_user("hi"), _call("a"), _result("a", "1"), _call("b")])
    first = Recording(messages[:2])
    second = Recording([*messages, _result("b", "2")])
    results, _ = results_from_histories([first, second])
    assert results == {(("id", "a"), 1): "1", (("id", "b"), 1): "2"}
    assert first.read == [0, 1]
    assert second.read == [2, 3, 4]


def test_a_history_that_differs_early_is_walked_whole():
    first = Recording(_positioned([_user("hi"), _call("a")]))
    second = Recording(_positioned([_user("hello"), _call("a"), _result("a", "1")]))
    results_from_histories([first, second])
    assert second.read == [0, 1, 2]


def test_resumed_walks_find_what_whole_walks_find():
    """Repeated ids, a loose result, interleaved conversations and an equal (not identical)
    replay: the same results and loose results, owners included."""
    one = _positioned([_user("q"), _call("x"), _result("x", "r1"), _call("x"), _result("x", "r2")])
    other = _positioned([_user("z"), _call("n", "find"), _result(None, "found", "find")])
    stray = _positioned([_user("q"), _result("gone", "lost")])
    copy = _positioned([_user("q"), _call("x"), _result("x", "r1"), _call("x"), _result("x", "r2")])
    histories = [one[:2], other[:2], one[:3], other, one, stray, [*stray, _call("y")], copy]
    owners = [0, 1, 2, 3, 4, 5, 6]
    assert results_from_histories(histories, owners) == _whole_walks(histories, owners)


def test_resume_copies_the_state_it_hands_out():
    walks: Resumable[list[int]] = Resumable(list)
    history = [_user("a"), _user("b")]
    walks.remember(history, [1])
    resumed = walks.resume([*history, _user("c")])
    assert resumed == (2, [1])
    resumed[1].append(2)  # type: ignore[index]
    assert walks.resume(history) == (2, [1])
    assert walks.resume([_user("b")]) is None
    assert walks.resume([]) is None


def test_resume_takes_the_longest_remembered_prefix():
    walks: Resumable[str] = Resumable(str)
    a, b, c = _user("a"), _user("b"), _user("c")
    walks.remember([a, b], "ab")
    walks.remember([a], "a")
    walks.remember([a, c], "ac")
    assert walks.resume([a, b, c]) == (2, "ab")
    assert walks.resume([a, c]) == (2, "ac")
