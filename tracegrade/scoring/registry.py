"""The scorer registry: built-in scorers and plugins, one mechanism for both.

Built-ins register with :func:`register` as factories ``(config) -> Scorer``. Third-party
scorers come from the ``tracegrade.scorers`` entry-point group (loaded lazily; a broken
plugin is a warning, not a crash) or from ``--scorer module:name``. A plugin object may be a
scorer (callable with a ``name``), a class or factory taking the :class:`~tracegrade.config.Config`
or nothing, or a plain function ``(trace, case) -> Score | float | bool``, which is wrapped.
"""

from __future__ import annotations

import importlib
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, cast

from tracegrade.config import Config
from tracegrade.dataset import Case
from tracegrade.errors import ConfigError
from tracegrade.scoring.score import Score, Scorer
from tracegrade.trace import AgentTrace

ENTRY_POINT_GROUP = "tracegrade.scorers"
Factory = Callable[[Config], Scorer]

_BUILTINS: dict[str, Factory] = {}


def register(name: str) -> Callable[[Factory], Factory]:
    """Register a built-in scorer factory under ``name``."""

    def decorator(factory: Factory) -> Factory:
        _BUILTINS[name] = factory
        return factory

    return decorator


@dataclass(frozen=True)
class FunctionScorer:
    """Wraps a plain ``(trace, case) -> Score | float | bool | None`` function."""

    name: str
    function: Callable[[AgentTrace, Case | None], Any]

    def __call__(self, trace: AgentTrace, case: Case | None) -> Score:
        result = self.function(trace, case)
        if isinstance(result, Score):
            return result
        if result is None:
            return Score(self.name, None, "no value")
        value = float(result)
        return Score(
            self.name, value, f"{getattr(self.function, '__name__', self.name)} returned {result!r}"
        )


def _takes_only_config(obj: Any) -> bool:
    try:
        parameters = list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        return False
    return parameters == ["config"]


def _instantiate(name: str, obj: Any, config: Config) -> Scorer:
    """A scorer from a plugin object (see the module docstring for the accepted shapes)."""
    if inspect.isclass(obj) or (inspect.isfunction(obj) and _takes_only_config(obj)):
        factory: Callable[..., Any] = obj
        try:
            obj = factory(config) if _takes_only_config(factory) else factory()
        except TypeError as exc:
            raise ConfigError(f"scorer {name!r}: cannot construct it: {exc}") from exc
        if not (callable(obj) and hasattr(obj, "name")):
            raise ConfigError(
                f"scorer {name!r}: the factory did not return a scorer (a callable with a name)"
            )
        return cast(Scorer, obj)
    if callable(obj) and hasattr(obj, "name") and not inspect.isfunction(obj):
        return cast(Scorer, obj)
    if callable(obj):
        return FunctionScorer(getattr(obj, "scorer_name", name), obj)
    raise ConfigError(f"scorer {name!r}: {obj!r} is not callable")


def load_reference(reference: str, config: Config) -> Scorer:
    """A scorer from ``module:name``.

    Raises:
        ConfigError: malformed reference, module not importable, or no such attribute.
    """
    module_name, _, attribute = reference.partition(":")
    if not module_name or not attribute:
        raise ConfigError(
            f"--scorer {reference!r}: expected module:name, e.g. my_scorers:politeness"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"--scorer {reference!r}: cannot import {module_name}: {exc}") from exc
    if not hasattr(module, attribute):
        raise ConfigError(
            f"--scorer {reference!r}: module {module_name} has no attribute {attribute!r}"
        )
    return _instantiate(attribute, getattr(module, attribute), config)


def plugins(config: Config) -> list[Scorer]:
    """Scorers from the ``tracegrade.scorers`` entry points (a broken one is skipped with a
    warning)."""
    scorers = []
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        try:
            scorers.append(_instantiate(entry.name, entry.load(), config))
        except Exception as exc:  # a broken plugin must not stop scoring
            warnings.warn(
                f"scorer plugin {entry.name!r} ({entry.value}) skipped: {exc}", stacklevel=2
            )
    return scorers


def builtin_names() -> list[str]:
    """Names of the built-in scorers, sorted."""
    return sorted(_BUILTINS)


def builtins(config: Config, names: list[str] | None = None) -> list[Scorer]:
    """The built-in scorers (all, or those named).

    Raises:
        ConfigError: an unknown name (the message lists the valid ones).
    """
    unknown = sorted(set(names or ()) - set(_BUILTINS))
    if unknown:
        raise ConfigError(f"unknown scorer(s) {unknown}; valid: {builtin_names()}")
    return [_BUILTINS[n](config) for n in (names or sorted(_BUILTINS))]
