"""Which spans are LLM calls: one per request the model answered.

Spans marked as LLM calls are not always one call each:

- **Wrappers.** A framework's LLM span around the client instrumentation's span (LangChain's
  ``ChatOpenAI`` around ``openai.chat``): the inner span is the call; the wrapper's fields
  fill what the inner span lacks.
- **A request and its response recorded apart.** Logfire records a streamed completion as a
  request span (``Chat Completion with ...``: messages, no response, no usage) and then a
  zero-length log span (``streaming response from ... took ...``) with the same request, the
  response and the usage. A span with no response, no usage and no error followed by a span
  of the same request that has them is one call: the response fills the request's span
  (which keeps the call's timing) and the second span is dropped.
"""

from __future__ import annotations

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
)


def _answered(view: SpanView) -> bool:
    return bool(view.output_messages) or view.has_usage or bool(view.finish_reasons)


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
            view.fill(**{f: getattr(response, f) for f in _MERGED_FIELDS})
            dropped.add(id(response))
    return [v for v in calls if id(v) not in dropped]


def llm_views(tree: SpanTree) -> list[SpanView]:
    """LLM-call views in start order, wrappers and response records merged into the call
    (module docstring)."""
    wrappers = tree.llm_wrappers()
    calls = [v for v in tree.views if v.role == "llm" and v.span.span_id not in wrappers]
    for view in calls:
        for ancestor in tree.lineage(view):
            if ancestor.span.span_id in wrappers:
                view.fill(**{f: getattr(ancestor, f) for f in _MERGED_FIELDS})
    return _merge_responses(calls)
