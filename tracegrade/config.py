"""Configuration: scoring weights, threshold, budgets, pricing and field aliases.

Precedence (lowest first): the defaults shipped in ``config/`` (package
``tracegrade.defaults``), then ``tracegrade.yaml`` in the working directory (or the file
given by ``--config`` / ``TRACEGRADE_CONFIG``), then a dataset's own settings, then command
line options. Files are validated by pydantic (unknown keys are errors) and a bad value
raises :class:`~tracegrade.errors.ConfigError` naming the file and the field.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracegrade import environment
from tracegrade._util.bounded import load_yaml
from tracegrade._util.yaml_lines import compose, model_fields, node_line, suggestion
from tracegrade.errors import ConfigError
from tracegrade.sampling import SamplingRule, SamplingRules

CONFIG_ENV = environment.TRACEGRADE_CONFIG
"""Environment variable naming the user config file (overridden by ``--config``)."""
USER_CONFIG = "tracegrade.yaml"


# --- file schemas -------------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelPrice(_Strict):
    """USD per million tokens for one model."""

    input: float = Field(ge=0, description="USD per 1M non-cached input tokens")
    output: float = Field(ge=0, description="USD per 1M output tokens")
    cached_input: float | None = Field(
        None, ge=0, description="USD per 1M cached input tokens (default: input)"
    )


class PricingFile(_Strict):
    read_on: str | None = None
    currency: Literal["USD"] = "USD"
    unit: Literal["per_million_tokens"] = "per_million_tokens"
    models: dict[str, ModelPrice] = {}


class BudgetsFile(_Strict):
    max_latency_ms: float | None = Field(None, gt=0)
    max_cost_usd: float | None = Field(None, ge=0)
    max_tool_calls: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0)


class AliasesFile(_Strict):
    fields: dict[str, list[str]] = {}


class JudgeFile(_Strict):
    """The ``judge:`` section: LLM judge defaults (a flag or environment variable wins)."""

    model: str | None = None
    timeout_s: float | None = Field(None, gt=0)
    evidence_tokens: int | None = Field(None, gt=0)
    temperature: float | None = Field(None, ge=0, le=2)


class ReferenceFreeFile(_Strict):
    """The ``reference_free:`` section: rules of the ``production_rules`` scorer (see
    :mod:`tracegrade.scoring.production`)."""

    ungrounded_kinds: list[Literal["price", "percent", "number", "date", "time", "id"]] | None = (
        None
    )
    max_ungrounded: int | None = Field(None, ge=0)
    hidden_tool_errors: bool | None = None
    acknowledgements: list[str] | None = None
    enforce_with_case: bool | None = None


class WindowsFile(_Strict):
    """The ``windows:`` section: ``score --follow --window`` aggregates and their alert
    thresholds (null = no threshold)."""

    min_traces: int | None = Field(None, ge=1)
    thresholds: (
        dict[
            Literal[
                "failure_rate",
                "hallucination_rate",
                "tool_error_rate",
                "p95_latency_ms",
                "cost_per_trace_usd",
            ],
            float | None,
        ]
        | None
    ) = None


class SamplingRuleFile(_Strict):
    """One rule of the ``sampling:`` section: attribute -> value (or values), and a rate."""

    name: str | None = None
    match: dict[str, str | int | float | bool | list[str | int | float | bool]] = Field(
        min_length=1
    )
    rate: float = Field(ge=0, le=1)


class SamplingFile(_Strict):
    """The ``sampling:`` section: which traces ``score --follow`` and ``backfill`` score
    (:mod:`tracegrade.sampling`); ``--sample`` replaces ``default``."""

    rules: list[SamplingRuleFile] | None = None
    default: float | None = Field(None, ge=0, le=1)


class SessionsFile(_Strict):
    """The ``sessions:`` section: how ``score --follow --sessions`` scores a conversation."""

    rubric: str | None = None
    """The judge rubric of a whole conversation (text, or a built-in rubric's name; default
    the built-in ``conversation`` rubric)."""
    threshold: float | None = Field(None, ge=0, le=1)


class ScoringFile(_Strict):
    """The shape of ``config/scoring.yaml`` and of ``tracegrade.yaml``."""

    weights: dict[str, float] | None = None
    reference_free_weights: dict[str, float] | None = None
    threshold: float | None = Field(None, ge=0, le=1)
    count_tool_calls: Literal["performed", "attempted"] | None = None
    budgets: BudgetsFile | None = None
    pricing: PricingFile | None = None
    field_aliases: dict[str, list[str]] | None = None
    judge: JudgeFile | None = None
    regression: dict[str, Any] | None = None
    """Regression rules (validated by :mod:`tracegrade.compare.rules`)."""
    reference_free: ReferenceFreeFile | None = None
    windows: WindowsFile | None = None
    sampling: SamplingFile | None = None
    sessions: SessionsFile | None = None


# --- runtime objects ------------------------------------------------------------------------


@dataclass(frozen=True)
class Budgets:
    """Limits on a whole trace; ``None`` means no limit."""

    max_latency_ms: float | None = None
    max_cost_usd: float | None = None
    max_tool_calls: int | None = None
    max_tokens: int | None = None

    def merged(self, other: Budgets) -> Budgets:
        """``other`` 's limits where set, else these."""
        return Budgets(
            *(
                o if o is not None else s
                for s, o in zip(_astuple(self), _astuple(other), strict=True)
            )
        )


def _astuple(budgets: Budgets) -> tuple[Any, ...]:
    return (
        budgets.max_latency_ms,
        budgets.max_cost_usd,
        budgets.max_tool_calls,
        budgets.max_tokens,
    )


_PROVIDER_PREFIX_SEPARATORS = ("/", ":")
_SNAPSHOT_SUFFIX = re.compile(
    r"^(?:-\d{4}-\d{2}-\d{2}|-\d{8}|-\d{4}|@.+|-latest|-preview(?:-.+)?|-v\d+(?:[.:]\d+)*)$"
)
"""What may follow a priced model name in a snapshot of the same model (``gpt-4o-2024-08-06``,
``gpt-4-0613``, ``claude-3-5-sonnet-20241022``, ``...@001``); ``gpt-4o-mini`` is not one."""


@dataclass(frozen=True)
class Pricing:
    """Model prices (USD per million tokens) and the date they were read."""

    models: Mapping[str, ModelPrice] = field(default_factory=dict)
    read_on: str | None = None

    def price(self, model: str | None) -> ModelPrice | None:
        """The price of ``model``: exact key, else the longest key of which it is a dated or
        versioned snapshot, after dropping a ``provider/`` prefix; None when unknown (so
        ``o3-mini`` never takes ``o3`` 's price)."""
        if not model:
            return None
        name = model.lower()
        for separator in _PROVIDER_PREFIX_SEPARATORS:
            if separator in name and name.split(separator, 1)[1]:
                name = name.split(separator, 1)[1]
        if name in self.models:
            return self.models[name]
        prefixes = [
            k for k in self.models if name.startswith(k) and _SNAPSHOT_SUFFIX.match(name[len(k) :])
        ]
        return self.models[max(prefixes, key=len)] if prefixes else None

    def cost_usd(
        self,
        model: str | None,
        input_tokens: int | None,
        output_tokens: int | None,
        cached_input_tokens: int | None = None,
    ) -> float | None:
        """Cost in USD of one LLM call; None when the model has no price or no token counts.
        Cached tokens are part of ``input_tokens`` (GenAI semconv) and charged at the
        cached rate."""
        price = self.price(model)
        if price is None or (input_tokens is None and output_tokens is None):
            return None
        cached = min(cached_input_tokens or 0, input_tokens or 0)
        fresh = (input_tokens or 0) - cached
        cached_rate = price.cached_input if price.cached_input is not None else price.input
        return (
            fresh * price.input + cached * cached_rate + (output_tokens or 0) * price.output
        ) / 1e6


@dataclass(frozen=True)
class Config:
    """Everything scoring needs besides the trace and the case."""

    weights: Mapping[str, float]
    reference_free_weights: Mapping[str, float]
    threshold: float
    count_tool_calls: Literal["performed", "attempted"]
    budgets: Budgets
    pricing: Pricing
    field_aliases: Mapping[str, tuple[str, ...]]
    files: tuple[str, ...] = ()
    """The config files read, in order (a later one's settings override an earlier one's); the
    packaged defaults as ``tracegrade.defaults/NAME``. The run document's ``config_files``."""
    judge: Mapping[str, Any] = field(default_factory=dict)
    """``judge:`` settings of the config files (model, timeout_s, evidence_tokens, temperature)."""
    regression: Mapping[str, Any] = field(default_factory=dict)
    """``regression:`` settings of the config files (:mod:`tracegrade.compare.rules`)."""
    reference_free: Mapping[str, Any] = field(default_factory=dict)
    """``reference_free:`` rules (:class:`ReferenceFreeFile` fields that are set)."""
    windows: Mapping[str, Any] = field(default_factory=dict)
    """``windows:`` settings; ``thresholds`` merged per key across files."""
    sampling: SamplingRules = field(default_factory=SamplingRules)
    """``sampling:`` rules (a later file's rules replace an earlier file's)."""
    sessions: Mapping[str, Any] = field(default_factory=dict)
    """``sessions:`` settings (:class:`SessionsFile` fields that are set)."""

    def with_overrides(self, **values: Any) -> Config:
        """A copy with the given non-None values replaced."""
        return replace(self, **{k: v for k, v in values.items() if v is not None})


# --- loading -----------------------------------------------------------------------------------


def _read_yaml(path: Path | str, text: str) -> Any:
    try:
        return load_yaml(text) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc


_EXPECTED = re.compile(r"'([^']+)'")


def _problem(model: type[BaseModel], error: Any) -> tuple[tuple[str | int, ...], str, bool]:
    """``(path, message, is_unknown_key)`` of one validation error; an unknown key (a field,
    or a key a mapping does not allow) suggests the closest known one."""
    path = tuple(error["loc"])
    if error["type"] == "extra_forbidden":
        known = model_fields(model, path[:-1])
        return path, "unknown field" + suggestion(str(path[-1]), known), True
    if path[-1:] == ("[key]",):  # a mapping's key outside its Literal (windows.thresholds)
        allowed = _EXPECTED.findall(str((error.get("ctx") or {}).get("expected", "")))
        message = "unknown key" + suggestion(str(path[-2]), allowed)
        return path[:-1], f"{message} (known: {', '.join(allowed)})", True
    return path, error["msg"], False


def _validate(model: type[BaseModel], data: Any, file: str, text: str | None = None) -> Any:
    """``data`` validated as ``model``.

    Raises:
        ConfigError: every problem of the file, one line each: ``FILE:LINE: field 'a.b':
            message`` (the line when ``text``, the file's YAML, is given), an unknown key with
            the closest known one ("did you mean").
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        root = compose(text) if text is not None else None
        lines: dict[str, int] = {}
        for path, message, unknown in (_problem(model, e) for e in exc.errors()):
            line = node_line(root, path, key=unknown)
            where = ".".join(str(p) for p in path) or "(top level)"
            lines.setdefault(
                f"{file}{f':{line}' if line else ''}: field '{where}': {message}", line or 0
            )
        raise ConfigError("\n".join(sorted(lines, key=lambda m: lines[m]))) from exc


def _default(name: str) -> tuple[str, Any]:
    resource = resources.files("tracegrade.defaults").joinpath(name)
    return f"tracegrade.defaults/{name}", _read_yaml(name, resource.read_text(encoding="utf-8"))


def _apply(config: Config, scoring: ScoringFile, file: str) -> Config:
    pricing = config.pricing
    if scoring.pricing is not None:
        pricing = Pricing(
            {**pricing.models, **{k.lower(): v for k, v in scoring.pricing.models.items()}},
            scoring.pricing.read_on or pricing.read_on,
        )
    budgets = config.budgets
    if scoring.budgets is not None:
        budgets = budgets.merged(Budgets(**scoring.budgets.model_dump()))
    aliases = dict(config.field_aliases)
    aliases.update({k: tuple(v) for k, v in (scoring.field_aliases or {}).items()})
    return replace(
        config.with_overrides(
            weights=scoring.weights,
            reference_free_weights=scoring.reference_free_weights,
            threshold=scoring.threshold,
            count_tool_calls=scoring.count_tool_calls,
        ),
        pricing=pricing,
        budgets=budgets,
        field_aliases=aliases,
        files=(*config.files, file),
        judge={
            **config.judge,
            **(scoring.judge.model_dump(exclude_none=True) if scoring.judge else {}),
        },
        regression={**config.regression, **(scoring.regression or {})},
        reference_free=_merged(config.reference_free, scoring.reference_free),
        windows=_merged(config.windows, scoring.windows),
        sampling=_sampling(config.sampling, scoring.sampling),
        sessions=_merged(config.sessions, scoring.sessions),
    )


def _sampling(base: SamplingRules, section: SamplingFile | None) -> SamplingRules:
    """``base`` with the section's rules (replacing base's) and default, where set."""
    if section is None:
        return base
    rules = base.rules
    if section.rules is not None:
        rules = tuple(
            SamplingRule(
                {
                    key: tuple(str(v) for v in (value if isinstance(value, list) else [value]))
                    for key, value in rule.match.items()
                },
                rule.rate,
                rule.name,
            )
            for rule in section.rules
        )
    default = section.default if section.default is not None else base.default
    return SamplingRules(rules, default)


def _merged(base: Mapping[str, Any], section: BaseModel | None) -> dict[str, Any]:
    """``base`` with the set fields of ``section``; a ``thresholds`` mapping merges by key."""
    values = section.model_dump(exclude_none=True) if section else {}
    merged = {**base, **values}
    if "thresholds" in values:
        merged["thresholds"] = {**base.get("thresholds", {}), **values["thresholds"]}
    return merged


def defaults() -> Config:
    """The configuration shipped in ``config/``."""
    scoring_file, scoring_data = _default("scoring.yaml")
    pricing_file, pricing_data = _default("pricing.yaml")
    aliases_file, aliases_data = _default("aliases.yaml")
    scoring = _validate(ScoringFile, scoring_data, scoring_file)
    pricing = _validate(PricingFile, pricing_data, pricing_file)
    aliases = _validate(AliasesFile, aliases_data, aliases_file)
    budgets = Budgets(**scoring.budgets.model_dump()) if scoring.budgets else Budgets()
    return Config(
        weights=scoring.weights or {},
        reference_free_weights=scoring.reference_free_weights or {},
        threshold=scoring.threshold if scoring.threshold is not None else 0.7,
        count_tool_calls=scoring.count_tool_calls or "performed",
        budgets=budgets,
        pricing=Pricing({k.lower(): v for k, v in pricing.models.items()}, pricing.read_on),
        field_aliases={k: tuple(v) for k, v in aliases.fields.items()},
        files=(scoring_file, pricing_file, aliases_file),
        reference_free=_merged({}, scoring.reference_free),
        windows=_merged({}, scoring.windows),
    )


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Defaults, then the user file: ``path``, else ``$TRACEGRADE_CONFIG``, else
    ``./tracegrade.yaml`` when it exists.

    Raises:
        ConfigError: the named file does not exist, is not YAML, or has a bad field.
    """
    config = defaults()
    explicit = path or os.environ.get(CONFIG_ENV)
    user = Path(explicit) if explicit else Path(USER_CONFIG)
    if not user.exists():
        if explicit:
            raise ConfigError(f"config file {user} does not exist")
        return config
    text = user.read_text(encoding="utf-8")
    scoring = _validate(ScoringFile, _read_yaml(user, text), str(user), text)
    return _apply(config, scoring, str(user))
