"""Gaps: the scoring inputs a trace does not record, and why.

Each check looks at the assembled facts and, when something is missing, returns a
:class:`~tracegrade.trace.Gap` whose reason names the cause and, where the convention is
known, the setting that would record it. Missing-because-it-did-not-happen (a run that ended
on a tool call has no final answer) is not a gap; lint says so. Every other trace without a
final output has a ``final_output`` gap saying why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from tracegrade.attributes import TIMING_ATTR
from tracegrade.normalize.answers import is_answer_tool
from tracegrade.normalize.frameworks import Framework, detect
from tracegrade.normalize.toolcalls import span_error
from tracegrade.normalize.view import SpanView
from tracegrade.trace import Gap, ToolCall

CONTENT_HINTS = {
    "genai": "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true and export the log "
    "records too (semconv <= 1.36 puts content in log events), or opt in with "
    "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental and capture mode span_only",
    "openinference": "unset OPENINFERENCE_HIDE_INPUTS / OPENINFERENCE_HIDE_OUTPUTS "
    "(and OPENINFERENCE_HIDE_INPUT_MESSAGES / _OUTPUT_MESSAGES)",
    "traceloop": "set TRACELOOP_TRACE_CONTENT=true",
    "pydantic-ai": "use InstrumentationSettings(include_content=True)",
    "agent-framework": "set ENABLE_SENSITIVE_DATA=true "
    "(or enable_instrumentation(enable_sensitive_data=True))",
    "openai-agents": "set OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true "
    "for the openai-agents bridge",
}


@dataclass
class Facts:
    """What the assembler derived, as the gap checks need it."""

    views: Sequence[SpanView]
    llm_views: Sequence[SpanView]
    tool_calls: Sequence[ToolCall]
    user_inputs: Sequence[str]
    final_output: str | None
    tokens_recorded: bool
    tokens_aggregated_only: bool
    root: SpanView | None
    conventions: Sequence[str]
    answer_calls: Sequence[ToolCall] = ()
    """Answer-tool calls (:mod:`.answers`), not counted in ``tool_calls``."""
    unordered_llm_calls: Sequence[Sequence[SpanView]] = ()
    """Groups of LLM calls with one start time and nothing to order them (:mod:`.order`)."""
    unread: Sequence[tuple[str, str]] = ()
    """``(span name, attribute key)`` of content no map read (:mod:`.sniff`)."""


def content_hint(conventions: Sequence[str], framework: Framework | None = None) -> str:
    """The setting that turns message content on: the framework's own when it is known
    (:mod:`.frameworks`), else the one of the conventions seen."""
    if framework is not None:
        return framework.content
    hints = [
        CONTENT_HINTS[c]
        for c in ("agent-framework", "pydantic-ai", "openinference", "traceloop", "genai")
        if c in conventions
    ]
    return hints[0] if hints else CONTENT_HINTS["genai"]


def _hint(facts: Facts) -> str:
    return content_hint(facts.conventions, detect(v.span.scope_name for v in facts.views))


def _content_captured(facts: Facts) -> bool:
    return any(v.input_messages or v.output_messages for v in facts.llm_views)


def unread_reason(unread: Sequence[tuple[str, str]]) -> str:
    """The lint text for content no map read: the attributes, and what to do."""
    keys = list(dict.fromkeys(key for _, key in unread))
    shown = ", ".join(keys[:4]) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")
    return (
        f"unread content in {shown}: no convention map reads it; add a convention map "
        "(--conventions FILE; `tracegrade inspect --explain` shows where each field came from)"
    )


def _not_captured(facts: Facts) -> str:
    """Why content is missing: content no map reads, placeholders in its place, or nothing
    recorded."""
    if facts.unread:
        return unread_reason(facts.unread)
    placeholder = next((v.content_placeholder for v in facts.views if v.content_placeholder), None)
    if placeholder is not None:
        return f"message content recorded as the placeholder {placeholder!r} (not captured)"
    return "message content not captured"


NO_LLM_SPANS = (
    "no LLM spans: instrument the model client (e.g. opentelemetry-instrumentation-openai-v2 "
    "or openinference-instrumentation-openai)"
)


NO_RUN = (
    "no agent run: the trace has no LLM, agent or tool span (e.g. an agent's construction, "
    "or a run whose spans went to another trace)"
)


def _without_llm_spans(facts: Facts) -> list[Gap]:
    if not any(v.role in ("agent", "workflow", "tool") for v in facts.views):
        if facts.unread:
            return [Gap("llm_calls", f"no LLM, agent or tool span read: {_not_captured(facts)}")]
        return [Gap("llm_calls", NO_RUN)]
    framework = detect(v.span.scope_name for v in facts.views)
    gaps = [
        Gap("llm_calls", framework.llm_spans if framework and framework.llm_spans else NO_LLM_SPANS)
    ]
    if not any(v.input_messages or v.output_messages or v.output_text for v in facts.views):
        gaps.append(Gap("message_content", f"{_not_captured(facts)}: {_hint(facts)}"))
    if not facts.tokens_recorded:
        gaps.append(Gap("tokens", "no token usage (gen_ai.usage.*, llm.token_count.*) on any span"))
    return gaps


def _llm_gaps(facts: Facts) -> list[Gap]:
    if not facts.llm_views:
        return _without_llm_spans(facts)
    gaps = []
    if not _content_captured(facts):
        gaps.append(Gap("message_content", f"{_not_captured(facts)}: {_hint(facts)}"))
    if not facts.tokens_recorded:
        gaps.append(Gap("tokens", "no token usage (gen_ai.usage.*, llm.token_count.*) on any span"))
    elif facts.tokens_aggregated_only:
        gaps.append(
            Gap(
                "llm_call_tokens",
                "usage is recorded only as the agent's aggregate, not per LLM call",
            )
        )
    missing_model = sum(1 for v in facts.llm_views if not v.model)
    if missing_model:
        gaps.append(
            Gap(
                "model",
                f"{missing_model} LLM call(s) without gen_ai.request.model / gen_ai.response.model",
            )
        )
    return gaps


def _io_gaps(facts: Facts) -> list[Gap]:
    gaps = []
    content_missing = facts.llm_views and not _content_captured(facts)
    if not facts.user_inputs:
        why = (
            _not_captured(facts)
            if content_missing or not facts.llm_views
            else "no user message in any LLM input or agent input"
        )
        gaps.append(Gap("user_inputs", why))
    final_gap = _final_output_gap(facts)
    if final_gap is not None:
        gaps.append(final_gap)
    return gaps


def requested_tools(facts: Facts) -> list[str]:
    """Names of the tools the last LLM response asked for (empty when it asked for none)."""
    last = facts.llm_views[-1] if facts.llm_views else None
    messages = last.output_messages or () if last is not None else ()
    return [p.name or "" for m in messages for p in m.tool_calls]


def _final_output_gap(facts: Facts) -> Gap | None:
    """Why there is no final output; ``None`` when there is one, or when the run ended on a
    (non-answer) tool call, so the agent gave no answer (lint says so)."""
    if facts.final_output is not None:
        return None
    requested = requested_tools(facts)
    if requested and not all(is_answer_tool(n) for n in requested):
        return None
    answer_tools = [c.name for c in facts.answer_calls] or requested
    if answer_tools:
        return Gap(
            "final_output",
            f"the answer tool {answer_tools[-1]} was called but no answer argument was "
            f"recorded (tool arguments not captured: {_hint(facts)})",
        )
    if not facts.llm_views:
        if facts.unread:
            return Gap("final_output", _not_captured(facts))
        return Gap(
            "final_output",
            "message content not captured: no LLM spans, and no agent or workflow span "
            "records an output",
        )
    if not _content_captured(facts):
        return Gap("final_output", f"{_not_captured(facts)}: {_hint(facts)}")
    last = facts.llm_views[-1]
    error = span_error(last)
    if error:
        return Gap("final_output", f"no final answer recorded: the last LLM call failed ({error})")
    return Gap(
        "final_output",
        "no final answer recorded: the last LLM response has no text and no agent span "
        "records an output",
    )


def _tool_gaps(facts: Facts) -> list[Gap]:
    calls = facts.tool_calls
    gaps = []
    if (
        not calls
        and facts.llm_views
        and not _content_captured(facts)
        and not any(v.role == "tool" for v in facts.views)
    ):
        gaps.append(
            Gap("tool_calls", "no tool spans and no LLM output content: tool calls cannot be seen")
        )
    no_args = sum(1 for c in calls if not c.arguments_recorded)
    if no_args:
        gaps.append(
            Gap(
                "tool_arguments",
                f"{no_args} of {len(calls)} tool call(s) have no recorded arguments "
                "(gen_ai.tool.call.arguments is opt-in; LLM tool_call content not captured)",
            )
        )
    results_gap = _results_gap(calls)
    if results_gap is not None:
        gaps.append(results_gap)
    no_id = sum(1 for c in calls if not c.call_id)
    if no_id:
        gaps.append(
            Gap(
                "tool_call_ids",
                f"{no_id} of {len(calls)} tool call(s) have no call id "
                "(neither the tool span nor the model's tool_call records one)",
            )
        )
    return gaps


def _results_gap(calls: Sequence[ToolCall]) -> Gap | None:
    """Calls without a usable result: not recorded, or recorded as something else (a repr)."""
    missing = [c for c in calls if c.result is None and c.error is None]
    if not missing:
        return None
    unusable = Counter(c.result_unavailable for c in missing if c.result_unavailable)
    unrecorded = len(missing) - sum(unusable.values())
    parts = [
        f"{count} of {len(calls)} tool call(s) have no usable result: {why}"
        for why, count in unusable.items()
    ]
    if unrecorded:
        parts.append(
            f"{unrecorded} of {len(calls)} tool call(s) have no recorded result "
            "(gen_ai.tool.call.result is opt-in; later LLM input content not captured)"
        )
    return Gap("tool_results", "; ".join(parts))


def _order_gap(facts: Facts) -> Gap | None:
    groups = facts.unordered_llm_calls
    if not groups:
        return None
    calls = sum(len(g) for g in groups)
    return Gap(
        "llm_call_order",
        f"{calls} LLM calls in {len(groups)} group(s) start at the same time (millisecond "
        "timestamps, e.g. the JavaScript SDK) and neither their message histories nor their "
        "parent spans order them: their order, and so the final answer, is a guess",
    )


def _span_gaps(facts: Facts) -> list[Gap]:
    gaps = [g for g in (_order_gap(facts),) if g is not None]
    if facts.root is not None and facts.root.span.attributes.get(TIMING_ATTR) == "synthetic":
        gaps.append(
            Gap("timing", "imported from a transcript without timestamps: durations are synthetic")
        )
    dropped = [v for v in facts.views if v.span.dropped_attributes_count]
    if dropped:
        total = sum(v.span.dropped_attributes_count for v in dropped)
        gaps.append(
            Gap(
                "attributes",
                f"{len(dropped)} span(s) dropped {total} attribute(s) at the SDK limit "
                "(default 128): raise OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT",
            )
        )
    return gaps


def find_gaps(facts: Facts) -> list[Gap]:
    """Every gap of one trace (see the module docstring); a trace with no agent run at all
    has that one gap (and unread content, when some attribute holds it)."""
    unread = [Gap("unread_content", unread_reason(facts.unread))] if facts.unread else []
    llm = _llm_gaps(facts)
    if llm and llm[0].reason == NO_RUN:
        return unread + _span_gaps(facts) + llm
    return unread + _span_gaps(facts) + llm + _io_gaps(facts) + _tool_gaps(facts)
