"""The judge's model calls: the official ``openai`` client, structured output, validation.

One :class:`JudgeClient` serves every judge call of a run (it is thread-safe: the ``openai``
client is). A call asks for a JSON object with ``response_format`` ``json_schema`` (strict);
a server that ignores that and answers with text still works, because the answer is parsed
here (a Markdown code fence around the JSON is accepted) and validated by a pydantic model.

Failure handling, in two layers:

- transport: the ``openai`` client retries 429, 5xx, timeouts and dropped connections
  ``settings.max_retries`` times with exponential backoff (``Retry-After`` honoured), each
  request bounded by ``settings.timeout_s``; what still fails becomes a :class:`JudgeError`;
- content: an answer that is not JSON, or fails validation (e.g. a score outside [0, 1]) is
  asked for again, with the validation error, up to ``settings.attempts`` times in all, then
  becomes a :class:`JudgeError`.

A :class:`JudgeError` is data for the case it belongs to ("judge error"), never a 0 or a 1.
Usage (:class:`JudgeUsage`) counts every request that reached the model, including the
rejected ones, and is kept apart from the agent's usage.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from tracegrade.judge.settings import JudgeSettings

if TYPE_CHECKING:
    import openai

T = TypeVar("T", bound=BaseModel)
Message = Mapping[str, str]

_FENCE_LANGUAGE = re.compile(r"[a-zA-Z0-9_-]*")


def _unfenced(text: str) -> str:
    """The body of a stripped reply wrapped in a Markdown code fence (```json ... ```), else
    ``text``. Sliced, not matched by one regular expression: the lazy body between optional
    whitespace runs took 47 s on a reply of 4,000 spaces (cubic backtracking)."""
    if len(text) < 6 or not (text.startswith("```") and text.endswith("```")):
        return text
    language = _FENCE_LANGUAGE.match(text, 3)
    start = language.end() if language else 3
    return text[start:-3].strip()


@dataclass(frozen=True)
class JudgeUsage:
    """Tokens and cost of judge calls. ``cost_usd`` is None when the judge model has no price
    in the pricing table (``config/pricing.yaml``); ``cached`` counts verdicts served from the
    cache, which cost nothing."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    cached: int = 0

    def __add__(self, other: JudgeUsage) -> JudgeUsage:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return JudgeUsage(
            self.calls + other.calls,
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            cost,
            self.cached + other.cached,
        )

    def to_dict(self) -> dict[str, Any]:
        """``{"calls", "cached", "input_tokens", "output_tokens", "cost_usd"}``."""
        return {
            "calls": self.calls,
            "cached": self.cached,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": self.cost_usd,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> JudgeUsage:
        """The inverse of :meth:`to_dict`."""
        return cls(
            int(data.get("calls", 0)),
            int(data.get("input_tokens", 0)),
            int(data.get("output_tokens", 0)),
            data.get("cost_usd", 0.0),
            int(data.get("cached", 0)),
        )


class JudgeError(Exception):
    """A judge call that produced no valid answer; ``usage`` is what it spent anyway."""

    def __init__(self, message: str, usage: JudgeUsage | None = None):
        super().__init__(message)
        self.usage = usage or JudgeUsage()


class ReplyError(ValueError):
    """The model's answer is not a JSON object that validates (the message says why)."""


def parse_reply(content: str, output: type[T]) -> T:
    """Validate a model's answer: JSON (optionally in a Markdown code fence, or surrounded by
    prose) that ``output`` accepts.

    Raises:
        ReplyError: no JSON object found, or a field fails validation (named in the message).
    """
    text = content.strip()
    text = _unfenced(text)
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        try:
            data = json.loads(text[start : end + 1]) if 0 <= start < end else None
        except json.JSONDecodeError:
            data = None
        if data is None:
            raise ReplyError(f"not a JSON object: {content[:120]!r}") from None
    try:
        return output.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise ReplyError(
            f"field '{where}': {first['msg']} (got {first.get('input')!r})"[:300]
        ) from None


class JudgeClient:
    """Judge calls against one OpenAI-compatible endpoint (see the module docstring).

    Raises:
        ConfigError: on construction, when no API key is configured.
    """

    def __init__(self, settings: JudgeSettings, client: openai.OpenAI | None = None):
        import openai  # imported on first use: ~1 s that every CLI command would otherwise pay

        settings.require_credentials()
        self.settings = settings
        self._client = client or openai.OpenAI(
            api_key=settings.api_key,
            base_url=settings.base_url,
            timeout=settings.timeout_s,
            max_retries=settings.max_retries,
        )
        self._structured = True

    def ask(
        self,
        messages: Sequence[Message],
        output: type[T],
        schema: Mapping[str, Any],
        *,
        model: str | None = None,
        seed: int | None = None,
    ) -> tuple[T, JudgeUsage]:
        """Ask ``messages`` and return the validated answer with the usage of every attempt
        (``model`` and ``seed``, when given, in place of the settings').

        Raises:
            JudgeError: the endpoint failed after the client's retries, or no valid answer
                came in ``settings.attempts`` attempts (the last problem is in the message).
        """
        model = model or self.settings.model
        usage, conversation, problem = JudgeUsage(), list(messages), ""
        for _ in range(self.settings.attempts):
            content, spent = self._complete(conversation, schema, model, usage, seed)
            usage += spent
            try:
                return parse_reply(content, output), usage
            except ReplyError as exc:
                problem = str(exc)
            conversation = [
                *messages,
                {"role": "assistant", "content": content[:4000]},
                {
                    "role": "user",
                    "content": f"That answer is invalid: {problem}. Reply again with only "
                    "the JSON object the schema describes.",
                },
            ]
        raise JudgeError(
            f"no valid answer from {model} in {self.settings.attempts} attempt(s): {problem}", usage
        )

    def _complete(
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any],
        model: str,
        spent: JudgeUsage,
        seed: int | None = None,
    ) -> tuple[str, JudgeUsage]:
        """One chat completion: (content, its usage). Unreadable bodies come back as content
        so that they count as an invalid answer."""
        import openai  # imported on first use: ~1 s that every CLI command would otherwise pay

        try:
            completion = self._create(messages, schema, model, seed)
        except openai.APIError as exc:
            raise JudgeError(self._describe(exc), spent) from exc
        except (
            ValueError
        ) as exc:  # a 200 whose body is not JSON (no usage reported: counted as 0 tokens)
            return f"(unreadable response body: {exc})", JudgeUsage(calls=1)
        if not hasattr(completion, "choices") or not completion.choices:
            return f"(not a chat completion: {str(completion)[:120]!r})", JudgeUsage(calls=1)
        message = completion.choices[0].message
        return message.content or message.refusal or "", self._usage(completion, model)

    def _create(
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any],
        model: str,
        seed: int | None = None,
    ) -> Any:
        import openai  # imported on first use: ~1 s that every CLI command would otherwise pay

        kwargs: dict[str, Any] = {
            "model": model,
            "messages": list(messages),
            "temperature": self.settings.temperature,
        }
        seed = self.settings.seed if seed is None else seed
        if seed is not None:
            kwargs["seed"] = seed
        if self._structured:
            body = {k: v for k, v in schema.items() if k != "title"}
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.get("title", "answer"),
                    "strict": True,
                    "schema": body,
                },
            }
        try:
            return self._client.chat.completions.create(**kwargs)
        except openai.BadRequestError as exc:
            if not self._structured or "response_format" not in str(exc):
                raise
            self._structured = (
                False  # the server does not support structured output: ask in the prompt only
            )
            kwargs.pop("response_format")
            return self._client.chat.completions.create(**kwargs)

    def _usage(self, completion: Any, model: str) -> JudgeUsage:
        usage = getattr(completion, "usage", None)
        prompt = getattr(usage, "prompt_tokens", 0) or 0
        output = getattr(usage, "completion_tokens", 0) or 0
        priced = self.settings.pricing.cost_usd(
            getattr(completion, "model", None) or model, prompt, output
        )
        if priced is None:
            priced = self.settings.pricing.cost_usd(model, prompt, output)
        return JudgeUsage(1, prompt, output, priced)

    def _describe(self, exc: openai.APIError) -> str:
        import openai  # imported on first use: ~1 s that every CLI command would otherwise pay

        retries = f"after {self.settings.max_retries} retries"
        if isinstance(exc, openai.APITimeoutError):
            return f"judge request timed out ({self.settings.timeout_s:g} s per request, {retries})"
        if isinstance(exc, openai.APIConnectionError):
            endpoint = self.settings.base_url or "api.openai.com"
            return f"cannot reach the judge endpoint {endpoint} ({retries}): {exc}"
        if isinstance(exc, openai.APIStatusError):
            return (
                f"judge endpoint answered HTTP {exc.status_code} ({retries}): {_error_message(exc)}"
            )
        return f"judge call failed: {type(exc).__name__}: {exc}"


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, Mapping):
        return str(body.get("message") or body.get("error") or body)[:200]
    return str(exc)[:200]
