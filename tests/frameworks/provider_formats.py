"""The Anthropic Messages API and the Gemini API for the scripted model (:mod:`model_server`).

Reading a request: ``anthropic_messages`` / ``gemini_messages`` turn it into the
``(role, text, has tool calls)`` messages ``model_server.Script.decide`` reads (a tool result
is a ``tool`` message, never the user's), ``gemini_tools`` the functions it declares (Anthropic
tools are ``{"name", ...}`` objects, which ``model_server.offered_tools`` reads). Writing a
reply from a decision (``text``, or ``wire_calls``: ``[(id, name, arguments)]``): the
non-streamed body and the streamed events, in each API's own shapes:

- Anthropic (``POST /v1/messages``): ``content`` blocks ``text`` / ``tool_use``
  (``toolu_...`` ids), ``stop_reason`` ``tool_use`` / ``end_turn``; streaming: ``message_start``
  (input tokens, ``output_tokens: 1``), per block ``content_block_start`` /
  ``content_block_delta`` (``text_delta`` / ``input_json_delta``) / ``content_block_stop``,
  ``message_delta`` (stop reason, output tokens), ``message_stop``.
- Gemini (``POST /v1beta/models/{model}:generateContent``, ``:streamGenerateContent?alt=sse``):
  ``candidates[0].content.parts`` with ``text`` or ``functionCall`` ``{name, args}`` (no id,
  as the Gemini API sends none), ``finishReason`` ``STOP``, ``usageMetadata``
  (``promptTokenCount``, ``candidatesTokenCount``, ``totalTokenCount``); streamed, text comes
  in pieces and function calls whole, usage on the last chunk.

Standard library only.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol


class Decided(Protocol):
    """What the model answers (``model_server.Decision``)."""

    text: str | None
    calls: tuple[tuple[str, str, dict[str, Any]], ...]

    @property
    def wire_calls(self) -> tuple[tuple[str, str, dict[str, Any]], ...]: ...


def _pieces(text: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _block_text(content: Any) -> str:
    """The text of an Anthropic content: a string, or blocks (``text`` blocks, a
    ``tool_result``'s nested content, else the block as JSON)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_block_text(block) for block in content)
    if isinstance(content, dict):
        if "text" in content:
            return _block_text(content["text"])
        if "content" in content:
            return _block_text(content["content"])
        return json.dumps(content)
    return str(content)


def anthropic_messages(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(role, text, has tool calls)`` per message of an Anthropic Messages request: the
    ``system`` prompt first; an assistant message has tool calls when it holds ``tool_use``
    blocks; each ``tool_result`` block of a user message is a ``tool`` message (the user's own
    text blocks, if any, follow as the user message)."""
    out: list[tuple[str, str, bool]] = []
    if body.get("system"):
        out.append(("system", _block_text(body["system"]), False))
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, content = str(message.get("role") or ""), message.get("content")
        blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
        blocks = [b for b in blocks if isinstance(b, dict)]
        if role == "assistant":
            text = "\n".join(_block_text(b.get("text")) for b in blocks if b.get("type") == "text")
            out.append(("assistant", text, any(b.get("type") == "tool_use" for b in blocks)))
            continue
        out += [
            ("tool", _block_text(b.get("content")), False)
            for b in blocks
            if b.get("type") == "tool_result"
        ]
        texts = [_block_text(b.get("text")) for b in blocks if b.get("type") == "text"]
        if texts or not any(b.get("type") == "tool_result" for b in blocks):
            out.append((role, "\n".join(texts), False))
    return out


def anthropic_message(decision: Decided, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    """The Messages API response: a ``text`` block, or one ``tool_use`` block per call."""
    content: list[dict[str, Any]] = (
        [{"type": "text", "text": decision.text}]
        if decision.text is not None
        else [
            {"type": "tool_use", "id": _anthropic_id(call_id), "name": name, "input": arguments}
            for call_id, name, arguments in decision.wire_calls
        ]
    )
    return {
        "id": f"msg_{time.time_ns()}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if decision.calls else "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def _anthropic_id(call_id: str) -> str:
    """Anthropic's tool use ids look like ``toolu_...``."""
    return "toolu_" + call_id.removeprefix("call_")


def anthropic_events(
    decision: Decided, model: str, usage: tuple[int, int]
) -> list[tuple[str, dict]]:
    """The server-sent events of a streamed Messages API call, ``(event name, data)``:
    ``message_start`` (input tokens, ``output_tokens: 1``), per block ``content_block_start``,
    ``content_block_delta`` (``text_delta`` / ``input_json_delta``), ``content_block_stop``,
    then ``message_delta`` (stop reason, output tokens) and ``message_stop``."""
    done = anthropic_message(decision, model, usage)
    start = {
        **done,
        "content": [],
        "stop_reason": None,
        "usage": {**done["usage"], "output_tokens": 1},
    }
    events: list[tuple[str, dict]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    events.append(("ping", {"type": "ping"}))
    for index, block in enumerate(done["content"]):
        if block["type"] == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        else:
            opened = {**block, "input": {}}
            deltas = [
                {"type": "input_json_delta", "partial_json": piece}
                for piece in _pieces(json.dumps(block["input"]), 2)
            ]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": opened},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": done["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage[1]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def gemini_messages(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The same for a Gemini ``generateContent`` request: ``systemInstruction`` first; a
    ``model`` content has tool calls when it holds ``functionCall`` parts; each
    ``functionResponse`` part is a ``tool`` message. Field names in either JSON spelling
    (``functionCall`` or ``function_call``)."""
    out: list[tuple[str, str, bool]] = []
    system = _field(body, "systemInstruction")
    if system:
        out.append(("system", _gemini_text(system), False))
    for content in body.get("contents") or []:
        if not isinstance(content, dict):
            continue
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        role = "assistant" if content.get("role") == "model" else "user"
        if role == "assistant":
            calls = any(_field(p, "functionCall") for p in parts)
            out.append(("assistant", _gemini_text(content), calls))
            continue
        out += [
            ("tool", json.dumps(_field(p, "functionResponse").get("response")), False)
            for p in parts
            if _field(p, "functionResponse")
        ]
        if any("text" in p for p in parts) or not any(_field(p, "functionResponse") for p in parts):
            out.append((role, _gemini_text(content), False))
    return out


def _field(data: dict[str, Any], camel: str) -> Any:
    """``data[camel]`` or its snake_case twin (``function_call``)."""
    snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)
    return data.get(camel) or data.get(snake) or {}


def _gemini_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content.get("parts") if isinstance(content, dict) else content
    return "\n".join(
        str(p["text"]) for p in parts or [] if isinstance(p, dict) and p.get("text") is not None
    )


def gemini_tools(body: dict[str, Any]) -> set[str]:
    """Names of the functions a Gemini request declares (``tools[].functionDeclarations``)."""
    return {
        str(declaration["name"])
        for tool in body.get("tools") or []
        if isinstance(tool, dict)
        for declaration in _field(tool, "functionDeclarations") or []
        if isinstance(declaration, dict) and declaration.get("name")
    }


def gemini_parts(decision: Decided) -> list[dict[str, Any]]:
    """A text part, or one ``functionCall`` part per call (no ids, as the Gemini API)."""
    if decision.text is not None:
        return [{"text": decision.text}]
    return [{"functionCall": {"name": n, "args": a}} for _, n, a in decision.wire_calls]


def gemini_response(
    decision: Decided, model: str, usage: tuple[int, int] | None, parts: list[dict] | None = None
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` (``parts``: a streamed chunk's; ``usage`` None: none)."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": gemini_parts(decision) if parts is None else parts},
        "index": 0,
    }
    response: dict[str, Any] = {"candidates": [candidate], "modelVersion": model}
    if usage is not None:
        candidate["finishReason"] = "STOP"
        response["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": usage[0] + usage[1],
        }
    response["responseId"] = f"resp-{time.time_ns()}"
    return response


def gemini_chunks(decision: Decided, model: str, usage: tuple[int, int]) -> list[dict]:
    """The chunks of ``streamGenerateContent?alt=sse``: text in pieces (function calls whole,
    in one chunk), ``finishReason`` and ``usageMetadata`` on the last."""
    if decision.text is None:
        return [gemini_response(decision, model, usage, gemini_parts(decision))]
    pieces = _pieces(decision.text)
    return [
        gemini_response(decision, model, usage if i == len(pieces) - 1 else None, [{"text": p}])
        for i, p in enumerate(pieces)
    ]
