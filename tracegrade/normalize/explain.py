"""Where each derived field came from: the span, the convention map and the attribute.

``tracegrade inspect --explain`` prints, for each trace, every span's role and what gave it
(a map's rule, or the evidence the span carries), then each derived field - user inputs, final
answer, each LLM call's request, response and usage, each tool call's name, arguments and
result, the conversation id - with the span and the ``map: attribute`` it was read from
(``evidence: KEY`` for content read by its shape under a key no map names,
:mod:`.sniff`). Unread content is listed too: that is what a new convention map should read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.normalize.assemble import assemble
from tracegrade.normalize.messages import Message
from tracegrade.normalize.reader import compiled_maps, read_view
from tracegrade.normalize.sniff import unread_content
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import LogRecord, TraceData
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class SpanRole:
    """One span: its name, id, role, what gave the role, and the maps that read it."""

    name: str
    span_id: str
    role: str | None
    role_origin: str | None
    conventions: tuple[str, ...]


@dataclass(frozen=True)
class FieldOrigin:
    """One derived field: ``field`` (``final_output``, ``tool_calls[0].arguments``...), a
    short form of its ``value``, the ``span`` (name and id) and where it was read,
    ``read_from`` (``"map: attribute"``)."""

    field: str
    value: str
    span: str
    read_from: str


@dataclass(frozen=True)
class Explanation:
    """A trace, its spans' roles and the origins of its fields."""

    trace: AgentTrace
    spans: tuple[SpanRole, ...]
    fields: tuple[FieldOrigin, ...]
    unread: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{trace_id, spans: [...], fields: [...], unread: [{span, attribute}]}``."""
        return {
            "trace_id": self.trace.trace_id,
            "spans": [s.__dict__ for s in self.spans],
            "fields": [f.__dict__ for f in self.fields],
            "unread": [{"span": s, "attribute": a} for s, a in self.unread],
        }


def _describe(messages: Sequence[Message]) -> str:
    last = messages[-1]
    calls = ", ".join(p.name or "?" for p in last.tool_calls)
    what = f"calls {calls}" if calls else (last.text or "")
    return f"{len(messages)} message(s), last {last.role}: {what}"


def _short(value: Any, width: int = 60) -> str:
    if isinstance(value, list) and value and all(isinstance(m, Message) for m in value):
        value = _describe(value)
    text = value if isinstance(value, str) else repr(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def _where(view: SpanView) -> str:
    return f"{view.span.name} ({view.span.span_id})"


@dataclass
class _Finder:
    views: Sequence[SpanView]
    found: list[FieldOrigin] = field(default_factory=list)

    def add(self, name: str, value: Any, view: SpanView | None, origin: str | None) -> None:
        span = _where(view) if view is not None else "-"
        self.found.append(FieldOrigin(name, _short(value), span, origin or "derived"))

    def by_id(self, span_id: str | None) -> SpanView | None:
        return next((v for v in self.views if v.span.span_id == span_id), None)

    def first(self, predicate: Any, key: str) -> tuple[SpanView | None, str | None]:
        for view in self.views:
            if predicate(view):
                return view, view.origins.get(key)
        return None, None


def _user_inputs(finder: _Finder, trace: AgentTrace) -> None:
    for index, text in enumerate(trace.user_inputs):
        view, origin = finder.first(
            lambda v, t=text: any(m.role == "user" and m.text == t for m in v.input_messages or ()),
            "input_messages",
        )
        if view is None:
            view, origin = finder.first(lambda v, t=text: v.input_text == t, "input_text")
        finder.add(f"user_inputs[{index}]", text, view, origin)


def _final_output(finder: _Finder, trace: AgentTrace) -> None:
    text = trace.final_output
    if text is None:
        return
    view, origin = finder.first(lambda v: v.output_text == text, "output_text")
    if view is None:
        view, origin = finder.first(
            lambda v: any(m.text and m.text in text for m in v.output_messages or ()),
            "output_messages",
        )
    if view is None:
        view, origin = finder.first(lambda v: v.response_text == text, "response_text")
    finder.add("final_output", text, view, origin)


def _llm_calls(finder: _Finder, trace: AgentTrace) -> None:
    for index, call in enumerate(trace.llm_calls):
        view = finder.by_id(call.span_id)
        if view is None:
            continue
        label = f"llm_calls[{index}]"
        finder.add(f"{label}.role", view.role, view, view.role_origin)
        for name in ("input_messages", "output_messages", "model"):
            if name in view.origins:
                finder.add(f"{label}.{name}", getattr(view, name), view, view.origins[name])
        if call.input_tokens is not None or call.output_tokens is not None:
            tokens = f"{call.input_tokens} in / {call.output_tokens} out"
            finder.add(f"{label}.tokens", tokens, view, view.origins.get("input_tokens"))


def _tool_calls(finder: _Finder, trace: AgentTrace) -> None:
    calls = trace.llm_calls
    for index, call in enumerate(trace.tool_calls):
        label = f"tool_calls[{index}]"
        view = finder.by_id(call.span_id)
        requester = (
            finder.by_id(calls[call.llm_call_index].span_id)
            if call.llm_call_index is not None and call.llm_call_index < len(calls)
            else None
        )
        request_origin = requester.origins.get("output_messages") if requester else None
        if view is not None and "tool_name" in view.origins:
            finder.add(f"{label}.name", call.name, view, view.origins["tool_name"])
        else:
            finder.add(f"{label}.name", call.name, requester, request_origin)
        if call.source == "span" and view is not None:  # the model's request wins when recorded
            finder.add(
                f"{label}.arguments", call.arguments, view, view.origins.get("tool_arguments")
            )
        else:
            finder.add(f"{label}.arguments", call.arguments, requester, request_origin)
        if call.result is not None:
            if view is not None and view.tool_result is not None:
                finder.add(f"{label}.result", call.result, view, view.origins.get("tool_result"))
            else:
                finder.add(f"{label}.result", call.result, None, "the model's transcript")


def explain_trace(trace: TraceData) -> Explanation:
    """Normalise ``trace`` as :func:`~tracegrade.normalize.normalize_trace` does, and say where
    each derived field came from (module docstring)."""
    logs: dict[str, list[LogRecord]] = {}
    for record in trace.logs:
        if record.span_id:
            logs.setdefault(record.span_id, []).append(record)
    context = Context(logs)
    views = [read_view(span, context) for span in trace.spans]
    normalised = assemble(trace, views)
    finder = _Finder(views)
    _user_inputs(finder, normalised)
    _final_output(finder, normalised)
    _llm_calls(finder, normalised)
    _tool_calls(finder, normalised)
    if normalised.conversation_id:
        view, origin = finder.first(
            lambda v: v.conversation_id == normalised.conversation_id, "conversation_id"
        )
        finder.add("conversation_id", normalised.conversation_id, view, origin)
    spans = tuple(
        SpanRole(v.span.name, v.span.span_id, v.role, v.role_origin, tuple(v.conventions))
        for v in views
    )
    unread = tuple(unread_content(views, compiled_maps(), normalised.user_inputs))
    return Explanation(normalised, spans, tuple(finder.found), unread)
