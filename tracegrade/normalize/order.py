"""The order of a trace's LLM calls: causal first, time only to break real ties.

Start times cannot be trusted to order calls: the OpenTelemetry JavaScript SDK records
millisecond start times with sub-millisecond durations, so an LLM call, the tool it asked
for and the next LLM call can all start in the same millisecond, and sorting by (start, end)
puts the shorter second call first. So LLM call A comes before LLM call B when the trace says
B followed from A:

- **history**: B's input history holds A's response at the position right after A's own
  input (the growing message history every chat loop replays);
- **tool call ids**: B runs inside a tool span executing a call A requested (an agent used
  as a tool), or B's input holds the result of a call A requested (ids requested by more
  than one call are not used: they repeat within some conversations).

Calls are then sorted topologically, earliest (start, end) first among those free to go.
Two calls that start at the same time with no causal path between them in either direction
are *ambiguous*: their order is a guess, reported as a gap by :mod:`.gaps`.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field

from tracegrade.normalize.messages import Message
from tracegrade.normalize.prefixes import Resumable
from tracegrade.normalize.tree import SpanTree
from tracegrade.normalize.view import SpanView


@dataclass
class Ordering:
    """LLM call views in causal order, and the groups of calls whose order is a guess."""

    calls: list[SpanView]
    ambiguous: list[list[SpanView]] = field(default_factory=list)


def _history_length(messages: Sequence[Message]) -> int:
    """One more than the largest position in the request (the recorded index, else the list
    index); 0 for no messages. Positions grow along a request, so the last is the largest."""
    if not messages:
        return 0
    last = messages[-1]
    return (len(messages) - 1 if last.position is None else last.position) + 1


def _same_response(replayed: Message, output: Message) -> bool:
    if output.tool_calls:
        ids = [p.id for p in output.tool_calls]
        names = [p.name for p in output.tool_calls]
        return [p.id for p in replayed.tool_calls] == ids and (
            any(ids) or [p.name for p in replayed.tool_calls] == names
        )
    return replayed.role == "assistant" and bool(output.text) and replayed.text == output.text


def _response(view: SpanView) -> Message | None:
    return next((m for m in view.output_messages or () if m.role == "assistant"), None)


def _history_edges(calls: Sequence[SpanView], after: dict[int, set[int]]) -> None:
    """i -> j when j's input holds i's response right after i's input (see module doc); only
    the latest such i per j: the earlier ones reach j through it (histories grow)."""
    responses = [_response(view) for view in calls]
    by_length: dict[int, list[int]] = {}
    for i, view in enumerate(calls):
        if view.input_messages is not None and responses[i] is not None:
            by_length.setdefault(_history_length(view.input_messages), []).append(i)
    for j, later in enumerate(calls):
        history = later.input_messages or ()
        for index in range(len(history) - 1, -1, -1):  # from the end: no list of the whole
            message = history[index]
            position = index if message.position is None else message.position
            earlier = [
                i
                for i in by_length.get(position, ())
                if i != j and _same_response(message, responses[i])  # type: ignore[arg-type]
            ]
            if earlier:
                after[earlier[0]].add(j)
                break


def _requesters(calls: Sequence[SpanView]) -> dict[str, int]:
    """Tool call id -> the call that requested it, for ids requested exactly once (ids can
    repeat within a conversation: tau-bench)."""
    requested: dict[str, list[int]] = {}
    for i, view in enumerate(calls):
        for message in view.output_messages or ():
            for part in message.tool_calls:
                if part.id:
                    requested.setdefault(part.id, []).append(i)
    return {call_id: found[0] for call_id, found in requested.items() if len(set(found)) == 1}


def _tool_edges(tree: SpanTree, calls: Sequence[SpanView], after: dict[int, set[int]]) -> None:
    """i -> j when j runs inside a tool span executing a call i requested, or j's input
    holds the result of a call i requested."""
    requester = _requesters(calls)
    if not requester:
        return
    walks: Resumable[list[str | None]] = Resumable(list)
    for j, later in enumerate(calls):
        ids = [a.tool_call_id for a in tree.lineage(later) if a.role == "tool"]
        ids += _response_ids(later.input_messages or (), walks)
        for call_id in ids:
            i = requester.get(call_id or "")
            if i is not None and i != j:
                after[i].add(j)


def _response_ids(
    history: Sequence[Message], walks: Resumable[list[str | None]]
) -> list[str | None]:
    """The call ids of the tool results in ``history``, resuming from a remembered prefix (a
    replayed history's earlier results were collected by the walk of that prefix)."""
    start, ids = walks.resume(history) or (0, [])
    for index in range(start, len(history)):
        ids.extend(p.id for p in history[index].tool_responses)
    walks.remember(history, ids)
    return ids


def _edges(tree: SpanTree, calls: Sequence[SpanView]) -> dict[int, set[int]]:
    """``i -> {j}``: call i comes before call j."""
    after: dict[int, set[int]] = {i: set() for i in range(len(calls))}
    _history_edges(calls, after)
    _tool_edges(tree, calls, after)
    return after


def _time_key(view: SpanView, index: int) -> tuple[int, int, int]:
    return (view.span.start_unix_nano, view.span.end_unix_nano, index)


def _topological(calls: Sequence[SpanView], after: dict[int, set[int]]) -> list[int]:
    """Kahn's algorithm, earliest (start, end) first; on a cycle the rest go in time order."""
    incoming = {j: 0 for j in after}
    for targets in after.values():
        for j in targets:
            incoming[j] += 1
    ready = [_time_key(calls[i], i) for i, n in incoming.items() if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)[2]
        order.append(i)
        for j in after[i]:
            incoming[j] -= 1
            if incoming[j] == 0:
                heapq.heappush(ready, _time_key(calls[j], j))
    placed = set(order)
    rest = sorted((i for i in after if i not in placed), key=lambda i: _time_key(calls[i], i))
    return order + rest


def _reachable(after: dict[int, set[int]], start: int) -> set[int]:
    seen: set[int] = set()
    stack = list(after[start])
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(after[node])
    return seen


def _ambiguous(
    calls: Sequence[SpanView], order: list[int], after: dict[int, set[int]]
) -> list[list[SpanView]]:
    """Groups of calls with one start time and no causal path between two of them."""
    by_start: dict[int, list[int]] = {}
    for i in order:
        by_start.setdefault(calls[i].span.start_unix_nano, []).append(i)
    reach: dict[int, set[int]] = {}

    def ordered(i: int, j: int) -> bool:
        for a, b in ((i, j), (j, i)):
            if b in after[a]:
                return True
            if a not in reach:
                reach[a] = _reachable(after, a)
            if b in reach[a]:
                return True
        return False

    groups = []
    for members in by_start.values():
        unordered = {i for i in members for j in members if i != j and not ordered(i, j)}
        if unordered:
            groups.append([calls[i] for i in members if i in unordered])
    return groups


def causal_order(tree: SpanTree, calls: Sequence[SpanView]) -> Ordering:
    """``calls`` in causal order (see the module docstring)."""
    after = _edges(tree, calls)
    order = _topological(calls, after)
    return Ordering([calls[i] for i in order], _ambiguous(calls, order, after))
