"""pydantic-ai instrumentation (``InstrumentationSettings``, versions 1-6) and its Logfire spans.

Version 3+ uses GenAI names (``invoke_agent {agent}``, ``chat {model}``, ``execute_tool
{tool}``), read by :mod:`.genai`; this module adds what is pydantic-ai's own:

- agent span: ``final_result`` (the answer; JSON text for structured output),
  ``pydantic_ai.all_messages`` (the whole conversation, parts schema), ``agent_name``,
  ``model_name``, and ``gen_ai.aggregated_usage.input_tokens`` / ``output_tokens`` (usage
  summed over the run: aggregated, never added to the chat spans' usage);
- versions 1-2: span names ``agent run`` and ``running tool``, tool attributes
  ``tool_arguments`` / ``tool_response``, and the v1 ``all_messages_events`` list of legacy
  event dicts;
- quirks handled in :mod:`.messages`: ``tool_call_response`` parts carry ``result`` (not
  ``response``) and, in versions 2-5, sit in ``role: "user"`` messages (never user input);
  reasoning parts are typed ``thinking``.
"""

from __future__ import annotations

from tracegrade.normalize.genai_events import split_events
from tracegrade.normalize.messages import (
    Message,
    as_int,
    as_text,
    loads_maybe,
    parse_arguments,
    parse_messages,
)
from tracegrade.normalize.view import Context, SpanView, attr_str
from tracegrade.spans import Span

NAME = "pydantic-ai"
_MARKERS = (
    "pydantic_ai.all_messages",
    "final_result",
    "gen_ai.aggregated_usage.input_tokens",
    "all_messages_events",
    "tool_arguments",
    "tool_response",
    "model_request_parameters",
)


def _is_pydantic_ai(span: Span) -> bool:
    return (
        span.name in ("agent run", "running tool")
        or span.scope_name.startswith("pydantic-ai")
        or not span.attributes.keys().isdisjoint(_MARKERS)
    )


def _all_messages(span: Span) -> list[Message] | None:
    messages = parse_messages(span.attributes.get("pydantic_ai.all_messages"))
    if messages is not None:
        return messages
    events = loads_maybe(span.attributes.get("all_messages_events"))
    if isinstance(events, (list, tuple)):
        inputs, outputs = split_events(
            (str(e.get("event.name")), e) for e in events if isinstance(e, dict)
        )
        return inputs + outputs
    return None


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from pydantic-ai's own attributes; True if the span is pydantic-ai's."""
    if not _is_pydantic_ai(span):
        return False
    attrs = span.attributes
    role = {"agent run": "agent", "running tool": "tool"}.get(span.name)
    view.recognise(NAME, role)  # type: ignore[arg-type]
    if "final_result" in attrs or "pydantic_ai.all_messages" in attrs or role == "agent":
        view.fill(
            agent_name=attr_str(span, "agent_name", "gen_ai.agent.name"),
            output_text=as_text(attrs.get("final_result")),
            input_messages=_all_messages(span),
        )
    aggregated_in = as_int(attrs.get("gen_ai.aggregated_usage.input_tokens"))
    aggregated_out = as_int(attrs.get("gen_ai.aggregated_usage.output_tokens"))
    if (aggregated_in is not None or aggregated_out is not None) and not view.has_usage:
        view.usage_aggregated = True
        view.fill(input_tokens=aggregated_in, output_tokens=aggregated_out)
    if "tool_arguments" in attrs or "tool_response" in attrs:
        view.fill(
            tool_name=attr_str(span, "gen_ai.tool.name", "tool_name"),
            tool_call_id=attr_str(span, "gen_ai.tool.call.id", "tool_call_id"),
            tool_result=as_text(attrs.get("tool_response")),
        )
        if "tool_arguments" in attrs:
            view.fill(tool_arguments=parse_arguments(attrs["tool_arguments"]))
    return True
