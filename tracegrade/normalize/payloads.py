"""Model requests, responses and usage in every provider's shape, recognised by what they carry.

Frameworks that trace themselves often record the model call as the request and response
objects they sent and received (one JSON blob per attribute, or a Python repr: :mod:`.reprs`)
instead of the GenAI content attributes. This module reads such a payload by its shape:

**Requests** (:func:`read_request`): ``{messages, system?, model?}`` (OpenAI chat, Anthropic
Messages: ``system`` a string or text blocks); ``{contents, config: {system_instruction}}`` /
``systemInstruction`` (Gemini, Google ADK's ``llm_request``); ``{input, instructions}``
(OpenAI Responses: ``input`` text or items); ``{system?, prompt?, messages?}`` (Vercel AI
SDK's ``ai.prompt``); a bare list of messages.

**Responses** (:func:`read_response`): ``{choices: [{message, finish_reason}], usage, model,
id}`` (OpenAI chat); ``{output: [items], usage, model, id}`` (OpenAI Responses);
``{content: [blocks], stop_reason, usage, model, id}`` (Anthropic); ``{candidates:
[{content, finish_reason}], usage_metadata, model_version, response_id}`` in snake or camel
case (Gemini; Google ADK's ``llm_response`` has ``content`` at the top); ``{output:
{message}, stopReason, usage}`` (Bedrock Converse); ``{replies: [...]}`` (Haystack);
``{message, finishReason, usage}`` (Genkit); an assistant message or a list of them.

**Usage** (:func:`read_usage`): ``prompt_tokens``/``completion_tokens`` (OpenAI chat),
``input_tokens``/``output_tokens`` (Responses, Anthropic), ``inputTokens``/``outputTokens``
(Bedrock, Vercel AI SDK), ``prompt_token_count``/``candidates_token_count`` and camel case
(Gemini), ``request_tokens``/``response_tokens`` (older pydantic-ai); cached input from
``prompt_tokens_details.cached_tokens``, ``input_tokens_details.cached_tokens``,
``cache_read_input_tokens``, ``cached_content_token_count``, ``cacheReadInputTokens``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.normalize.messages import (
    TOOL_CALLS_FINISH,
    Message,
    Part,
    as_int,
    parse_message,
    parse_messages,
    role_of,
)
from tracegrade.normalize.parts import any_part, as_text, opt_str, part_of, text_part
from tracegrade.normalize.reprs import looks_like_repr, parse_repr
from tracegrade.normalize.view import SpanView
from tracegrade.spans import loads_maybe


@dataclass
class Reading:
    """What one payload says about a model call; ``None`` fields were not in it. Token counts
    are tokens."""

    input_messages: list[Message] | None = None
    output_messages: list[Message] | None = None
    system_instructions: str | None = None
    model: str | None = None
    response_id: str | None = None
    finish_reasons: tuple[str, ...] | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cached_input_tokens: int | None = None
    fields: list[str] = field(default_factory=list)
    """The reading's non-empty fields, in the order above (for provenance)."""

    def done(self) -> Reading:
        self.fields = [
            name
            for name in (
                "input_messages",
                "output_messages",
                "system_instructions",
                "model",
                "response_id",
                "finish_reasons",
                "input_tokens",
                "output_tokens",
                "cached_input_tokens",
            )
            if getattr(self, name) not in (None, (), [])
        ]
        return self


# --- usage ---------------------------------------------------------------------------------------

_USAGE_PAIRS = (
    ("prompt_tokens", "completion_tokens"),
    ("input_tokens", "output_tokens"),
    ("inputTokens", "outputTokens"),
    ("prompt_token_count", "candidates_token_count"),
    ("promptTokenCount", "candidatesTokenCount"),
    ("request_tokens", "response_tokens"),
    ("promptTokens", "completionTokens"),
)
_CACHED = (
    ("prompt_tokens_details", "cached_tokens"),
    ("input_tokens_details", "cached_tokens"),
    (None, "cache_read_input_tokens"),
    (None, "cached_content_token_count"),
    (None, "cachedContentTokenCount"),
    (None, "cacheReadInputTokens"),
    (None, "cache_read_tokens"),
    ("inputTokenDetails", "cacheReadTokens"),
)


def read_usage(value: Any) -> tuple[int | None, int | None, int | None] | None:
    """``(input, output, cached input)`` tokens of a usage object (module docstring), or
    ``None`` when ``value`` is none."""
    if not isinstance(value, Mapping):
        return None
    for input_key, output_key in _USAGE_PAIRS:
        if input_key in value or output_key in value:
            tokens_in, tokens_out = as_int(value.get(input_key)), as_int(value.get(output_key))
            if tokens_in is None and tokens_out is None:
                continue
            return tokens_in, tokens_out, _cached(value)
    return None


def _cached(usage: Mapping[str, Any]) -> int | None:
    for outer, key in _CACHED:
        holder = usage.get(outer) if outer else usage
        if isinstance(holder, Mapping) and key in holder:
            return as_int(holder[key])
    return None


def _usage_of(payload: Mapping[str, Any]) -> tuple[int | None, int | None, int | None] | None:
    for key in ("usage", "usage_metadata", "usageMetadata", "token_usage"):
        found = read_usage(payload.get(key))
        if found is not None:
            return found
    return None


# --- requests ------------------------------------------------------------------------------------


def system_text(value: Any) -> str | None:
    """System instructions as text: a string, text blocks/parts, or a Gemini ``Content``."""
    if isinstance(value, str):
        return value or None
    if isinstance(value, Mapping):
        parts = value.get("parts")
        if isinstance(parts, list):
            return system_text(parts)
        return as_text(value.get("text", value.get("content"))) or None
    if isinstance(value, (list, tuple)):
        texts = [t for item in value if (t := system_text(item))]
        return "\n".join(texts) or None
    return None


def _response_items(items: Sequence[Any]) -> list[Message]:
    """OpenAI Responses items (``input`` or ``output``): messages, and ``function_call`` /
    ``function_call_output`` items as assistant calls / tool results; the calls of one turn
    stay one assistant message."""
    messages: list[Message] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "reasoning":
            continue
        message = parse_message(item)
        if message is None:
            continue
        previous = messages[-1] if messages else None
        if (
            previous is not None
            and message.role == "assistant"
            and previous.role == "assistant"
            and message.tool_calls
            and not message.text
        ):
            messages[-1] = Message("assistant", [*previous.parts, *message.parts])
        else:
            messages.append(message)
    for position, message in enumerate(messages):
        message.position = position
    return messages


def _gemini_system(payload: Mapping[str, Any]) -> str | None:
    config = payload.get("config", payload.get("generation_config"))
    for holder in (config, payload):
        if isinstance(holder, Mapping):
            for key in ("system_instruction", "systemInstruction"):
                if holder.get(key):
                    return system_text(holder[key])
    return None


def read_request(value: Any) -> Reading | None:
    """What a model request payload says (module docstring), or ``None`` when ``value`` is
    no request."""
    if isinstance(value, (list, tuple)):
        messages = parse_messages(list(value))
        return Reading(input_messages=messages).done() if messages else None
    if not isinstance(value, Mapping):
        return None
    reading = Reading(model=opt_str(value.get("model")))
    if isinstance(value.get("messages"), (list, tuple)):
        reading.input_messages = parse_messages(list(value["messages"])) or []
        reading.system_instructions = system_text(value.get("system"))
    elif isinstance(value.get("contents"), (list, tuple)):
        reading.input_messages = parse_messages(list(value["contents"])) or []
        reading.system_instructions = _gemini_system(value)
    elif "input" in value and ("model" in value or "instructions" in value):
        items = value["input"]
        reading.input_messages = (
            [Message("user", [text_part(items)])]
            if isinstance(items, str)
            else _response_items(items)
            if isinstance(items, (list, tuple))
            else None
        )
        reading.system_instructions = system_text(value.get("instructions"))
    elif isinstance(value.get("prompt"), str) or isinstance(value.get("system"), str):
        reading.input_messages = _prompt_messages(value)
    else:
        return None
    if reading.system_instructions and reading.input_messages is not None:
        first = reading.input_messages[0] if reading.input_messages else None
        if first is None or first.role != "system":
            system = Message("system", [text_part(reading.system_instructions)])
            reading.input_messages = [system, *reading.input_messages]
    return reading.done()


def _prompt_messages(value: Mapping[str, Any]) -> list[Message]:
    """Vercel AI SDK ``ai.prompt``: ``{system?, prompt?, messages?}``."""
    messages = []
    if isinstance(value.get("prompt"), str):
        messages.append(Message("user", [text_part(value["prompt"])]))
    return messages


# --- responses -----------------------------------------------------------------------------------


def _finish(reason: Any, messages: Sequence[Message]) -> tuple[str, ...] | None:
    """Finish reasons normalised: a response that asked for tools reads ``tool_calls``."""
    text = opt_str(reason)
    if text is not None:
        text = text.lower()
        if text in TOOL_CALLS_FINISH or text == "tool-calls":
            return ("tool_calls",)
        if any(m.tool_calls for m in messages):
            return ("tool_calls",)
        return (text,)
    if any(m.tool_calls for m in messages):
        return ("tool_calls",)
    return None


def _assistant(content: Any, finish: Any = None) -> Message:
    """An assistant message from content blocks, a Gemini ``Content`` or text."""
    if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
        parts = [any_part(p) for p in content["parts"] if isinstance(p, Mapping)]
    elif isinstance(content, (list, tuple)):
        parts = [p for item in content if isinstance(item, Mapping) and (p := part_of(item))]
        parts += [text_part(item) for item in content if isinstance(item, str)]
    elif isinstance(content, str):
        parts = [text_part(content)]
    else:
        parts = []
    return Message("assistant", [p for p in parts if p.type != "reasoning"], opt_str(finish))


def _choices(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    choices = payload.get("choices")
    if not isinstance(choices, (list, tuple)) or not choices:
        return None
    messages, finish = [], None
    for choice in choices:
        if isinstance(choice, Mapping):
            message = parse_message(
                {
                    "message": choice.get("message") or {},
                    "finish_reason": choice.get("finish_reason"),
                }
            )
            if message is not None:
                messages.append(message)
            finish = finish or choice.get("finish_reason")
    return messages, finish


def _candidates(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    candidates = payload.get("candidates")
    if isinstance(candidates, (list, tuple)) and candidates:
        first = candidates[0] if isinstance(candidates[0], Mapping) else {}
        finish = first.get("finish_reason", first.get("finishReason"))
        return [_assistant(first.get("content"), finish)], finish
    content = payload.get("content")
    if isinstance(content, Mapping) and isinstance(content.get("parts"), list):
        finish = payload.get("finish_reason", payload.get("finishReason"))
        return [_assistant(content, finish)], finish  # Google ADK's llm_response
    return None


def _blocks(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    """Anthropic ``{content: [blocks], stop_reason}`` or Bedrock ``{output: {message}}``."""
    output = payload.get("output")
    if isinstance(output, Mapping) and isinstance(output.get("message"), Mapping):
        finish = payload.get("stopReason", payload.get("stop_reason"))
        message = output["message"]
        return [_assistant(message.get("content"), finish)], finish
    content = payload.get("content")
    if isinstance(content, list) and (
        "stop_reason" in payload or payload.get("role") == "assistant"
    ):
        finish = payload.get("stop_reason")
        return [_assistant(content, finish)], finish
    return None


def _message(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    """``{message: <assistant message>, finishReason, usage}`` (Genkit's model responses; an
    OpenAI choice has the same form)."""
    inner = payload.get("message")
    if not isinstance(inner, Mapping) or role_of(inner.get("role")) != "assistant":
        return None
    message = parse_message(inner)
    if message is None:
        return None
    return [message], payload.get("finishReason", payload.get("finish_reason"))


def _replies(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    """A generator's ``{"replies": [assistant messages]}`` (Haystack), each reply's ``meta``
    holding its finish reason (and model and usage: :func:`_meta_of`)."""
    replies = payload.get("replies")
    if not isinstance(replies, (list, tuple)) or not replies:
        return None
    messages = [m for m in (parse_message(r) for r in replies if isinstance(r, Mapping)) if m]
    if not messages or any(m.role != "assistant" for m in messages):
        return None
    meta = replies[0].get("meta") if isinstance(replies[0], Mapping) else None
    finish = meta.get("finish_reason") if isinstance(meta, Mapping) else None
    return messages, finish


def _meta_of(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """Where a response keeps its model and usage when not at the top: the first reply's
    ``meta`` (Haystack)."""
    replies = payload.get("replies")
    if isinstance(replies, (list, tuple)) and replies and isinstance(replies[0], Mapping):
        meta = replies[0].get("meta")
        if isinstance(meta, Mapping):
            return meta
    return payload


def _outputs(payload: Mapping[str, Any]) -> tuple[list[Message], Any] | None:
    """OpenAI Responses: ``output`` items (``incomplete_details`` or ``status`` for why)."""
    output = payload.get("output")
    if not isinstance(output, (list, tuple)):
        return None
    messages = [m for m in _response_items(output) if m.role == "assistant"]
    if not messages:
        return None
    merged = Message("assistant", [p for m in messages for p in m.parts])
    return [merged], None if merged.tool_calls else "stop"


_RESPONSE_SHAPES = (_choices, _candidates, _blocks, _outputs, _replies, _message)
_RESPONSE_KEYS = frozenset(
    {"choices", "candidates", "output", "stop_reason", "replies", "message", "finishReason"}
)


def read_response(value: Any) -> Reading | None:
    """What a model response payload says (module docstring), or ``None`` when ``value`` is
    no response."""
    if isinstance(value, (list, tuple)):
        if len(value) == 1 and isinstance(value[0], Mapping) and _RESPONSE_KEYS & value[0].keys():
            return read_response(value[0])  # one response object in a list
        messages = parse_messages(list(value))
        if messages and all(m.role == "assistant" for m in messages):
            return Reading(output_messages=messages, finish_reasons=_finish(None, messages)).done()
        return None
    if not isinstance(value, Mapping):
        return None
    for shape in _RESPONSE_SHAPES:
        found = shape(value)
        if found is not None:
            messages, finish = found
            break
    else:
        if role_of(value.get("role")) != "assistant":
            return None
        message = parse_message(value)
        if message is None:
            return None
        messages, finish = [message], value.get("finish_reason")
    holder = _meta_of(value)
    usage = _usage_of(holder)
    reading = Reading(
        output_messages=messages,
        model=opt_str(holder.get("model", holder.get("model_version", holder.get("modelVersion")))),
        response_id=opt_str(value.get("id", value.get("response_id", value.get("responseId")))),
        finish_reasons=_finish(finish, messages),
    )
    if usage is not None:
        reading.input_tokens, reading.output_tokens, reading.cached_input_tokens = usage
    return reading.done()


def read_output_message(text: Any, tool_calls: Sequence[Part], finish: Any) -> list[Message] | None:
    """An assistant message assembled from a response recorded field by field (its text, its
    tool calls, its finish reason: the Vercel AI SDK's ``ai.response.*``), or ``None``."""
    parts = [text_part(text)] if isinstance(text, str) and text else []
    parts += list(tool_calls)
    if not parts:
        return None
    reason = _finish(finish, [Message("assistant", parts)])
    return [Message("assistant", parts, reason[0] if reason else None)]


# --- into a span view -----------------------------------------------------------------------


_READING_FIELDS = (
    "input_messages",
    "output_messages",
    "system_instructions",
    "model",
    "response_id",
    "finish_reasons",
)


def apply_reading(reading: Reading, origin: str, view: SpanView) -> bool:
    """Fill ``view`` from a payload's :class:`~.payloads.Reading`; True when any field was
    set."""
    found = False
    for name in _READING_FIELDS:
        found = view.fill_from(origin, name, getattr(reading, name)) or found
    if reading.input_tokens is not None or reading.output_tokens is not None:
        found = (
            usage_into(
                view,
                origin,
                reading.input_tokens,
                reading.output_tokens,
                reading.cached_input_tokens,
            )
            or found
        )
    return found


def usage_into(view: SpanView, origin: str, tokens_in: Any, tokens_out: Any, cached: Any) -> bool:
    """Fill the view's usage (tokens) when it has none; True when it was set."""
    if view.has_usage:
        return False
    view.fill_from(origin, "input_tokens", tokens_in)
    view.fill_from(origin, "output_tokens", tokens_out)
    view.fill_from(origin, "cached_input_tokens", cached)
    return True


def read_output_text(text: str) -> Reading | None:
    """A response recorded as its text only (any-agent's ``gen_ai.output``)."""
    messages = read_output_message(text, (), "stop")
    return Reading(output_messages=messages, finish_reasons=("stop",)).done() if messages else None


def payload_value(raw: Any) -> Any:
    """A payload attribute's value decoded: JSON, else a Python repr (:mod:`.reprs`), else
    itself."""
    value = loads_maybe(raw)
    if isinstance(value, str) and looks_like_repr(value):
        parsed = parse_repr(value)
        return value if parsed is None else parsed
    return value
