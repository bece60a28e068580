"""Which spans are LLM calls: one per request the model answered.

Spans marked as LLM calls are not always one call each. One operation is one record:

- **Wrappers.** A framework's LLM span around the client instrumentation's span (LangChain's
  ``ChatOpenAI`` around ``openai.chat``): the inner span is the call; the wrapper's fields
  fill what the inner span lacks. A wrapper around *several* LLM spans (an LLM-kind span for
  a whole agent step loop) is no call either, and lends its inner calls only its model and
  provider: its usage and messages are the whole loop's, not one call's.
- **One response, several spans.** An SDK that traces itself beside an instrumentation
  records the same call twice, as siblings with the same response id (``gen_ai.response.id``).
  They are one call: the richest record (response content, then request content, then usage)
  is kept and filled from the others; where their usage differs, the HTTP request's own
  span (``http.*`` attributes) gives it.
- **One call, two overlapping spans.** Without a response id, a span with no response next to
  one with it - same parent (or one inside the other), same model, overlapping in time - is
  the same call recorded twice: merged the same way.
- **A step that is no call.** An LLM-kind span with no response, usage, finish reason or
  error beside a sibling call that has them is a framework's preparation step (LlamaIndex's
  ``_prepare_chat_with_tools``): not a call.
- **A request and its response recorded apart.** Logfire records a streamed completion as a
  request span (``Chat Completion with ...``: messages, no response, no usage) and then a
  zero-length log span (``streaming response from ... took ...``) with the same request, the
  response and the usage. A span with no response, no usage and no error followed by a span
  of the same request that has them is one call: the response fills the request's span
  (which keeps the call's timing) and the second span is dropped.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracegrade.normalize.toolcalls import span_error
from tracegrade.normalize.tree import SpanTree
from tracegrade.normalize.view import SpanView

_MERGED_FIELDS = (
    "model",
    "provider",
    "input_tokens",
    "output_tokens",
    "cached_input_tokens",
    "finish_reasons",
    "input_messages",
    "output_messages",
    "response_id",
    "system_instructions",
)
_IDENTITY_FIELDS = ("model", "provider")


def _answered(view: SpanView) -> bool:
    return bool(view.output_messages) or view.has_usage or bool(view.finish_reasons)


def _richness(view: SpanView) -> tuple[bool, bool, bool, bool]:
    return (
        bool(view.output_messages),
        bool(view.input_messages),
        view.has_usage,
        view.model is not None,
    )


def _absorb(into: SpanView, other: SpanView) -> None:
    into.fill(**{f: getattr(other, f) for f in _MERGED_FIELDS})
    for name, origin in other.origins.items():
        into.origins.setdefault(name, origin)


def _response_record(request: SpanView, later: list[SpanView]) -> SpanView | None:
    """The span recording ``request``'s response apart from it (module docstring)."""
    if _answered(request) or span_error(request) or not request.input_messages:
        return None
    parent = request.span.parent_span_id
    for view in later:
        if view.span.parent_span_id == parent and view.input_messages == request.input_messages:
            return view if _answered(view) else None
    return None


def _merge_responses(calls: list[SpanView]) -> list[SpanView]:
    dropped: set[int] = set()
    for index, view in enumerate(calls):
        if id(view) in dropped:
            continue
        response = _response_record(view, calls[index + 1 :])
        if response is not None:
            _absorb(view, response)
            dropped.add(id(response))
    return [v for v in calls if id(v) not in dropped]


def _merge_by_response_id(calls: list[SpanView]) -> list[SpanView]:
    """Calls sharing a response id and overlapping in time are one call: the richest absorbs
    the others. (Calls one after the other with one id are not: some SDKs write a
    placeholder id, such as the OpenAI Agents SDK's ``__fake_id__`` on streamed responses.)"""
    groups: dict[str, list[SpanView]] = {}
    for view in calls:
        if view.response_id:
            groups.setdefault(view.response_id, []).append(view)
    dropped: set[int] = set()
    for group in groups.values():
        while len(group) > 1:
            first = group[0]
            same = [v for v in group if v is first or _touch(first, v)]
            group = [v for v in group if not any(v is s for s in same)]
            if len(same) < 2:
                continue
            keep = max(same, key=_richness)
            for other in same:
                if other is not keep:
                    _absorb(keep, other)
                    dropped.add(id(other))
            _wire_usage(keep, same)
    return [v for v in calls if id(v) not in dropped]


_USAGE = ("input_tokens", "output_tokens", "cached_input_tokens")


def _wire_usage(keep: SpanView, records: Sequence[SpanView]) -> None:
    """Where the records of one call disagree on usage, the HTTP client's own record (the span
    of the request itself: ``http.*`` attributes) is the usage billed: a provider SDK tracing
    itself beside an instrumentation that re-adds streamed counts (OpenLLMetry adds the
    Anthropic stream's ``message_start`` output tokens to its total)."""
    wire = next((r for r in records if r.has_usage and r.has_key_prefix("http.")), None)
    if wire is None or wire is keep:
        return
    for name in _USAGE:
        value = getattr(wire, name)
        if value is not None:
            setattr(keep, name, value)
            keep.origins[name] = wire.origins.get(name, "")


def _touch(a: SpanView, b: SpanView) -> bool:
    """True when the two spans' intervals overlap (or one holds the other)."""
    return (
        a.span.start_unix_nano <= b.span.end_unix_nano
        and b.span.start_unix_nano <= a.span.end_unix_nano
    )


def _overlap(a: SpanView, b: SpanView) -> bool:
    """True when one span's interval overlaps at least half of the shorter one."""
    start = max(a.span.start_unix_nano, b.span.start_unix_nano)
    end = min(a.span.end_unix_nano, b.span.end_unix_nano)
    shorter = min(
        a.span.end_unix_nano - a.span.start_unix_nano, b.span.end_unix_nano - b.span.start_unix_nano
    )
    return end > start and (end - start) * 2 >= shorter


def _twin(empty: SpanView, full: SpanView, tree: SpanTree) -> bool:
    related = empty.span.parent_span_id == full.span.parent_span_id or any(
        a is full for a in tree.lineage(empty)
    )
    same_model = empty.model is None or full.model is None or empty.model == full.model
    return related and same_model and _overlap(empty, full) and not empty.response_id


def _merge_twins(calls: list[SpanView], tree: SpanTree) -> list[SpanView]:
    """A content-less call overlapping a call with a response (module docstring): one call."""
    empty = [v for v in calls if not v.output_messages and not v.input_messages]
    if not empty:
        return calls
    full = [v for v in calls if v.output_messages]
    if not full:
        return calls
    dropped: set[int] = set()
    taken: set[int] = set()
    for view in empty:
        partner = next(
            (f for f in full if id(f) not in taken and f is not view and _twin(view, f, tree)),
            None,
        )
        if partner is not None:
            _absorb(partner, view)
            taken.add(id(partner))
            dropped.add(id(view))
    return [v for v in calls if id(v) not in dropped]


def _evidence(view: SpanView) -> bool:
    """True when a span shows a model call was answered (or failed): a response, usage, a
    finish reason, a response id, an error."""
    return (
        bool(view.output_messages)
        or view.input_tokens is not None
        or view.has_usage
        or bool(view.finish_reasons)
        or bool(view.response_id)
        or span_error(view) is not None
    )


def _drop_unanswered(calls: list[SpanView]) -> list[SpanView]:
    """An LLM-kind span with no evidence of an answered call beside a sibling that has it is
    a framework's step around the call (LlamaIndex's ``_prepare_chat_with_tools``), not a
    call: dropped. Where no sibling has evidence (content and usage not captured), every
    span stays a call."""
    evidence = [_evidence(v) for v in calls]
    if all(evidence):
        return calls
    answered_parents = {v.span.parent_span_id for v, e in zip(calls, evidence, strict=True) if e}
    return [
        v
        for v, e in zip(calls, evidence, strict=True)
        if e or v.span.parent_span_id not in answered_parents
    ]


def llm_views(tree: SpanTree) -> list[SpanView]:
    """LLM-call views in start order, the records of one operation merged into one call
    (module docstring)."""
    wrappers = tree.llm_wrappers()
    calls = [v for v in tree.views if v.role == "llm" and v.span.span_id not in wrappers]
    if wrappers:
        _lend(calls, wrappers, tree)
    if len(calls) < 2:
        return calls
    if any(v.response_id for v in calls):
        calls = _merge_by_response_id(calls)
    calls = _merge_twins(calls, tree)
    return _drop_unanswered(_merge_responses(calls))


def _lend(calls: list[SpanView], wrappers: set[str], tree: SpanTree) -> None:
    """Each call takes what it lacks from the LLM wrappers around it: everything from a
    wrapper around it alone, the model and provider from one around several calls."""
    inner_count: dict[str, int] = {}
    for view in calls:
        for ancestor in tree.lineage(view):
            if ancestor.span.span_id in wrappers:
                inner_count[ancestor.span.span_id] = inner_count.get(ancestor.span.span_id, 0) + 1
    for view in calls:
        for ancestor in tree.lineage(view):
            if ancestor.span.span_id in wrappers:
                single = inner_count[ancestor.span.span_id] == 1
                fields = _MERGED_FIELDS if single else _IDENTITY_FIELDS
                view.fill(**{f: getattr(ancestor, f) for f in fields})
