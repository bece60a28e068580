"""The shop assistant: a Chat Completions tool loop with the official ``openai`` client.

:func:`answer` is the in-process entry point (``examples.ecommerce.agent:answer``): it takes
the user's message, or the conversation so far as ``[{"role": "user"|"assistant",
"content": str}, ...]`` ending with a user message, and returns the reply text. The client
reads ``OPENAI_BASE_URL`` and ``OPENAI_API_KEY``; the model is ``OPENAI_MODEL`` (default
``gpt-4o-mini``).

Spans (GenAI semantic conventions): one ``invoke_agent shop-assistant`` span per call, a
child of whatever span is current (a runner's case span, or the caller's trace extracted
from ``traceparent`` by the HTTP service); inside it the openai-v2 instrumentation's
``chat {model}`` spans and one ``execute_tool {name}`` span per tool call. This module never
configures a tracer provider: the host process does (:mod:`.telemetry`), and without one the
spans are no-ops. The system prompt condenses the design documents' product-discovery and
order-management prompts (nitin27may/e-commerce-agents, ``config/prompts/``, MIT).
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

from openai import OpenAI
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from examples.ecommerce import seed
from examples.ecommerce.telemetry import capture_content, instrument_openai
from examples.ecommerce.tools import TOOL_DEFINITIONS, ToolError, call_tool

AGENT_NAME = "shop-assistant"
DEFAULT_MODEL = "gpt-4o-mini"
MAX_MODEL_CALLS = 8
"""Model calls per :func:`answer` before it gives up (:class:`StepLimitError`)."""

SYSTEM_PROMPT = f"""You are the shopping assistant of an online shop. You help the logged-in \
customer, {seed.CUSTOMER["name"]}, find and compare products and track, cancel and return \
orders. Today is {seed.SHOP_DATE}.

Grounding rules:
- Always call a tool for product, price, stock, coupon and order data; never invent names, \
prices, ids or tracking numbers. If a tool returns an error or nothing, say so.
- If the request is ambiguous (for example which order), ask one short clarifying question \
instead of guessing.
- Orders can be cancelled only while placed or confirmed. \
Check return eligibility before starting a return.
- Show prices in US dollars with two decimals, and lead with the most relevant results.
- For questions outside products and orders, say you don't have access to that information."""

_tracer = trace.get_tracer("examples.ecommerce", "1.0.0")


@lru_cache(maxsize=8)
def _client(base_url: str | None, api_key: str | None) -> OpenAI:
    """One client per endpoint and key (clients are thread-safe and slow to create)."""
    return OpenAI(base_url=base_url, api_key=api_key)


class StepLimitError(RuntimeError):
    """The model kept calling tools past :data:`MAX_MODEL_CALLS`."""


def conversation_of(message: str | Sequence[Mapping[str, Any]]) -> list[dict[str, str]]:
    """The conversation as Chat Completions messages.

    Raises:
        ValueError: an empty message or list, an item without a ``user``/``assistant`` role or
            string ``content`` (named by index), or a list that does not end with a user message.
    """
    if isinstance(message, str):
        if not message.strip():
            raise ValueError("the user message is empty")
        return [{"role": "user", "content": message}]
    turns = []
    for index, item in enumerate(message):
        if (
            not isinstance(item, Mapping)
            or item.get("role") not in ("user", "assistant")
            or not isinstance(item.get("content"), str)
        ):
            raise ValueError(
                f"message {index}: expected {{'role': 'user'|'assistant', 'content': str}}, got "
                f"{item!r}"
            )
        turns.append({"role": item["role"], "content": item["content"]})
    if not turns or turns[-1]["role"] != "user":
        raise ValueError("the conversation must end with a user message")
    return turns


def _parts(messages: Sequence[Mapping[str, str]]) -> str:
    """GenAI semconv message JSON (``gen_ai.input.messages`` schema) of plain text messages."""
    return json.dumps(
        [
            {"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]}
            for m in messages
        ]
    )


def _execute_tool(db: sqlite3.Connection, call: Any) -> str:
    """Run one requested tool call inside an ``execute_tool`` span; the text for the model."""
    name, arguments = call.function.name, call.function.arguments
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    if capture_content():
        attributes["gen_ai.tool.call.arguments"] = arguments
    with _tracer.start_as_current_span(
        f"execute_tool {name}", kind=SpanKind.INTERNAL, attributes=attributes
    ) as span:
        try:
            result = json.dumps(call_tool(db, name, arguments))
        except ToolError as exc:
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            span.set_attribute("error.type", ToolError.__qualname__)
            return json.dumps({"error": str(exc)})
        if capture_content():
            span.set_attribute("gen_ai.tool.call.result", result)
        return result


def _loop(
    client: OpenAI,
    model: str,
    db: sqlite3.Connection,
    conversation: list[dict[str, str]],
    usage: list[int],
) -> str:
    """Call the model until it answers without tools; ``usage`` accumulates [input, output]
    tokens."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT}, *conversation]
    for _ in range(MAX_MODEL_CALLS):
        response = client.chat.completions.create(
            model=model, messages=messages, tools=TOOL_DEFINITIONS
        )
        if response.usage:
            usage[0] += response.usage.prompt_tokens
            usage[1] += response.usage.completion_tokens
        reply = response.choices[0].message
        if not reply.tool_calls:
            return reply.content or ""
        messages.append(
            {
                "role": "assistant",
                "content": reply.content,
                "tool_calls": [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.function.name, "arguments": c.function.arguments},
                    }
                    for c in reply.tool_calls
                ],
            }
        )
        messages.extend(
            {"role": "tool", "tool_call_id": c.id, "content": _execute_tool(db, c)}
            for c in reply.tool_calls
        )
    raise StepLimitError(f"no answer after {MAX_MODEL_CALLS} model calls")


def _start(span: Span, model: str, conversation: list[dict[str, str]]) -> None:
    span.set_attributes(
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
        }
    )
    if capture_content():
        span.set_attributes(
            {
                "gen_ai.input.messages": _parts(conversation),
                "gen_ai.system_instructions": json.dumps(
                    [{"type": "text", "content": SYSTEM_PROMPT}]
                ),
            }
        )


def answer(message: str | Sequence[Mapping[str, Any]]) -> str:
    """The assistant's reply to ``message`` (see the module docstring for the shapes).

    Raises:
        ValueError: a malformed message or conversation (see :func:`conversation_of`).
        StepLimitError: the model never stopped calling tools.
        openai.OpenAIError: the model API failed (after the client's retries).
    """
    conversation = conversation_of(message)
    instrument_openai()
    model = os.environ.get("OPENAI_MODEL") or DEFAULT_MODEL
    usage = [0, 0]
    client = _client(os.environ.get("OPENAI_BASE_URL"), os.environ.get("OPENAI_API_KEY"))
    with _tracer.start_as_current_span(
        f"invoke_agent {AGENT_NAME}", kind=SpanKind.INTERNAL
    ) as span:
        _start(span, model, conversation)
        db = seed.connect()
        try:
            reply = _loop(client, model, db, conversation, usage)
        finally:
            db.close()
        span.set_attributes(
            {"gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]}
        )
        if capture_content():
            span.set_attribute(
                "gen_ai.output.messages",
                json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [{"type": "text", "content": reply}],
                            "finish_reason": "stop",
                        }
                    ]
                ),
            )
        return reply
