"""Google ADK's own span attributes: its 1.x layout (ADK 2.x selects it with
``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1``).

ADK records content on its spans whether or not the GenAI content switch is on
(``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS``, default on), as JSON in ``gcp.vertex.agent.*``
attributes, while its log events then carry ``<elided>``:

- ``call_llm`` spans (``gen_ai.system = gcp.vertex.agent``): ``gcp.vertex.agent.llm_request``
  ``{model, config: {system_instruction, tools}, contents: [Content]}`` and
  ``gcp.vertex.agent.llm_response`` ``{content: Content, finish_reason, usage_metadata:
  {prompt_token_count, candidates_token_count, cached_content_token_count}}``, Gemini
  ``Content`` objects (``role`` user/model, ``parts`` with ``text``, ``function_call {id,
  name, args}``, ``function_response {id, name, response}``). When the model wrapper adds its
  own ``generate_content`` child span, ``call_llm`` wraps it (one call, counted once).
- ``execute_tool`` spans: ``gcp.vertex.agent.tool_call_args`` (JSON; ``"N/A"`` on the merged
  span of parallel calls) and ``gcp.vertex.agent.tool_response`` (``{"result": value}`` for a
  non-dict return value, ``{"error": ...}`` from an error callback).
- ``gcp.vertex.agent.session_id`` is the conversation. Tool spans carry ``{}`` for the
  request and response: empty values are no record.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.normalize.envelopes import unwrap_result
from tracegrade.normalize.messages import (
    Message,
    as_int,
    as_text,
    loads_maybe,
    parse_arguments,
    parse_message,
)
from tracegrade.normalize.view import Context, SpanView, attr_str
from tracegrade.spans import Span

NAME = "google-adk"
PREFIX = "gcp.vertex.agent."
_EMPTY: tuple[Any, ...] = (None, "", "{}", {}, "N/A")


def _json(span: Span, key: str) -> Any:
    value = span.attributes.get(PREFIX + key)
    return None if value in _EMPTY else loads_maybe(value)


def _contents(items: Any) -> list[Message] | None:
    if not isinstance(items, (list, tuple)):
        return None
    messages = []
    for position, item in enumerate(items):
        message = parse_message(item) if isinstance(item, Mapping) else None
        if message is not None:
            message.position = position
            messages.append(message)
    return messages


def _system(config: Any) -> str | None:
    if not isinstance(config, Mapping):
        return None
    instruction = config.get("system_instruction")
    if isinstance(instruction, Mapping):  # a Content
        message = parse_message({"role": "system", **instruction})
        return message.text if message else None
    return as_text(instruction) if instruction else None


def _read_llm(span: Span, view: SpanView, request: Any, response: Any) -> None:
    view.recognise(NAME, "llm")
    if isinstance(request, Mapping):
        view.fill(
            model=as_text(request.get("model")),
            input_messages=_contents(request.get("contents")),
            system_instructions=_system(request.get("config")),
        )
    if not isinstance(response, Mapping):
        return
    content = response.get("content")
    finish = as_text(response.get("finish_reason"))
    output = parse_message({"role": "model", **content}) if isinstance(content, Mapping) else None
    if output is not None:
        output.finish_reason = finish.lower() if finish else None
        tool_calls = bool(output.tool_calls)
        view.fill(
            output_messages=[output],
            finish_reasons=("tool_calls",)
            if tool_calls
            else ((finish.lower(),) if finish else None),
        )
    usage = response.get("usage_metadata")
    if isinstance(usage, Mapping) and not view.has_usage:
        view.fill(
            input_tokens=as_int(usage.get("prompt_token_count")),
            output_tokens=as_int(usage.get("candidates_token_count")),
            cached_input_tokens=as_int(usage.get("cached_content_token_count")),
        )


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill ``view`` from ADK's ``gcp.vertex.agent.*`` attributes; True if it has any."""
    if not view.has_key_prefix(PREFIX):
        return False
    view.fill(conversation_id=attr_str(span, PREFIX + "session_id"))
    request, response = _json(span, "llm_request"), _json(span, "llm_response")
    if request is not None or response is not None:
        _read_llm(span, view, request, response)
        return True
    arguments = span.attributes.get(PREFIX + "tool_call_args")
    result = span.attributes.get(PREFIX + "tool_response")
    if arguments is None and result is None:
        view.recognise(NAME)
        return True
    view.recognise(NAME, "tool")
    if arguments not in _EMPTY:
        view.fill(tool_arguments=parse_arguments(arguments))
    if result not in _EMPTY:
        view.fill(tool_result=unwrap_result(result))
    return True
