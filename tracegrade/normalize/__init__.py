"""Normalisation: spans and log records of one trace -> :class:`~tracegrade.trace.AgentTrace`.

:mod:`.reader` reads each span through the convention maps (:mod:`.conventions`, data in
``maps/``) into a :class:`~.view.SpanView`, classifying it by what it carries;
:mod:`.assemble` builds the trace from the views, merging the spans of one operation, joining
tool calls with the model's transcript (:mod:`.toolcalls`) and recording gaps (:mod:`.gaps`).
"""

from __future__ import annotations

from collections.abc import Iterable

from tracegrade.normalize.assemble import assemble
from tracegrade.normalize.reader import read_view
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import LogRecord, Span, TraceData, group_by_trace
from tracegrade.trace import AgentTrace

__all__ = ["Context", "SpanView", "normalize_all", "normalize_trace", "read_view"]


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
