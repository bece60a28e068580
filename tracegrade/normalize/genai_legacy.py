"""GenAI semantic conventions before v1.28: content and usage in deprecated span attributes.

- ``gen_ai.prompt`` / ``gen_ai.completion``: one attribute each holding the request messages
  and the completion as JSON strings (deprecated in v1.28 in favour of log events). The
  completion may be a message list, a single message, or ``{"text", "finish_reason"}``.
- ``gen_ai.usage.prompt_tokens`` / ``gen_ai.usage.completion_tokens``: renamed
  ``input_tokens`` / ``output_tokens`` in v1.27; OpenLLMetry used them until October 2025.
- Chat spans named ``chat {model}`` with ``gen_ai.system`` but no ``gen_ai.operation.name``.
"""

from __future__ import annotations

from collections.abc import Mapping

from tracegrade.normalize.messages import (
    Message,
    Part,
    as_int,
    loads_maybe,
    parse_message,
    parse_messages,
)
from tracegrade.normalize.view import Context, SpanView
from tracegrade.spans import Span

NAME = "genai-legacy"


def _completion(value: object) -> list[Message] | None:
    value = loads_maybe(value)
    if isinstance(value, str):
        return [Message("assistant", [Part("text", content=value)])]
    if isinstance(value, Mapping) and "text" in value and "role" not in value:
        return [
            Message(
                "assistant", [Part("text", content=str(value["text"]))], value.get("finish_reason")
            )
        ]
    if isinstance(value, Mapping):
        message = parse_message({"role": "assistant", **value})
        return [message] if message else None
    return parse_messages(value)


def read(span: Span, view: SpanView, context: Context) -> bool:
    """Fill the view from the deprecated prompt/completion and token attributes."""
    attrs = span.attributes
    found = False
    if "gen_ai.prompt" in attrs or "gen_ai.completion" in attrs:
        view.fill(
            input_messages=parse_messages(attrs.get("gen_ai.prompt")),
            output_messages=_completion(attrs.get("gen_ai.completion")),
        )
        found = True
    prompt_tokens = as_int(attrs.get("gen_ai.usage.prompt_tokens"))
    completion_tokens = as_int(attrs.get("gen_ai.usage.completion_tokens"))
    if prompt_tokens is not None or completion_tokens is not None:
        view.fill(input_tokens=prompt_tokens, output_tokens=completion_tokens)
        found = True
    if (
        "gen_ai.operation.name" not in attrs
        and span.name.startswith("chat")
        and "gen_ai.system" in attrs
    ):
        found = True
        view.recognise(NAME, "llm")
    if found:
        view.recognise(NAME, "llm" if view.role is None and "gen_ai.prompt" in attrs else None)
    return found
