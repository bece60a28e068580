"""Message parts in every shape providers and frameworks record them, read into one model.

A part is recognised by the keys it carries, never by the convention that wrote it:

- text: ``type: text`` / ``output_text`` / ``input_text``, or a string ``text`` (semconv,
  OpenAI, Anthropic, Gemini, Bedrock, Haystack);
- tool call: ``type: tool_call {id, name, arguments}`` (GenAI semconv), ``type: tool_use
  {id, name, input}`` (Anthropic Messages), ``type: function_call {call_id, name,
  arguments}`` (OpenAI Responses), ``type: tool-call {toolCallId, toolName, input}`` (Vercel
  AI SDK), ``function: {name, arguments}`` with ``id`` (OpenAI chat ``tool_calls``),
  ``toolUse {toolUseId, name, input}`` (Bedrock Converse), ``function_call`` /
  ``functionCall {id?, name, args}`` (Gemini), ``tool_call {tool_name, arguments, id}``
  (Haystack ``ChatMessage``), ``part_kind: tool-call {tool_name, args, tool_call_id}``
  (pydantic-ai), ``{"tool.name", "tool.args"}`` (any-agent);
- tool result: ``type: tool_call_response {id, response | result}`` (GenAI semconv),
  ``type: tool_result {tool_use_id, content, is_error}`` (Anthropic), ``type:
  function_call_output {call_id, output}`` (OpenAI Responses), ``type: tool-result
  {toolCallId, output | result}`` (Vercel AI SDK), ``toolResult {toolUseId, content, status}``
  (Bedrock), ``function_response`` / ``functionResponse {id?, name, response}`` (Gemini),
  ``tool_call_result {result, origin, error}`` (Haystack), ``part_kind: tool-return`` /
  ``retry-prompt`` (pydantic-ai);
- Genkit: ``toolRequest {name, ref, input}``, ``toolResponse {name, ref, output}``;
- reasoning: ``type: reasoning`` / ``thinking``, ``reasoningContent``, ``thought: true``.

A result that reports an error (Anthropic ``is_error``, Bedrock ``status: error``, Vercel
``error-*`` outputs, Haystack ``error: true``) reads ``Error: ...`` so that every later
rule sees an error the same way. Gemini (and Google ADK) wrap a non-object return value as
``{"result": value}``: the value is the result.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tracegrade.spans import loads_maybe, parse_arguments

TOOL_CALLS_FINISH = frozenset({"tool_calls", "tool_call", "function_call", "tool_use"})
"""Finish reasons meaning "the model asked for tools" (semconv ``tool_call``, OpenAI
``tool_calls``, Bedrock/Anthropic ``tool_use``)."""

PLACEHOLDERS = frozenset({"<elided>", "<redacted>", "[redacted]", "readacted", "<hidden>"})
"""Texts instrumentations write in place of content they did not capture (Google ADK's log
events ``<elided>``, the openai-agents bridge's ``readacted``): not content. A text part
holding one is a ``placeholder`` part, so it is never taken for a message's text."""

_TEXT_TYPES = frozenset({"text", "output_text", "input_text"})
_REASONING_TYPES = frozenset({"reasoning", "thinking", "redacted_thinking"})


@dataclass(slots=True)
class Part:
    """One message part: ``type`` is ``text``, ``tool_call``, ``tool_call_response``,
    ``reasoning``, ``placeholder`` or the original type for anything else."""

    type: str
    content: str | None = None
    id: str | None = None
    name: str | None = None
    arguments: Any = None
    response: Any = None
    arguments_recorded: bool = True
    """False for a ``tool_call`` whose arguments were not captured (content capture off)."""


@dataclass(slots=True)
class Message:
    """One chat message (role ``system``/``user``/``assistant``/``tool`` or another string)."""

    role: str
    parts: list[Part] = field(default_factory=list)
    finish_reason: str | None = None
    position: int | None = None
    """Index of the message in the request's message list, when known. Flattened attributes
    (``gen_ai.prompt.{i}.*``) keep it even when the SDK's attribute limit dropped the earlier
    messages, so replays of one history line up by position."""
    text: str | None = field(init=False, repr=False, compare=False)
    """The concatenated text parts, or ``None`` when there are none."""
    tool_calls: list[Part] = field(init=False, repr=False, compare=False)
    """The ``tool_call`` parts, in order."""
    tool_responses: list[Part] = field(init=False, repr=False, compare=False)
    """The ``tool_call_response`` parts, in order.

    ``text``, ``tool_calls`` and ``tool_responses`` are computed once, when the message is
    made (a replayed history's messages are shared between calls, and every history walk reads
    them): ``parts`` must not change afterwards."""

    def __post_init__(self) -> None:
        texts: list[str] = []
        calls: list[Part] = []
        responses: list[Part] = []
        for part in self.parts:
            kind = part.type
            if kind == "text":
                if part.content:
                    texts.append(part.content)
            elif kind == "tool_call":
                calls.append(part)
            elif kind == "tool_call_response":
                responses.append(part)
        self.text = "".join(texts) if texts else None
        self.tool_calls = calls
        self.tool_responses = responses


# --- scalar helpers ------------------------------------------------------------------------------


def as_text(value: Any) -> str | None:
    """A tool result or content value as text: strings unchanged, structures as JSON."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return json.dumps(value, ensure_ascii=False, default=str)


def opt_str(value: Any) -> str | None:
    """``value`` as a string, ``None`` for ``None`` and ``""``."""
    return None if value is None or value == "" else str(value)


_PLACEHOLDER_CHARS = max(len(p) for p in PLACEHOLDERS) + 8
"""Longer texts are never placeholders (checked before the text is stripped and lowered)."""


def is_placeholder(text: object) -> bool:
    """True when ``text`` is a content placeholder (see :data:`PLACEHOLDERS`)."""
    return (
        isinstance(text, str)
        and len(text) <= _PLACEHOLDER_CHARS
        and text.strip().lower() in PLACEHOLDERS
    )


def text_part(text: str | None) -> Part:
    """A text part, or a ``placeholder`` part for a placeholder text."""
    return Part("placeholder" if is_placeholder(text) else "text", content=text)


def block_text(value: Any) -> str | None:
    """A value as text, content blocks (``[{"text": ...}, ...]``, or their JSON string) as
    their text joined; anything else as :func:`as_text` gives it."""
    decoded = loads_maybe(value) if isinstance(value, str) and value[:2] == "[{" else value
    if isinstance(decoded, (list, tuple)) and decoded:
        texts = [i.get("text") if isinstance(i, Mapping) else None for i in decoded]
        if all(isinstance(t, str) for t in texts):
            return "".join(t for t in texts if isinstance(t, str))
        jsons = [i.get("json") if isinstance(i, Mapping) else None for i in decoded]
        if all(j is not None for j in jsons) and len(jsons) == 1:
            return as_text(jsons[0])
    return as_text(value)


def _errored(text: str | None, error: bool) -> str | None:
    """A result text that reports an error reads ``Error: ...`` (module docstring)."""
    if error and text is not None and not text.lower().startswith("error"):
        return f"Error: {text}"
    return text


def call_part(call_id: Any, name: Any, arguments: Any, recorded: bool) -> Part:
    """A ``tool_call`` part; ``arguments`` parsed from JSON where they parse."""
    return Part(
        "tool_call",
        id=opt_str(call_id),
        name=opt_str(name),
        arguments=parse_arguments(arguments),
        arguments_recorded=recorded,
    )


def result_part(call_id: Any, name: Any, response: Any, error: bool = False) -> Part:
    """A ``tool_call_response`` part with its text (content blocks joined)."""
    return Part(
        "tool_call_response",
        id=opt_str(call_id),
        name=opt_str(name),
        response=_errored(block_text(response), error),
    )


# --- typed parts ---------------------------------------------------------------------------------


def _typed(kind: str, raw: Mapping[str, Any]) -> Part | None:
    """A part that names its ``type`` (semconv, OpenAI, Anthropic, Vercel AI SDK)."""
    if kind in _TEXT_TYPES:
        return text_part(as_text(raw.get("content", raw.get("text"))))
    if kind == "tool_call":
        return call_part(raw.get("id"), raw.get("name"), raw.get("arguments"), "arguments" in raw)
    if kind == "tool_call_response":
        response = raw["response"] if "response" in raw else raw.get("result")
        return result_part(raw.get("id"), raw.get("name"), unwrapped_result(response))
    if kind in _REASONING_TYPES:
        return Part("reasoning", content=as_text(raw.get("content", raw.get("thinking"))))
    if kind == "tool_use":
        if "name" not in raw and isinstance(raw.get("tool_call"), Mapping):
            return _openai_call(raw["tool_call"])  # OpenInference's flattened Anthropic block
        return call_part(raw.get("id"), raw.get("name"), raw.get("input"), "input" in raw)
    if kind == "tool_result":
        return result_part(
            raw.get("tool_use_id"), raw.get("name"), raw.get("content"), raw.get("is_error") is True
        )
    if kind == "function_call" and "name" in raw:
        call_id = raw.get("call_id", raw.get("id"))
        return call_part(call_id, raw.get("name"), raw.get("arguments"), "arguments" in raw)
    if kind == "function_call_output":
        return result_part(raw.get("call_id"), raw.get("name"), raw.get("output"))
    if kind == "tool-call":
        arguments = raw.get("input", raw.get("args"))
        recorded = "input" in raw or "args" in raw
        return call_part(raw.get("toolCallId"), raw.get("toolName"), arguments, recorded)
    if kind == "tool-result":
        return _ai_sdk_result(raw)
    if kind == "function" and isinstance(raw.get("function"), Mapping):
        return _openai_call(raw)
    return None


def unwrapped_result(value: Any) -> Any:
    """A result wrapped as ``{"result": value}``, the value: Gemini's function responses must
    be objects, so the SDKs wrap any other return value so (google-genai, Google ADK), and
    instrumentations record the wrapper."""
    if isinstance(value, str) and value.startswith('{"result"'):
        value = loads_maybe(value)
    if isinstance(value, Mapping) and len(value) == 1 and "result" in value:
        return value["result"]
    return value


def _ai_sdk_result(raw: Mapping[str, Any]) -> Part:
    """Vercel AI SDK ``tool-result``: ``output: {type, value}`` (``result`` before v5);
    output types ``error-text`` / ``error-json`` report an error."""
    output = raw.get("output", raw.get("result"))
    error = False
    if isinstance(output, Mapping) and "type" in output and "value" in output:
        error = str(output["type"]).startswith("error")
        output = output["value"]
    return result_part(raw.get("toolCallId"), raw.get("toolName"), output, error)


def _openai_call(raw: Mapping[str, Any]) -> Part:
    """An OpenAI chat ``tool_calls`` item ``{id, function: {name, arguments}}`` (or the
    function's keys at the top: LangChain ``{id, name, args}``)."""
    function = found if isinstance(found := raw.get("function"), Mapping) else raw
    if "arguments" in function:
        arguments, recorded = function.get("arguments"), True
    else:
        arguments, recorded = function.get("args"), "args" in function
    return call_part(raw.get("id"), function.get("name", raw.get("name")), arguments, recorded)


# --- untyped parts -------------------------------------------------------------------------------


def _gemini(raw: Mapping[str, Any]) -> Part | None:
    """A Gemini ``Part``: ``function_call``/``functionCall``, ``function_response`` /
    ``functionResponse`` (a ``{"result": value}`` wrapper gives the value)."""
    call = raw.get("function_call", raw.get("functionCall"))
    if isinstance(call, Mapping):
        recorded = call.get("args") is not None or "partial_args" not in call
        return call_part(call.get("id"), call.get("name"), call.get("args"), recorded)
    response = raw.get("function_response", raw.get("functionResponse"))
    if isinstance(response, Mapping):
        value = unwrapped_result(response.get("response"))
        error = isinstance(value, Mapping) and set(value) == {"error"}
        if error and isinstance(value, Mapping):
            value = value["error"]
        return result_part(response.get("id"), response.get("name"), value, error)
    return None


def _bedrock(raw: Mapping[str, Any]) -> Part | None:
    """Bedrock Converse blocks (Strands Agents): ``toolUse``, ``toolResult``,
    ``reasoningContent``."""
    use = raw.get("toolUse")
    if isinstance(use, Mapping):
        return call_part(use.get("toolUseId"), use.get("name"), use.get("input"), "input" in use)
    result = raw.get("toolResult")
    if isinstance(result, Mapping):
        error = result.get("status") == "error"
        return result_part(result.get("toolUseId"), None, result.get("content"), error)
    if "reasoningContent" in raw:
        return Part("reasoning", content=as_text(raw["reasoningContent"]))
    return None


def _haystack(raw: Mapping[str, Any]) -> Part | None:
    """Haystack ``ChatMessage`` content items: ``tool_call {tool_name, arguments, id}`` and
    ``tool_call_result {result, origin: <the call>, error}``."""
    call = raw.get("tool_call")
    if not isinstance(call, Mapping) and "tool_name" in raw and "arguments" in raw:
        call = raw  # a ToolCall itself (its repr read back: :mod:`.reprs`)
    if isinstance(call, Mapping) and "tool_name" in call:
        recorded = "arguments" in call
        return call_part(call.get("id"), call["tool_name"], call.get("arguments"), recorded)
    result = raw.get("tool_call_result")
    if (
        not isinstance(result, Mapping)
        and "result" in raw
        and isinstance(raw.get("origin"), Mapping)
    ):
        result = raw  # a ToolCallResult itself
    if isinstance(result, Mapping) and "result" in result:
        origin = found if isinstance(found := result.get("origin"), Mapping) else {}
        error = result.get("error") is True
        return result_part(origin.get("id"), origin.get("tool_name"), result["result"], error)
    return None


def _pydantic_ai(raw: Mapping[str, Any]) -> Part | None:
    """pydantic-ai message parts (``part_kind``): ``text``, ``tool-call``, ``tool-return``,
    ``retry-prompt`` (a tool error sent back), ``thinking``; prompt parts are text."""
    kind = raw.get("part_kind")
    if not isinstance(kind, str):
        return None
    if kind == "tool-call":
        call_id, name = raw.get("tool_call_id"), raw.get("tool_name")
        return call_part(call_id, name, raw.get("args"), "args" in raw)
    if kind in ("tool-return", "retry-prompt"):
        call_id, name = raw.get("tool_call_id"), raw.get("tool_name")
        return result_part(call_id, name, raw.get("content"), kind == "retry-prompt")
    if kind == "thinking":
        return Part("reasoning", content=as_text(raw.get("content")))
    return text_part(as_text(raw.get("content")))


def _genkit(raw: Mapping[str, Any]) -> Part | None:
    """Genkit parts: ``toolRequest {name, ref, input}`` and ``toolResponse {name, ref,
    output}`` (``ref`` is the call id)."""
    request = raw.get("toolRequest")
    if isinstance(request, Mapping):
        recorded = "input" in request
        return call_part(request.get("ref"), request.get("name"), request.get("input"), recorded)
    response = raw.get("toolResponse")
    if isinstance(response, Mapping):
        return result_part(response.get("ref"), response.get("name"), response.get("output"))
    return None


def _any_agent(raw: Mapping[str, Any]) -> Part | None:
    """An any-agent tool call ``{"tool.name", "tool.args"}`` (no id)."""
    if "tool.name" not in raw:
        return None
    return call_part(None, raw["tool.name"], raw.get("tool.args"), "tool.args" in raw)


_UNTYPED = (_gemini, _bedrock, _haystack, _pydantic_ai, _genkit, _any_agent)


def part_of(raw: Mapping[str, Any]) -> Part | None:
    """The part ``raw`` is, recognised by its keys (module docstring); ``None`` when it is
    no part this module knows."""
    kind = raw.get("type")
    if isinstance(kind, str) and kind:
        typed = _typed(kind, raw)
        if typed is not None:
            return typed
    for reader in _UNTYPED:
        part = reader(raw)
        if part is not None:
            return part
    if isinstance(raw.get("function"), Mapping):
        return _openai_call(raw)
    text = raw.get("text")
    if isinstance(text, str):
        return Part("reasoning" if raw.get("thought") is True else "text", content=text)
    return None


def any_part(raw: Mapping[str, Any]) -> Part:
    """:func:`part_of`, or a part of the item's own type holding its ``content`` (a text part
    when it has no type)."""
    part = part_of(raw)
    if part is not None:
        return part
    kind = raw.get("type")
    if not kind and "content" in raw:
        return text_part(as_text(raw.get("content")))
    return Part(str(kind or "unknown"), content=as_text(raw.get("content")))


def call_parts(raw: Any) -> list[Part]:
    """A list of tool calls in any shape of the table (OpenAI ``tool_calls``, Vercel
    ``toolCalls``, any-agent, Haystack ``tool_calls``, LangChain ``{id, name, args}``) as
    ``tool_call`` parts; items that are no call are skipped."""
    parts = []
    for item in loads_maybe(raw) if isinstance(raw, str) else raw or ():
        if not isinstance(item, Mapping):
            continue
        part = part_of(item)
        if part is None and "name" in item and ("args" in item or "arguments" in item):
            part = _openai_call(item)
        if part is None and "tool_name" in item:
            part = _haystack({"tool_call": item})
        if part is None and "toolName" in item:
            part = _typed("tool-call", item)
        if part is not None and part.type == "tool_call":
            parts.append(part)
    return parts
