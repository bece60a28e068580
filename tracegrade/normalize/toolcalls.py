"""Tool calls: join what the model asked for with what was executed, counting each once.

A tool call can be seen in three places: as a ``tool_call`` part in an LLM response (the
*request*: id, name, arguments), as a tool span (the *execution*: timing, status, often
arguments and result), and as a ``tool_call_response`` in a later LLM request's history (the
*result*). This module joins them:

1. **Requests** come from every LLM call's output messages, in call order.
2. **Results from histories**: within one message history, a tool result belongs to the most
   recent open call with its id (tau-bench repeats ids, so position matters); the k-th
   occurrence of an id in a history is the k-th request with that id in the trace.
   A result whose call is not in its history (the request was dropped from it, or the ids
   disagree, or the tool-message event hangs off a tool span) is paired trace-wide, by id and
   else by order (:func:`~.results.pair_loose_results`).
3. **Execution spans** join requests in time order: by call id when the span has one (Agent
   Framework's ``"unknown"`` is none), otherwise by tool name and order (Traceloop ``@tool``,
   OpenAI Agents bridges); among several candidates, the one with the span's name and
   arguments (spans starting in the same millisecond can be listed out of order). A request
   is only joined to a span that starts after its LLM call started. Unjoined spans and
   unjoined requests are tool calls of their own. Calls are listed turn by turn (the
   requesting LLM call's causal index, :mod:`.order`), by start time within a turn.

Errors: a tool span with status ERROR, ``error.type`` or an exception event, or a result that
reports an error (``Error: ...``, ``Error executing tool: ...``, a JSON object with a
non-empty ``error``, MCP's ``isError: true``) makes the call *attempted but not performed*.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.normalize.arguments import agrees, reconcile
from tracegrade.normalize.messages import Message, as_int
from tracegrade.normalize.prefixes import Resumable
from tracegrade.normalize.results import (
    LooseResult,
    choose_result,
    consistent_result,
    pair_loose_results,
)
from tracegrade.normalize.tree import SpanTree
from tracegrade.normalize.view import SpanView
from tracegrade.spans import json_loads
from tracegrade.trace import ToolCall

Key = tuple[str, str]
"""How calls are matched across places: ``("id", call_id)``, else ``("name", tool_name)``."""


@dataclass
class Request:
    """A tool call requested in an LLM response."""

    llm_index: int
    position: int
    llm: SpanView
    call_id: str | None
    name: str
    arguments: Any
    arguments_recorded: bool = True
    occurrence: tuple[Key, int] | None = None


def _key(call_id: str | None, name: str | None) -> Key | None:
    if call_id:
        return ("id", call_id)
    return ("name", name) if name else None


def requests_of(llm_views: Sequence[SpanView]) -> list[Request]:
    """Every tool call requested by the LLM calls, numbered by occurrence of its key."""
    requests: list[Request] = []
    counts: Counter[Key] = Counter()
    for index, view in enumerate(llm_views):
        position = 0
        for message in view.output_messages or ():
            for part in message.tool_calls:
                request = Request(
                    index,
                    position,
                    view,
                    part.id or None,
                    part.name or "",
                    part.arguments,
                    part.arguments_recorded,
                )
                key = _key(request.call_id, request.name)
                if key is not None:
                    counts[key] += 1
                    request.occurrence = (key, counts[key])
                requests.append(request)
                position += 1
    return requests


def results_from_histories(
    histories: Iterable[Sequence[Message]], owners: Sequence[int | None] = ()
) -> tuple[dict[tuple[Key, int], str | None], list[LooseResult]]:
    """Tool results keyed by (call key, occurrence) from message histories (see module doc),
    and the results whose call is not in their history (:class:`LooseResult`, in order).
    ``owners[k]`` is the index of the LLM call whose input history ``k`` is, if any.

    A history that extends an earlier one resumes its walk (:mod:`.prefixes`): walking the
    replayed prefix again would only find the same results and loose results, which the
    first walk already recorded (the first record of each wins)."""
    results: dict[tuple[Key, int], str | None] = {}
    loose: dict[tuple[int, str | None, str | None], LooseResult] = {}
    walks: Resumable[_Walk] = Resumable(_copy_walk)
    for number, history in enumerate(histories):
        owner = owners[number] if number < len(owners) else None
        start, (counts, open_calls) = walks.resume(history) or (0, (Counter(), []))
        for index in range(start, len(history)):
            message = history[index]
            for part in message.tool_calls:
                key = _key(part.id, part.name)
                if key is not None:
                    counts[key] += 1
                    open_calls.append((key, counts[key]))
            for part in message.tool_responses:
                match = _close(open_calls, _key(part.id, None), _key(None, part.name))
                if match is not None:
                    results.setdefault(match, part.response)
                else:  # replays repeat it at the same position: keep one
                    position = index if message.position is None else message.position
                    loose.setdefault(
                        (position, part.id, part.response),
                        LooseResult(part.id, part.response, owner),
                    )
        walks.remember(history, (counts, open_calls))
    return results, list(loose.values())


_Walk = tuple[Counter[Key], list[tuple[Key, int]]]
"""A history walk's state: occurrences of each key so far, and the calls still open."""


def _copy_walk(walk: _Walk) -> _Walk:
    return Counter(walk[0]), list(walk[1])


def _close(open_calls: list[tuple[Key, int]], *keys: Key | None) -> tuple[Key, int] | None:
    """Pop the open call a result answers: by id, the most recent open call with it (ids
    repeat across turns: tau-bench); by name, the earliest open call of that name; with
    neither, the earliest open call. Results come back in the order of their calls, so
    pairing by recency would reverse parallel calls."""
    id_key, name_key = keys
    if id_key is not None:
        for i in range(len(open_calls) - 1, -1, -1):
            if open_calls[i][0] == id_key:
                return open_calls.pop(i)
    if name_key is not None:
        for i, (key, _) in enumerate(open_calls):
            if key == name_key:
                return open_calls.pop(i)
    return open_calls.pop(0) if open_calls and id_key is None and name_key is None else None


# --- errors ------------------------------------------------------------------------------------


LOGFIRE_ERROR_LEVEL = 17
"""Logfire's ``logfire.level_num`` for ``error``: pydantic-ai marks a failed or retried tool so."""


def span_error(view: SpanView) -> str | None:
    """Why a span failed: its status message, ``error.type``, its exception event, or a
    Logfire error level."""
    span = view.span
    error_type = span.attributes.get("error.type")
    if view.tool_error:
        return view.tool_error
    level = as_int(span.attributes.get("logfire.level_num"))
    logfire_error = level is not None and level >= LOGFIRE_ERROR_LEVEL
    if not span.is_error and not error_type and not logfire_error:
        return None
    for event in span.events:
        if event.name == "exception":
            message = event.attributes.get("exception.message") or event.attributes.get(
                "exception.type"
            )
            if message:
                return str(message)
    if span.status_message or error_type:
        return span.status_message or str(error_type)
    return "span status ERROR" if span.is_error else f"logfire.level_num {level} (error)"


_ERROR_HEAD = re.compile(r"(?:error|exception|failed|failure)\b[^\n:]{0,60}:", re.IGNORECASE)
"""A result that opens by saying it failed: ``Error: ...``, ``Error executing tool: ...``
(CrewAI, the MCP client), ``Failed to invoke tool ...: ...``, ``Exception: ...``."""


def result_error(result: str | None) -> str | None:
    """The error a tool result reports, if it reports one (see the module docstring)."""
    if not result:
        return None
    text = result.strip()
    if _ERROR_HEAD.match(text):
        return text
    if text[:1] == "{" and ('"error"' in text or "rror" in text[:200]):
        try:
            value = json_loads(text)
        except json.JSONDecodeError:
            return None
        if isinstance(value, Mapping):
            if value.get("isError") is True or value.get("is_error") is True:
                return text
            error = value.get("error")
            if error and (len(value) <= 3 or value.get("status") == "error"):
                return error if isinstance(error, str) else json.dumps(error)
    return None


_TOOL_NAME = re.compile(r"[\w.:/-]{1,128}")
"""What a tool's name looks like: function names are identifiers (OpenAI: ``[A-Za-z0-9_-]``,
MCP adds ``.``, ``/``)."""


def is_aggregate(view: SpanView) -> bool:
    """True for a tool span that stands for several calls, not one: its name is no tool's
    name (Google ADK's ``execute_tool (merged)`` span, ``gen_ai.tool.name = "(merged
    tools)"``, around parallel calls). Only spans no request matched are asked."""
    name = view.tool_name or view.span.name
    return _TOOL_NAME.fullmatch(name) is None


# --- one operation, one record -------------------------------------------------------------------


_TOOL_FIELDS = ("tool_call_id", "tool_arguments", "tool_result", "tool_error")


def _same_call(outer: SpanView, inner: SpanView) -> bool:
    """True when a tool span inside another records the same call: the same call id, or the
    same name with arguments that agree (or not recorded on one side)."""
    if outer.tool_call_id and inner.tool_call_id:
        return outer.tool_call_id == inner.tool_call_id
    if not outer.tool_name or outer.tool_name != inner.tool_name:
        return False
    if outer.has_arguments and inner.has_arguments:
        return agrees(inner.arguments, outer.arguments) or agrees(outer.arguments, inner.arguments)
    return True


def _deep_tools(tools: list[SpanView], tree: SpanTree) -> bool:
    """True when some tool span sits below another with spans between them (MCP: the
    client's request span between the agent's tool span and the server's)."""
    ids = {v.span.span_id for v in tools}
    return any(
        v.span.parent_span_id not in ids and any(a.span.span_id in ids for a in tree.lineage(v))
        for v in tools
    )


def merge_nested_tools(tree: SpanTree) -> list[SpanView]:
    """The trace's tool spans, one per tool call: a tool span inside another of the same
    call (a tool served over MCP: the server's ``execute_tool`` span inside the agent's tool
    span; a framework's tool span around the instrumentation's) is merged into the outer one,
    which keeps the call's timing and takes what it lacks (id, arguments, result, error)."""
    tools = [v for v in tree.views if v.role == "tool"]
    parents = {v.span.parent_span_id for v in tools}
    if not any(v.span.span_id in parents for v in tools) and not _deep_tools(tools, tree):
        return tools  # no tool span has a tool span below it
    dropped: set[int] = set()
    for view in tools:
        outer = next((a for a in tree.lineage(view) if a.role == "tool"), None)
        if outer is None or not _same_call(outer, view):
            continue
        while id(outer) in dropped:  # merged into its own outer span already
            outer = next(a for a in tree.lineage(outer) if a.role == "tool")
        for name in _TOOL_FIELDS:
            if outer.is_empty(name) and not view.is_empty(name):
                setattr(outer, name, getattr(view, name))
                outer.origins[name] = view.origins.get(name, "")
        error = span_error(view)
        if error and not span_error(outer):  # the server failed the call (MCP isError)
            outer.tool_error = error
            outer.origins["tool_error"] = f"status of {view.span.name}"
        dropped.add(id(view))
    return [v for v in tools if id(v) not in dropped]


# --- joining -----------------------------------------------------------------------------------


@dataclass
class Joiner:
    """Joins tool spans with requests for one trace (see the module docstring)."""

    tree: SpanTree
    llm_views: Sequence[SpanView]
    histories: Sequence[Sequence[Message]]
    calls: list[tuple[tuple[int, int, int], ToolCall]] = field(default_factory=list)

    def run(self) -> list[ToolCall]:
        requests = requests_of(self.llm_views)
        owner_of = {id(v.input_messages): i for i, v in enumerate(self.llm_views)}
        owners = [owner_of.get(id(history)) for history in self.histories]
        results, loose = results_from_histories(self.histories, owners)
        unmatched = list(requests)
        executed: dict[tuple[int, int], int] = {}
        tool_views = merge_nested_tools(self.tree)
        for sequence, view in enumerate(tool_views):
            request = self._match(view, unmatched)
            if request is None and is_aggregate(view):
                continue
            if request is not None:
                unmatched.remove(request)
                executed[(request.llm_index, request.position)] = view.span.start_unix_nano
            self.calls.append(
                ((view.span.start_unix_nano, 0, sequence), self._from_span(view, request, results))
            )
        for request in unmatched:
            self.calls.append(
                (self._position(request, executed), self._from_request(request, results))
            )
        ordered = [call for _, call in sorted(self.calls, key=_execution_key)]
        return pair_loose_results(ordered, loose)

    @staticmethod
    def _position(request: Request, executed: dict[tuple[int, int], int]) -> tuple[int, int, int]:
        """Sort key of a call seen only in a response: after its LLM call ended and after the
        executions of the calls requested before it in the same response."""
        earlier = [
            start
            for (llm, position), start in executed.items()
            if llm == request.llm_index and position < request.position
        ]
        return (max([request.llm.span.end_unix_nano, *earlier]), 1, request.position)

    def _match(self, view: SpanView, unmatched: list[Request]) -> Request | None:
        """The request a tool span executes: by call id, else by name; among several, the
        first with the span's name and arguments (spans starting in the same millisecond may
        be listed out of order, and ids repeat), else the first."""
        start = view.span.start_unix_nano
        candidates = [r for r in unmatched if r.llm.span.start_unix_nano <= start]
        name = view.tool_name
        by_id = [r for r in candidates if view.tool_call_id and r.call_id == view.tool_call_id]
        matches = by_id or [r for r in candidates if name and r.name == name]

        def fit(request: Request) -> tuple[bool, bool]:
            same_arguments = (
                view.has_arguments
                and request.arguments_recorded
                and agrees(view.arguments, request.arguments)
            )
            return (bool(name) and request.name != name, not same_arguments)

        return min(matches, key=fit) if matches else None

    def _agent(self, *views: SpanView) -> SpanView | None:
        for view in views:
            agent = self.tree.agent_of(view)
            if agent is not None:
                return agent
        return None

    def _llm_index_before(self, start: int) -> int | None:
        index = None
        for i, llm in enumerate(self.llm_views):
            if llm.span.start_unix_nano <= start:
                index = i
        return index

    def _from_span(
        self, view: SpanView, request: Request | None, results: Mapping[Any, str | None]
    ) -> ToolCall:
        history_result = results.get(request.occurrence) if request and request.occurrence else None
        span_result = consistent_result(view.tool_result, history_result)
        result, unavailable = choose_result(span_result, history_result)
        arguments, has_arguments, mismatch = reconcile(
            view.arguments,
            view.has_arguments,
            request.arguments if request else None,
            request is not None and request.arguments_recorded,
        )
        span = view.span
        agent = self._agent(view, *([request.llm] if request else []))
        return ToolCall(
            name=view.tool_name or (request.name if request else "") or span.name,
            call_id=view.tool_call_id or (request.call_id if request else None),
            arguments=arguments,
            arguments_recorded=has_arguments,
            result=result,
            error=span_error(view) or result_error(result),
            span_id=span.span_id,
            start_unix_nano=span.start_unix_nano,
            duration_ms=span.duration_ms,
            llm_call_index=request.llm_index
            if request
            else self._llm_index_before(span.start_unix_nano),
            agent=agent.agent_name if agent else None,
            agent_span_id=agent.span.span_id if agent else None,
            source="span+message" if request else "span",
            result_unavailable=unavailable,
            arguments_mismatch=mismatch,
        )

    def _from_request(self, request: Request, results: Mapping[Any, str | None]) -> ToolCall:
        result, unavailable = choose_result(
            results.get(request.occurrence) if request.occurrence else None
        )
        agent = self._agent(request.llm)
        return ToolCall(
            name=request.name,
            call_id=request.call_id,
            arguments=request.arguments,
            arguments_recorded=request.arguments_recorded,
            result=result,
            error=result_error(result),
            llm_call_index=request.llm_index,
            agent=agent.agent_name if agent else None,
            agent_span_id=agent.span.span_id if agent else None,
            source="message",
            result_unavailable=unavailable,
        )


def _execution_key(item: tuple[tuple[int, int, int], ToolCall]) -> tuple[int, int, int, int]:
    """Calls requested by an earlier LLM call (in causal order) ran first; within one turn,
    by start time (``Joiner.calls`` keys)."""
    turn = item[1].llm_call_index
    return (-1 if turn is None else turn, *item[0])


def join_tool_calls(
    tree: SpanTree, llm_views: Sequence[SpanView], histories: Sequence[Sequence[Message]]
) -> list[ToolCall]:
    """The trace's tool calls in execution order (see the module docstring)."""
    return Joiner(tree, llm_views, histories).run()
