"""OpenAI-format chat transcripts to GenAI-semconv spans.

A transcript record is a JSON object holding a list of OpenAI chat messages under
``messages_key`` (``messages`` by default; tau-bench keeps them under ``traj``), or the list
itself. Each record becomes one trace:

- an ``invoke_agent`` root span (INTERNAL) carrying ``gen_ai.input.messages`` (the user
  messages, in order), ``gen_ai.output.messages`` (the last assistant text, unless the
  agent's last act was a tool call), ``gen_ai.system_instructions`` (the system message), and the
  record's other top-level fields as attributes (scalars as they are, objects and lists as
  JSON strings);
- one ``chat`` span (CLIENT) per assistant message, with ``gen_ai.input.messages`` (the
  conversation so far), ``gen_ai.output.messages`` (the message as parts),
  ``gen_ai.response.finish_reasons`` and, when the message carries ``usage``, token counts;
- one ``execute_tool`` span per tool result message, with ``gen_ai.tool.name``,
  ``gen_ai.tool.call.id``, ``gen_ai.tool.call.arguments`` (the requested arguments, as the
  model wrote them) and ``gen_ai.tool.call.result``.

Pairing a tool result with its call: by ``tool_call_id`` among the calls still waiting for a
result, preferring the most recent assistant turn (tau-bench repeats ids across turns, so the
result belongs to the call just before it); without a usable id, by tool name, then by
order. Transcripts carry no timestamps: spans get sequential 1 ms slots from a fixed epoch
and the root carries ``tracegrade.timing=synthetic``, which the normaliser reports as a gap.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_AGENT_NAME,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OPERATION_NAME,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_REQUEST_MODEL,
    GEN_AI_RESPONSE_FINISH_REASONS,
    GEN_AI_RESPONSE_MODEL,
    GEN_AI_SYSTEM_INSTRUCTIONS,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    GEN_AI_TOOL_TYPE,
    GEN_AI_USAGE_INPUT_TOKENS,
    GEN_AI_USAGE_OUTPUT_TOKENS,
)

from tracegrade.attributes import TIMING_ATTR
from tracegrade.errors import TranscriptError
from tracegrade.otlp.build import RequestBuilder, stable_hex
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.spans import SpanKind, parse_arguments

SYNTHETIC_EPOCH_NS = 946_684_800 * 10**9
"""2000-01-01T00:00:00Z: the start of every transcript trace (transcripts have no times)."""
SLOT_NS = 1_000_000
"""Each synthetic span lasts 1 ms."""
AGENT_NAME = "transcript"


@dataclass
class _Call:
    """A tool call requested by an assistant message, waiting for its result."""

    turn: int
    call_id: str | None
    name: str
    arguments: Any
    chat_span_id: str


def to_request(
    record: Any, *, messages_key: str = "messages", source: str = "<transcript>", index: int = 1
) -> ExportTraceServiceRequest:
    """Convert one transcript record to an OTLP trace request (see the module docstring).

    Raises:
        TranscriptError: no message list, or a message without a valid ``role``.
    """
    messages, extra = _split_record(record, messages_key)
    _validate(messages)
    trace_id = stable_hex("transcript", messages, extra, nbytes=16)
    builder = RequestBuilder(trace_id, {"service.name": str(extra.get("agent") or AGENT_NAME)})
    _Conversation(builder, messages, extra).build()
    return builder.request()


def _split_record(record: Any, messages_key: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    if isinstance(record, list):
        return record, {}
    if not isinstance(record, Mapping):
        raise TranscriptError(
            f"a transcript must be an object or a list of messages, got {type(record).__name__}"
        )
    messages = record.get(messages_key)
    if not isinstance(messages, list):
        keys = ", ".join(sorted(k for k, v in record.items() if isinstance(v, list))) or "none"
        raise TranscriptError(
            f"no message list under {messages_key!r} (list-valued keys: {keys}); use --messages-key"
        )
    return messages, {k: v for k, v in record.items() if k != messages_key}


def _validate(messages: Sequence[Any]) -> None:
    for number, message in enumerate(messages, start=1):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise TranscriptError(f"message {number} has no string 'role'")


def text_of(content: Any) -> str | None:
    """The text of an OpenAI message ``content`` (a string, or a list of content parts)."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            text
            for p in content
            if isinstance(p, Mapping) and isinstance(text := p.get("text"), str)
        ]
        return "".join(texts) if texts else None
    return str(content)


def _requested_calls(message: Mapping[str, Any]) -> list[tuple[str | None, str, Any]]:
    """(id, name, raw arguments) of an assistant message's tool calls, including the legacy
    ``function_call``."""
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append(
            (
                call.get("id"),
                str(function.get("name") or call.get("name") or ""),
                function.get("arguments"),
            )
        )
    legacy = message.get("function_call")
    if isinstance(legacy, Mapping):
        calls.append((None, str(legacy.get("name") or ""), legacy.get("arguments")))
    return calls


def semconv_parts(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The GenAI-semconv ``parts`` of one OpenAI message."""
    role = message["role"]
    text = text_of(message.get("content"))
    if role in ("tool", "function"):
        return [{"type": "tool_call_response", "id": message.get("tool_call_id"), "response": text}]
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    for call_id, name, arguments in _requested_calls(message):
        parts.append(
            {
                "type": "tool_call",
                "id": call_id,
                "name": name,
                "arguments": parse_arguments(arguments),
            }
        )
    return parts


def _semconv_message(message: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": message["role"], "parts": semconv_parts(message)}


class _Conversation:
    """Walks one transcript's messages and emits its spans into a :class:`RequestBuilder`."""

    def __init__(
        self, builder: RequestBuilder, messages: list[dict[str, Any]], extra: dict[str, Any]
    ):
        self.builder = builder
        self.messages = messages
        self.extra = extra
        self.root_id = builder.span_id("root")
        self.slot = 0
        self.pending: list[_Call] = []
        self.turn = 0

    def _next_slot(self) -> tuple[int, int]:
        self.slot += 1
        start = SYNTHETIC_EPOCH_NS + self.slot * SLOT_NS
        return start, start + SLOT_NS

    def build(self) -> None:
        for position, message in enumerate(self.messages):
            if message["role"] == "assistant":
                self._chat(position, message)
            elif message["role"] in ("tool", "function"):
                self._tool(position, message)
        self._root()

    def _model(self, message: Mapping[str, Any]) -> str | None:
        return message.get("model") or self.extra.get("model")

    def _chat(self, position: int, message: Mapping[str, Any]) -> None:
        self.turn += 1
        start, end = self._next_slot()
        span_id = self.builder.span_id("chat", position)
        calls = _requested_calls(message)
        model = self._model(message)
        usage = message.get("usage") or {}
        history = [_semconv_message(m) for m in self.messages[:position] if m["role"] != "system"]
        attributes = {
            GEN_AI_OPERATION_NAME: "chat",
            GEN_AI_REQUEST_MODEL: model,
            GEN_AI_RESPONSE_MODEL: model,
            GEN_AI_RESPONSE_FINISH_REASONS: ["tool_calls" if calls else "stop"],
            GEN_AI_USAGE_INPUT_TOKENS: usage.get("prompt_tokens", usage.get("input_tokens")),
            GEN_AI_USAGE_OUTPUT_TOKENS: usage.get("completion_tokens", usage.get("output_tokens")),
            GEN_AI_INPUT_MESSAGES: history,
            GEN_AI_OUTPUT_MESSAGES: [
                {**_semconv_message(message), "finish_reason": "tool_call" if calls else "stop"}
            ],
        }
        self.builder.add(
            span_id,
            f"chat {model}" if model else "chat",
            start_unix_nano=start,
            end_unix_nano=end,
            attributes=attributes,
            parent_span_id=self.root_id,
            kind=SpanKind.CLIENT,
        )
        self.pending.extend(_Call(self.turn, cid, name, args, span_id) for cid, name, args in calls)

    def _pair(self, message: Mapping[str, Any]) -> _Call | None:
        call_id, name = message.get("tool_call_id"), message.get("name")
        for key, value in (("call_id", call_id), ("name", name)):
            if value:
                matches = [c for c in self.pending if getattr(c, key) == value]
                if matches:
                    latest_turn = max(c.turn for c in matches)
                    return next(c for c in matches if c.turn == latest_turn)
        return self.pending[0] if self.pending else None

    def _tool(self, position: int, message: Mapping[str, Any]) -> None:
        call = self._pair(message)
        if call is not None:
            self.pending.remove(call)
        start, end = self._next_slot()
        name = (call.name if call else None) or message.get("name") or "unknown"
        attributes = {
            GEN_AI_OPERATION_NAME: "execute_tool",
            GEN_AI_TOOL_NAME: name,
            GEN_AI_TOOL_TYPE: "function",
            GEN_AI_TOOL_CALL_ID: message.get("tool_call_id") or (call.call_id if call else None),
            GEN_AI_TOOL_CALL_ARGUMENTS: call.arguments if call else None,
            GEN_AI_TOOL_CALL_RESULT: text_of(message.get("content")),
        }
        self.builder.add(
            self.builder.span_id("tool", position),
            f"execute_tool {name}",
            start_unix_nano=start,
            end_unix_nano=end,
            attributes=attributes,
            parent_span_id=self.root_id,
        )

    def _root(self) -> None:
        system = [text_of(m.get("content")) for m in self.messages if m["role"] == "system"]
        users = [_semconv_message(m) for m in self.messages if m["role"] == "user"]
        turns = [m for m in self.messages if m["role"] in ("assistant", "tool", "function")]
        last = turns[-1] if turns else None
        final = None
        if (
            last is not None
            and last["role"] == "assistant"
            and not _requested_calls(last)
            and text_of(last.get("content"))
        ):
            final = [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": text_of(last.get("content"))}],
                    "finish_reason": "stop",
                }
            ]
        name = str(self.extra.get("agent") or AGENT_NAME)
        attributes: dict[str, Any] = {
            GEN_AI_OPERATION_NAME: "invoke_agent",
            GEN_AI_AGENT_NAME: name,
            GEN_AI_INPUT_MESSAGES: users,
            GEN_AI_OUTPUT_MESSAGES: final,
            GEN_AI_SYSTEM_INSTRUCTIONS: [{"type": "text", "content": s} for s in system if s]
            or None,
            TIMING_ATTR: "synthetic",
        }
        attributes.update({k: v for k, v in self.extra.items() if k not in attributes})
        end = SYNTHETIC_EPOCH_NS + (self.slot + 1) * SLOT_NS
        self.builder.add(
            self.root_id,
            f"invoke_agent {name}",
            start_unix_nano=SYNTHETIC_EPOCH_NS,
            end_unix_nano=end,
            attributes=attributes,
        )
