"""The waterfall of one trace: its spans on a time axis, in tree order, each with what the
normalisers read from it (role, model, tokens, cost, tool arguments and result), and every
failed span marked: a span whose status is ERROR, a tool call whose span or result reports an
error (:attr:`tracegrade.trace.ToolCall.error`, the normalised trace's verdict), a failed
LLM call. :attr:`Waterfall.failures` lists them for the summary above the bars.

Geometry is computed here, in thousandths of the trace's duration (``x``, ``width`` in
0..1000), so the template draws bars as SVG attributes (no inline style, no script building
HTML). Every text value stays a plain string; the template escapes it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.config import Pricing
from tracegrade.normalize import read_view
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import LogRecord, Span, TraceData
from tracegrade.trace import AgentTrace

MAX_TEXT = 20_000
"""Characters shown of one value (arguments, results, messages); the rest is cut, said so."""
AXIS_TICKS = 5


@dataclass(frozen=True)
class SpanRow:
    """One bar: ``offset_ms`` from the trace's start, ``duration_ms``, ``x``/``width`` in
    thousandths of the trace's duration, ``depth`` in the span tree, and ``details`` (label,
    text) pairs shown when the bar is clicked."""

    index: int
    span_id: str
    name: str
    role: str
    depth: int
    offset_ms: float
    duration_ms: float
    x: float
    width: float
    error: str | None
    """Why the span failed (the tool call's error, the status message, ``ERROR``), else None."""
    details: list[tuple[str, str]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "span_id": self.span_id,
            "name": self.name,
            "role": self.role,
            "depth": self.depth,
            "offset_ms": self.offset_ms,
            "duration_ms": self.duration_ms,
            "error": self.error,
            "details": dict(self.details),
        }


@dataclass(frozen=True)
class Waterfall:
    """The rows of one trace, its total ``duration_ms`` and the axis ticks (x, label)."""

    trace_id: str
    duration_ms: float
    rows: list[SpanRow]
    ticks: list[tuple[float, str]]

    @property
    def failures(self) -> list[SpanRow]:
        """The failed spans' rows, in tree order."""
        return [r for r in self.rows if r.error]

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": self.trace_id,
            "duration_ms": self.duration_ms,
            "spans": [r.to_json() for r in self.rows],
            "failures": [{"span_id": r.span_id, "error": r.error} for r in self.failures],
        }


def _text(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, indent=2, ensure_ascii=False, default=str)
    if len(value) > MAX_TEXT:
        return str(value[:MAX_TEXT]) + f"\n… ({len(value) - MAX_TEXT} more characters)"
    return str(value)


def _messages(messages: Sequence[Any] | None) -> str:
    lines = []
    for message in messages or ():
        for part in message.parts:
            body = part.content if part.content is not None else part.arguments or part.response
            label = part.name or part.type
            lines.append(f"[{message.role}] {label}: {_text(body)}")
    return "\n".join(lines)


def _details(view: SpanView, pricing: Pricing) -> list[tuple[str, str]]:
    span = view.span
    cost = pricing.cost_usd(
        view.model, view.input_tokens, view.output_tokens, view.cached_input_tokens
    )
    pairs: list[tuple[str, Any]] = [
        ("span", f"{span.name} ({span.span_id})"),
        ("role", view.role),
        ("agent", view.agent_name),
        ("model", view.model),
        ("input tokens", view.input_tokens),
        ("output tokens", view.output_tokens),
        ("cached input tokens", view.cached_input_tokens),
        ("cost", None if cost is None or view.usage_aggregated else f"${cost:.6f}"),
        ("tool", view.tool_name),
        ("tool call id", view.tool_call_id),
        ("arguments", view.arguments if view.has_arguments else None),
        ("result", view.tool_result),
        ("tool error", view.tool_error),
        ("input", _messages(view.input_messages) or view.input_text),
        ("output", _messages(view.output_messages) or view.output_text),
        ("status", span.status_message or ("ERROR" if span.is_error else None)),
        ("attributes", {k: str(v) for k, v in span.attributes.items()}),
    ]
    return [(k, _text(v)) for k, v in pairs if v not in (None, "", {})]


def _tree_order(spans: Sequence[Span]) -> list[tuple[Span, int]]:
    ids = {s.span_id for s in spans}
    children: dict[str | None, list[Span]] = {}
    for span in spans:
        parent = span.parent_span_id if span.parent_span_id in ids else None
        children.setdefault(parent, []).append(span)
    out: list[tuple[Span, int]] = []
    stack = [(s, 0) for s in sorted(children.get(None, []), key=_start, reverse=True)]
    while stack:
        span, depth = stack.pop()
        out.append((span, depth))
        kids = sorted(children.get(span.span_id, []), key=_start, reverse=True)
        stack.extend((k, depth + 1) for k in kids)
    return out


def _start(span: Span) -> int:
    return span.start_unix_nano


def _failures(trace: AgentTrace | None) -> dict[str, str]:
    """span id -> why it failed, from the normalised trace's tool and LLM calls."""
    if trace is None:
        return {}
    out = {c.span_id: c.error for c in trace.llm_calls if c.error}
    out.update({c.span_id: c.error for c in trace.tool_calls if c.error and c.span_id})
    return out


def _error(span: Span, view: SpanView, failed: dict[str, str]) -> str | None:
    if span.span_id in failed:
        return failed[span.span_id]
    if view.tool_error is not None:
        return str(view.tool_error) or "tool error"
    if span.is_error:
        return span.status_message or "ERROR"
    return None


def build(trace: TraceData, pricing: Pricing, normalized: AgentTrace | None = None) -> Waterfall:
    """The waterfall of ``trace`` (its spans and the log records that carry their content);
    ``normalized``, its normalised trace, marks the tool calls whose result reports an error."""
    failed = _failures(normalized)
    logs: dict[str, list[LogRecord]] = {}
    for record in trace.logs:
        if record.span_id:
            logs.setdefault(record.span_id, []).append(record)
    context = Context(logs)
    if not trace.spans:
        return Waterfall(trace.trace_id, 0.0, [], [])
    start = min(s.start_unix_nano for s in trace.spans)
    end = max(max(s.end_unix_nano, s.start_unix_nano) for s in trace.spans)
    total_ms = max((end - start) / 1e6, 1e-3)
    rows = []
    for index, (span, depth) in enumerate(_tree_order(trace.spans)):
        view = read_view(span, context)
        offset = (span.start_unix_nano - start) / 1e6
        rows.append(
            SpanRow(
                index=index,
                span_id=span.span_id,
                name=span.name,
                role=view.role or "span",
                depth=min(depth, 12),
                offset_ms=offset,
                duration_ms=span.duration_ms,
                x=round(1000 * offset / total_ms, 2),
                width=round(max(1000 * span.duration_ms / total_ms, 2.0), 2),
                error=_error(span, view, failed),
                details=_details(view, pricing),
            )
        )
    digits = 0 if total_ms >= 100 else 1 if total_ms >= 10 else 3
    ticks = [
        (1000 * i / (AXIS_TICKS - 1), f"{total_ms * i / (AXIS_TICKS - 1):,.{digits}f} ms")
        for i in range(AXIS_TICKS)
    ]
    return Waterfall(trace.trace_id, total_ms, rows, ticks)
