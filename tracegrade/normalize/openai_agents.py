"""OpenAI Agents SDK bridges: Logfire's ``instrument_openai_agents`` spans.

The SDK's span data has no tool-call id, so every bridge's function spans lack one; the
assembler joins them to the model's ``tool_call`` parts by name and order. The contrib
``openai-agents-v2`` bridge speaks GenAI semconv (:mod:`.genai`), the OpenInference bridge
OpenInference (:mod:`.openinference`), the Traceloop one Traceloop (:mod:`.traceloop`). Logfire
names spans by message template and keeps dicts and lists as JSON strings:

- ``Agent run: {name!r}`` -> agent (``name``);
- ``Function: {name}`` -> tool (``name``, ``input`` = JSON arguments, ``output`` = result, and
  ``error {message, data}`` on failure);
- ``Responses API with {gen_ai.request.model!r}`` / ``Chat completion with ...`` -> LLM call,
  usage in the ``usage`` JSON (``input_tokens``, ``output_tokens``,
  ``input_tokens_details.cached_tokens``), messages in the ``events`` list (read by
  :mod:`.genai_events`);
- ``Handoff: {from_agent} → {to_agent}`` and ``Turn ...`` spans carry no tool call.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracegrade.normalize.messages import as_int, as_text, loads_maybe, parse_arguments
from tracegrade.normalize.view import Context, SpanView, attr_str
from tracegrade.spans import Span

NAME = "openai-agents"
_TEMPLATE = "logfire.msg_template"


def _read_usage(span: Span, view: SpanView) -> None:
    usage = loads_maybe(span.attributes.get("usage"))
    if not isinstance(usage, Mapping) or view.has_usage:
        return
    details = found if isinstance(found := usage.get("input_tokens_details"), Mapping) else {}
    view.fill(
        input_tokens=as_int(usage.get("input_tokens")),
        output_tokens=as_int(usage.get("output_tokens")),
        cached_input_tokens=as_int(details.get("cached_tokens")),
    )


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from Logfire OpenAI-Agents spans; True if the span is one."""
    template = str(span.attributes.get(_TEMPLATE) or span.name)
    attrs = span.attributes
    if template.startswith("Agent run:"):
        view.recognise(NAME, "agent")
        view.fill(agent_name=attr_str(span, "name", "agent_name"))
    elif template.startswith("Function:"):
        view.recognise(NAME, "tool")
        error = loads_maybe(attrs.get("error"))
        view.fill(
            tool_name=attr_str(span, "name"),
            tool_result=as_text(attrs.get("output")),
            tool_error=as_text(error.get("message") if isinstance(error, Mapping) else error),
        )
        if "input" in attrs:
            view.fill(tool_arguments=parse_arguments(attrs["input"]))
    elif template.startswith(
        ("Responses API with", "Chat completion with", "Chat Completion with")
    ):
        view.recognise(NAME, "llm")
        _read_usage(span, view)
    else:
        return False
    return True
