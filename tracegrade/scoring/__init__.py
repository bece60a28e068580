"""Scoring: scorers of a normalised trace against a golden case, and evaluation of a run.

One module per scorer family (:mod:`.grounding`, :mod:`.faithfulness`, :mod:`.tools`,
:mod:`.completeness`, :mod:`.hallucination`, :mod:`.budgets`, :mod:`.failures`,
:mod:`.context`), each opening with what it measures; :mod:`.overall` combines them,
:mod:`.evaluation` runs cases against traces. Built-in and plugin scorers share one registry
(:mod:`.registry`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from tracegrade.config import Config
from tracegrade.dataset import Dataset
from tracegrade.scoring import (  # noqa: F401  (registers the built-in scorers)
    budgets,
    completeness,
    context,
    failures,
    faithfulness,
    grounding,
    hallucination,
    production,
    tools,
)
from tracegrade.scoring.evaluation import evaluate
from tracegrade.scoring.registry import builtin_names, builtins, load_reference, plugins
from tracegrade.scoring.results import CaseResult, RunResult, RunSummary
from tracegrade.scoring.score import Score, Scorer

__all__ = [
    "CaseResult",
    "RunResult",
    "RunSummary",
    "Score",
    "Scorer",
    "build_scorers",
    "builtin_names",
    "config_for",
    "evaluate",
]


def config_for(config: Config, dataset: Dataset | None) -> Config:
    """The config with the dataset's field aliases layered on top."""
    if dataset is None or not dataset.field_aliases:
        return config
    aliases = {**config.field_aliases, **{k: tuple(v) for k, v in dataset.field_aliases.items()}}
    return replace(config, field_aliases=aliases)


def build_scorers(
    config: Config,
    references: Sequence[str] = (),
    *,
    names: list[str] | None = None,
    with_plugins: bool = True,
) -> list[Scorer]:
    """Built-in scorers (all or ``names``), entry-point plugins, then ``--scorer module:name`` ones.

    Raises:
        ConfigError: an unknown built-in name, or a reference that cannot be loaded.
    """
    scorers = builtins(config, names)
    if with_plugins:
        scorers.extend(plugins(config))
    scorers.extend(load_reference(ref, config) for ref in references)
    return scorers
