"""Normalisation: spans and log records of one trace -> :class:`~tracegrade.trace.AgentTrace`.

One module per convention reads each span into a :class:`~.view.SpanView` (see
:data:`CONVENTIONS` for the order, most specific first); :mod:`.assemble` builds the trace
from the views, joining tool calls (:mod:`.toolcalls`) and recording gaps (:mod:`.gaps`).
"""

from __future__ import annotations

from collections.abc import Iterable

from tracegrade.normalize import (
    adk,
    agent_framework,
    anyagent,
    genai,
    genai_events,
    genai_legacy,
    openai_agents,
    openinference,
    pydantic_ai,
    traceloop,
    vercel_ai,
)
from tracegrade.normalize.assemble import assemble
from tracegrade.normalize.view import Context, Convention, SpanView
from tracegrade.spans import LogRecord, Span, TraceData, group_by_trace
from tracegrade.trace import AgentTrace

CONVENTIONS: tuple[Convention, ...] = (
    adk,
    agent_framework,
    pydantic_ai,
    openai_agents,
    anyagent,
    vercel_ai,
    traceloop,
    openinference,
    genai_events,
    genai,
    genai_legacy,
)
"""Convention readers in the order they see each span (first value set wins)."""

__all__ = ["CONVENTIONS", "normalize_trace", "normalize_all", "read_view"]


def read_view(span: Span, context: Context) -> SpanView:
    """Read one span through every convention."""
    view = SpanView(span)
    for convention in CONVENTIONS:
        convention.read(span, view, context)
    return view


def normalize_trace(trace: TraceData) -> AgentTrace:
    """Normalise one trace's spans and log records (log records join spans by span id)."""
    logs_by_span: dict[str, list[LogRecord]] = {}
    for record in trace.logs:
        if record.span_id:
            logs_by_span.setdefault(record.span_id, []).append(record)
    context = Context(logs_by_span)
    return assemble(trace, [read_view(span, context) for span in trace.spans])


def normalize_all(spans: Iterable[Span], logs: Iterable[LogRecord] = ()) -> list[AgentTrace]:
    """Group spans and log records by trace id and normalise each trace (first-seen order).

    Traces with log records but no spans are skipped: there is nothing to anchor them.
    """
    return [normalize_trace(t) for t in group_by_trace(spans, logs) if t.spans]
