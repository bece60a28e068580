"""From span views to one :class:`~tracegrade.trace.AgentTrace`.

Rules (the reasons are in the field reference, ``span-conventions.md`` section 7):

- **LLM calls**: LLM-role spans in causal order (:mod:`.order`: the growing history and
  parent/child links first, start time only to break real ties); a span that wraps another
  LLM span is a framework wrapper, merged into the inner call and not counted.
- **Tokens**: the sum over LLM calls. Only when no LLM call has usage does the outermost
  agent's aggregated usage count, so usage is never counted twice.
- **User inputs**: the user messages of the top agent's LLM histories, merged in order, when
  they extend what the top agent span says it received; otherwise the agent span's own input.
- **Final output**: the outermost agent/workflow span's recorded output; otherwise the text
  of the last LLM response, unless that response asked for tools; otherwise the argument of
  the last answer-tool call (:mod:`.answers`: ``final_answer``, ``final_output``), which is
  not counted among the tool calls. Without one, :mod:`.gaps` says why.
- **Conversation id**: ``gen_ai.conversation.id``, ``session.id`` or the Traceloop session,
  nearest to the root.
- **Retrievals**: retriever spans in start order, each with the agent that encloses it; a
  retriever span inside another (a framework's retriever wrapping the vector store's) is
  one retrieval, the inner span's, its empty fields filled from the outer one.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrade.attributes import RUNNER_SCOPE
from tracegrade.normalize.answers import answer_of, split_answer_calls
from tracegrade.normalize.gaps import Facts, find_gaps
from tracegrade.normalize.llmcalls import llm_views
from tracegrade.normalize.messages import TOOL_CALLS_FINISH, Message
from tracegrade.normalize.order import causal_order
from tracegrade.normalize.prefixes import Resumable
from tracegrade.normalize.reader import compiled_maps
from tracegrade.normalize.sniff import unread_content
from tracegrade.normalize.toolcalls import join_tool_calls, span_error
from tracegrade.normalize.tree import SpanTree
from tracegrade.normalize.turns import turn_starts
from tracegrade.normalize.view import SpanView
from tracegrade.spans import TraceData
from tracegrade.trace import AgentInfo, AgentTrace, LlmCall, Retrieval, ToolCall


def _finish(view: SpanView) -> str | None:
    """The first finish reason of the span, else of its output messages (streamed responses
    often carry it only there); ``tool_call`` and ``tool_calls`` read as ``tool_calls``."""
    reasons = list(view.finish_reasons) or [
        m.finish_reason for m in view.output_messages or () if m.finish_reason
    ]
    reason = reasons[0] if reasons else None
    return "tool_calls" if reason in TOOL_CALLS_FINISH else reason


def _output_text(messages: Sequence[Message] | None) -> str | None:
    texts = [m.text for m in messages or () if m.role == "assistant" and m.text]
    return "\n".join(texts) if texts else None


def _llm_call(view: SpanView, tree: SpanTree) -> LlmCall:
    agent = tree.agent_of(view)
    return LlmCall(
        span_id=view.span.span_id,
        model=view.model,
        provider=view.provider,
        input_tokens=view.input_tokens,
        output_tokens=view.output_tokens,
        cached_input_tokens=view.cached_input_tokens,
        start_unix_nano=view.span.start_unix_nano,
        duration_ms=view.span.duration_ms,
        finish_reason=_finish(view),
        output_text=_output_text(view.output_messages),
        tool_call_ids=tuple(p.id for m in view.output_messages or () for p in m.tool_calls),
        agent=agent.agent_name if agent else None,
        agent_span_id=agent.span.span_id if agent else None,
        error=span_error(view),
    )


def _retrievals(tree: SpanTree) -> tuple[Retrieval, ...]:
    """The retrievals of the trace (module docstring)."""
    views = [v for v in tree.views if v.role == "retriever"]
    outer = {a.span.span_id for v in views for a in tree.lineage(v) if a.role == "retriever"}
    found = []
    for view in views:
        if view.span.span_id in outer:
            continue
        for ancestor in tree.lineage(view):
            if ancestor.span.span_id in outer:
                view.fill(
                    retrieval_query=ancestor.retrieval_query,
                    documents=ancestor.documents,
                    data_source=ancestor.data_source,
                )
        agent = tree.agent_of(view)
        found.append(
            Retrieval(
                span_id=view.span.span_id,
                query=view.retrieval_query,
                documents=tuple(view.documents or ()),
                name=view.data_source or view.span.name or None,
                start_unix_nano=view.span.start_unix_nano,
                duration_ms=view.span.duration_ms,
                agent=agent.agent_name if agent else None,
                agent_span_id=agent.span.span_id if agent else None,
                error=span_error(view),
                documents_recorded=view.documents is not None,
            )
        )
    return tuple(found)


def _user_texts(messages: Sequence[Message] | None) -> list[str]:
    return [m.text for m in messages or () if m.role == "user" and m.text]


def merge_user_inputs(histories: Sequence[Sequence[Message]]) -> list[str]:
    """The conversation's distinct user turns, in order, from LLM histories in call order.

    Every convention that records the request replays the whole history on each LLM call. A
    history's user turns that repeat the start of the turns merged so far are replays (the
    same conversation, perhaps under another agent's system prompt); so is a turn already seen
    at the same position with the same text. The second rule lines up histories that lost
    their earliest messages (flattened attributes past the SDK's attribute limit keep their
    index), which the first cannot.
    """
    merged: list[str] = []
    seen: set[tuple[int, str]] = set()
    walks: Resumable[_Users] = Resumable(lambda users: (list(users[0]), list(users[1])))
    for history in histories:
        users, texts = _user_turns(history, walks)
        common = len(merged)
        if len(texts) < common or texts[:common] != merged:  # else all merged turns replayed
            common = 0
            while common < min(len(users), len(merged)) and texts[common] == merged[common]:
                common += 1
        merged.extend(text for key in users[common:] if key not in seen for text in [key[1]])
        seen.update(users)
    return merged


_Users = tuple[list[tuple[int, str]], list[str]]
"""A history's user turns as ``(position, text)`` and their texts alone."""


def _user_turns(history: Sequence[Message], walks: Resumable[_Users]) -> _Users:
    """The user turns of ``history``, resuming from a remembered prefix of it."""
    start, (users, texts) = walks.resume(history) or (0, ([], []))
    for index in range(start, len(history)):
        message = history[index]
        if message.role == "user" and message.text:
            users.append((index if message.position is None else message.position, message.text))
            texts.append(message.text)
    walks.remember(history, (users, texts))
    return users, texts


def split_history(
    merged: Sequence[str], first: Sequence[Message] | None
) -> tuple[list[str], list[str]]:
    """``(new user inputs, history)`` of a trace: the user turns its first LLM call replays
    before its last user message are history (earlier turns, earlier traces); the rest,
    from that message on, are new in this trace (module docstring)."""
    earlier = _user_texts(first)[:-1]
    if earlier and list(merged[: len(earlier)]) == earlier:
        return list(merged[len(earlier) :]), earlier
    return list(merged), []


def _explicit_inputs(top: Sequence[SpanView]) -> list[str]:
    """The user inputs the outermost agent/workflow span records (envelopes already
    unwrapped by the convention readers: :mod:`.envelopes`)."""
    for agent in top:
        texts = _user_texts(agent.input_messages)
        if texts:
            return texts
        if agent.input_text:
            return [agent.input_text]
    return []


_SPEAKERS = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant"}


def _transcript_users(texts: Sequence[str]) -> list[str]:
    """The user turns of a conversation rendered as text (``Human: ...\nAI: ...`` lines, as
    LangChain's buffer memory renders a chat history): [] when ``texts`` hold none."""
    for text in texts:
        turns: list[tuple[str, str]] = []
        for line in text.splitlines():
            speaker, colon, rest = line.partition(":")
            role = _SPEAKERS.get(speaker.strip().lower()) if colon else None
            if role is not None:
                turns.append((role, rest.strip()))
            elif turns:
                turns[-1] = (turns[-1][0], f"{turns[-1][1]}\n{line}")
            else:
                break
        users = [t for role, t in turns if role == "user"]
        if users:
            return users
    return []


def _strip_template(history: list[str], wrapped: str, text: str) -> list[str]:
    """Earlier turns with the framework's prompt template removed, as learned from the current
    turn (``wrapped`` is ``text`` inside it: smolagents' ``New task:\n...``). An earlier turn
    rendered without the current turn's trailing sections (DSPy renders its history without
    the trajectory) ends where the template's text first breaks after the input."""
    prefix, _, suffix = wrapped.partition(text)
    stripped = []
    for h in history:
        if h.startswith(prefix) and h.endswith(suffix) and len(h) >= len(prefix) + len(suffix):
            stripped.append(h[len(prefix) : len(h) - len(suffix)])
            continue
        separator = suffix[: len(suffix) - len(suffix.lstrip())]
        rest = h[len(prefix) :] if prefix and h.startswith(prefix) else None
        if rest is not None and separator and separator in rest:
            stripped.append(rest[: rest.index(separator)])
        else:
            stripped.append(h)
    return stripped


def _consistent_input(
    top: Sequence[SpanView], rendered: Sequence[str], history: list[str]
) -> tuple[list[str], list[str]] | None:
    """``(user inputs, history)`` when the top agent records its input as an object and the
    model was sent one of its fields inside a prompt template: that field (the longest the
    first rendered user message holds). A text-ReAct loop renders the input again, with the
    steps so far, in each call's one user message: every rendering that holds the field is
    that one input, and a rendering of an earlier turn (in the history) is no new input."""
    for agent in top:
        held = [f for f in agent.input_fields or () if f in rendered[0] and f != rendered[0]]
        if not held:
            continue
        # the input is rendered after the context it comes with (history, instructions)
        field = max(held, key=lambda f: (rendered[0].rfind(f), len(f)))
        earlier = _strip_template(history, rendered[0], field) or _transcript_users(
            [f for f in held if f != field]
        )
        others = _strip_template([r for r in rendered if field not in r], rendered[0], field)
        return [field, *(o for o in others if o not in earlier)], earlier
    return None


def _user_inputs(
    top: Sequence[SpanView], scoped_llm: Sequence[SpanView]
) -> tuple[list[str], list[str]]:
    """``(user inputs, history)`` from the LLM calls' histories (:func:`split_history`). The
    agent span's own inputs count where the LLM calls record none; where they extend what
    the calls saw (a last user turn no LLM call answered); and where the model saw the one
    input wrapped in a framework's prompt template (one new input that contains it)."""
    histories = [v.input_messages for v in scoped_llm if v.input_messages]
    first = histories[0] if histories else None
    inputs, history = split_history(merge_user_inputs(histories), first)
    explicit = _explicit_inputs(top)
    if not explicit and inputs:
        consistent = _consistent_input(top, inputs, history)
        if consistent is not None:
            return consistent
    if not explicit:
        return inputs, history
    if not inputs:
        return explicit, history
    if len(explicit) == len(inputs) == 1 and explicit[0] != inputs[0] and explicit[0] in inputs[0]:
        return explicit, _strip_template(history, inputs[0], explicit[0])
    for seen in (history + inputs, inputs):
        if len(explicit) > len(seen) and explicit[: len(seen)] == seen:
            return inputs + explicit[len(seen) :], history
    return inputs, history


def _final_output(
    top: Sequence[SpanView], scoped_llm: Sequence[SpanView], answer_calls: Sequence[ToolCall]
) -> str | None:
    """The agent's recorded output; else the argument of its answer tool (a code agent's last
    reply is the code that called it); else the last LLM response's text."""
    for agent in top:
        text = agent.output_text or _output_text(agent.output_messages)
        if text:
            return react_answer(text)
    answered = answer_of(answer_calls)
    if answered is not None or not scoped_llm:
        return answered
    last = scoped_llm[-1]
    if any(m.tool_calls for m in last.output_messages or ()):
        return None
    return react_answer(_output_text(last.output_messages))


_FINAL_ANSWER = "Final Answer:"


def react_answer(text: str | None) -> str | None:
    """The answer of a text-ReAct reply (``Thought: ...\nFinal Answer: <answer>``, the
    format ReAct prompts ask for): the text after its last ``Final Answer:`` line marker;
    any other text as it is."""
    if not text or _FINAL_ANSWER not in text:
        return text
    head, _, answer = text.rpartition(_FINAL_ANSWER)
    if head and not head.endswith("\n"):
        return text
    return answer.strip() or text


def _system_instructions(top: Sequence[SpanView], scoped_llm: Sequence[SpanView]) -> str | None:
    for view in [*top, *scoped_llm]:
        if view.system_instructions:
            return view.system_instructions
        texts = [m.text for m in view.input_messages or () if m.role == "system" and m.text]
        if texts:
            return "\n".join(texts)
    return None


def _agents(tree: SpanTree) -> tuple[AgentInfo, ...]:
    agents = []
    for view in tree.views:
        if view.role == "agent":
            parent = tree.agent_of(view)
            agents.append(
                AgentInfo(
                    view.agent_name,
                    view.span.span_id,
                    parent.span.span_id if parent else None,
                    view.span.duration_ms,
                )
            )
    return tuple(agents)


def _sum(values: list[int | None]) -> int | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def _tokens(
    calls: Sequence[SpanView], top: Sequence[SpanView]
) -> tuple[int | None, int | None, int | None, bool]:
    """(input, output, cached input, aggregated-only) token totals."""
    if any(v.has_usage for v in calls):
        return (
            _sum([v.input_tokens for v in calls]),
            _sum([v.output_tokens for v in calls]),
            _sum([v.cached_input_tokens for v in calls]),
            False,
        )
    for agent in top:
        if agent.has_usage:
            return agent.input_tokens, agent.output_tokens, agent.cached_input_tokens, True
    return None, None, None, False


def _conversation_id(tree: SpanTree, top: Sequence[SpanView]) -> str | None:
    for view in [*top, *tree.views]:
        if view.conversation_id:
            return view.conversation_id
    return None


def _bounds(tree: SpanTree) -> tuple[int, float]:
    """(start in Unix ns, duration in ms) of the agent's work: its root span; under the case
    span ``tracegrade run`` wraps an agent in (scope :data:`RUNNER_SCOPE`), the agent's own
    spans (the case span's children), so a run measures latency as a production trace of the
    same agent does; else the extent of every span."""
    roots = tree.roots
    if len(roots) == 1:
        root = roots[0]
        agent = tree.children.get(root.span.span_id, [])
        if root.span.scope_name != RUNNER_SCOPE or not agent:
            return root.span.start_unix_nano, root.span.duration_ms
        return _extent(agent)
    return _extent(tree.views) if tree.views else (0, 0.0)


def _extent(views: Sequence[SpanView]) -> tuple[int, float]:
    """(first start in Unix ns, ms from it to the last end) of ``views`` (not empty)."""
    start = min(v.span.start_unix_nano for v in views)
    return start, max(0, max(v.span.end_unix_nano for v in views) - start) / 1e6


def _scope(tree: SpanTree, calls: list[SpanView]) -> tuple[list[SpanView], list[SpanView]]:
    """(top agent chain, LLM calls of the top agent) - all calls when none is scoped."""
    top = tree.top_agents()
    top_agent = next((a for a in reversed(top) if a.role == "agent"), None)
    return top, [v for v in calls if tree.in_scope_of(v, top_agent)] or calls


def _histories(tree: SpanTree, calls: list[SpanView]) -> list[list[Message]]:
    """Every message history: LLM inputs, then agent-level conversations (pydantic-ai), then
    messages logged on other spans (a ``gen_ai.tool.message`` event on a tool span)."""
    agents = [
        a.input_messages for a in tree.views if a.role in ("agent", "workflow") and a.input_messages
    ]
    others = [
        v.input_messages
        for v in tree.views
        if v.role not in ("llm", "agent", "workflow") and v.input_messages
    ]
    return [v.input_messages for v in calls if v.input_messages] + agents + others


def assemble(trace: TraceData, views: list[SpanView]) -> AgentTrace:
    """Build the :class:`AgentTrace` of one trace from its span views (see module docstring)."""
    tree = SpanTree(views)
    ordering = causal_order(tree, llm_views(tree))
    calls = ordering.calls
    top, scoped = _scope(tree, calls)
    tool_calls, answer_calls = split_answer_calls(
        join_tool_calls(tree, calls, _histories(tree, calls))
    )
    user_inputs, history = _user_inputs(top, scoped)
    final_output = _final_output(top, scoped, answer_calls)
    input_tokens, output_tokens, cached, aggregated_only = _tokens(calls, top)
    conventions = tuple(sorted({c for v in tree.views for c in v.conventions}))
    root = tree.root
    unread = unread_content(tree.views, compiled_maps(), user_inputs)
    facts = Facts(
        tree.views,
        calls,
        tool_calls,
        user_inputs,
        final_output,
        input_tokens is not None or output_tokens is not None,
        aggregated_only,
        root,
        conventions,
        answer_calls,
        ordering.ambiguous,
        unread,
    )
    start, duration_ms = _bounds(tree)
    return AgentTrace(
        trace_id=trace.trace_id,
        user_inputs=tuple(user_inputs),
        final_output=final_output,
        llm_calls=tuple(_llm_call(v, tree) for v in calls),
        tool_calls=tuple(tool_calls),
        agents=_agents(tree),
        conversation_id=_conversation_id(tree, top),
        history=tuple(history),
        system_instructions=_system_instructions(top, scoped),
        start_unix_nano=start,
        duration_ms=duration_ms,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        cached_input_tokens=cached,
        conventions=conventions,
        gaps=tuple(find_gaps(facts)),
        root_span_name=root.span.name if root else "",
        root_attributes=dict(root.span.attributes) if root else {},
        resource_attributes=dict(root.span.resource_attributes) if root else {},
        span_count=len(tree.views),
        log_record_count=len(trace.logs),
        retrievals=_retrievals(tree),
        turn_starts=turn_starts(calls, scoped),
    )
