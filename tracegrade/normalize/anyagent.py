"""mozilla-ai/any-agent's own span attributes (files converted by
:mod:`tracegrade.otlp.anyagent`).

- LLM spans: ``gen_ai.operation.name = call_llm``, ``gen_ai.input.messages`` in the OpenAI chat
  shape (``{role, content}``, not parts), and ``gen_ai.output``: with ``gen_ai.output.type =
  json`` a list of ``{"tool.name", "tool.args"}`` tool calls (no ids; args a JSON string or an
  object), otherwise the answer text;
- tool spans: ``execute_tool`` with ``gen_ai.tool.args`` (arguments) and ``gen_ai.output``
  (the result).
"""

from __future__ import annotations

from collections.abc import Mapping

from tracegrade.normalize.messages import Message, Part, as_text, loads_maybe, parse_arguments
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import Span

NAME = "any-agent"


def _output_message(span: Span) -> Message | None:
    raw = span.attributes.get("gen_ai.output")
    if raw is None:
        return None
    value = loads_maybe(raw) if span.attributes.get("gen_ai.output.type") == "json" else raw
    if (
        isinstance(value, (list, tuple))
        and value
        and all(isinstance(v, Mapping) and "tool.name" in v for v in value)
    ):
        calls = [
            Part(
                "tool_call", name=str(v["tool.name"]), arguments=parse_arguments(v.get("tool.args"))
            )
            for v in value
        ]
        return Message("assistant", calls, "tool_calls")
    return Message("assistant", [Part("text", content=as_text(raw))], "stop")


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from any-agent attributes; True if the span uses them."""
    attrs = span.attributes
    operation = attrs.get("gen_ai.operation.name")
    if operation == "call_llm":
        view.recognise(NAME, "llm")
        output = _output_message(span)
        view.fill(
            output_messages=[output] if output else None,
            finish_reasons=(output.finish_reason,) if output and output.finish_reason else None,
        )
        return True
    if operation == "execute_tool" and ("gen_ai.tool.args" in attrs or "gen_ai.output" in attrs):
        view.recognise(NAME, "tool")
        view.fill(tool_result=as_text(attrs.get("gen_ai.output")))
        if "gen_ai.tool.args" in attrs:
            view.fill(tool_arguments=parse_arguments(attrs["gen_ai.tool.args"]))
        return True
    return False
