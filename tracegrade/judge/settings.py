"""Judge settings: which model, which endpoint, which credentials, and how hard to try.

Precedence follows the OpenTelemetry SDK's habit (argument, then environment variable, then
default): the model is ``--judge-model`` (or a case's ``judge.model``), else
``$TRACEGRADE_JUDGE_MODEL``, else :data:`DEFAULT_MODEL`; the endpoint and key are
``$TRACEGRADE_JUDGE_BASE_URL`` / ``$TRACEGRADE_JUDGE_API_KEY``, falling back to the
``openai`` client's own ``$OPENAI_BASE_URL`` / ``$OPENAI_API_KEY``. Credentials are checked
once, before any case is scored (:meth:`JudgeSettings.require_credentials`), never per case.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from tracegrade import environment
from tracegrade.config import Pricing
from tracegrade.errors import ConfigError

JUDGE_MODEL_ENV = environment.TRACEGRADE_JUDGE_MODEL
"""Environment variable naming the default judge model (overridden by ``--judge-model``)."""
JUDGE_BASE_URL_ENV = environment.TRACEGRADE_JUDGE_BASE_URL
"""Base URL of the judge's OpenAI-compatible endpoint (falls back to ``OPENAI_BASE_URL``)."""
JUDGE_API_KEY_ENV = environment.TRACEGRADE_JUDGE_API_KEY
"""API key of the judge endpoint (falls back to ``OPENAI_API_KEY``)."""
DEFAULT_MODEL = "gpt-4o"
"""The judge model when nothing else names one: a stronger model than the agents it grades,
as the design documents use."""


@dataclass(frozen=True)
class JudgeSettings:
    """Everything a judge call needs besides the prompt.

    ``timeout_s`` bounds one HTTP request; ``max_retries`` is how often the ``openai``
    client retries a 429, a 5xx, a timeout or a dropped connection (exponential backoff from
    0.5 s, ``Retry-After`` honoured); ``attempts`` is how often a malformed or out-of-range
    verdict is asked for again. ``concurrency`` is the number of judge calls in flight,
    ``repeat`` the number of verdicts per case (their median is the score),
    ``evidence_tokens`` the budget of the trace evidence shown to the judge (tokens,
    estimated). ``pricing`` prices the judge's own tokens (USD per 1M tokens).
    """

    model: str = DEFAULT_MODEL
    base_url: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 60.0
    max_retries: int = 3
    attempts: int = 3
    concurrency: int = 4
    repeat: int = 1
    evidence_tokens: int = 6000
    temperature: float = 0.0
    pricing: Pricing = field(default_factory=Pricing)
    seed: int | None = None
    """Sent as the request's ``seed`` when set (OpenAI's best-effort determinism; the
    simulated user's calls set it, :mod:`tracegrade.judge.simulate`)."""

    def require_credentials(self) -> None:
        """Raise unless an API key is configured.

        Raises:
            ConfigError: no ``TRACEGRADE_JUDGE_API_KEY`` nor ``OPENAI_API_KEY``; the message
                says how to set one (any value for a local server that checks none).
        """
        if not self.api_key:
            where = f" at {self.base_url}" if self.base_url else ""
            raise ConfigError(
                f"the LLM judge (model {self.model!r}{where}) needs an API key: set "
                f"{JUDGE_API_KEY_ENV} (or OPENAI_API_KEY; any value for a local server that checks "
                f"none), {JUDGE_BASE_URL_ENV} for another endpoint, or pass --no-judge"
            )

    def with_model(self, model: str | None) -> JudgeSettings:
        """A copy using ``model`` when given."""
        return replace(self, model=model) if model else self


def resolve_settings(
    model: str | None = None,
    *,
    env: Mapping[str, str] | None = None,
    pricing: Pricing | None = None,
    config: Mapping[str, Any] | None = None,
    **overrides: object,
) -> JudgeSettings:
    """Settings from the arguments, then the environment, then ``config`` (the config files'
    ``judge:`` section), then the defaults (see the module docstring). ``overrides`` are
    :class:`JudgeSettings` fields; None values are ignored.

    Raises:
        ConfigError: a non-positive ``concurrency``, ``repeat``, ``attempts`` or ``timeout_s``.
    """
    env = os.environ if env is None else env
    config = dict(config or {})
    values = {
        **{k: v for k, v in config.items() if k != "model"},
        **{k: v for k, v in overrides.items() if v is not None},
    }
    for name in ("concurrency", "repeat", "attempts", "timeout_s"):
        if name in values and not (isinstance(values[name], (int, float)) and values[name] > 0):
            raise ConfigError(f"judge setting {name} must be positive, got {values[name]!r}")
    return JudgeSettings(
        model=model or env.get(JUDGE_MODEL_ENV) or config.get("model") or DEFAULT_MODEL,
        base_url=env.get(JUDGE_BASE_URL_ENV) or env.get(environment.OPENAI_BASE_URL) or None,
        api_key=env.get(JUDGE_API_KEY_ENV) or env.get(environment.OPENAI_API_KEY) or None,
        pricing=pricing or Pricing(),
        **values,
    )
