"""Evaluator identity: which evaluator produced a result, so results of different scorer,
dataset, config or tracegrade versions are never mistaken for one another.

An :class:`Evaluator` is the scorers of a run or follower (each with its version and kind),
the golden dataset's name and content fingerprint, the fingerprint of the configuration in
effect (weights, threshold, budgets, pricing, aliases, rules, the judge's settings and the
run's own threshold and tier) and tracegrade's version. Its :attr:`~Evaluator.id`
(``ev-`` and 16 hex digits of a SHA-256 over all of it) is what the store records on each
result, what ``tracegrade backfill`` compares with (a trace the current evaluator has not
scored), and what every exported ``gen_ai.evaluation.result`` record carries.

A scorer's version (:func:`scorer_version`): its own ``version`` attribute when it has one;
else tracegrade's version for a scorer defined in tracegrade; else the version of the
installed distribution that provides its module (a plugin); else ``sha256:`` and 12 hex
digits of its module's source file (a local ``--scorer module:name``: editing it makes a new
version). A scorer's kind (``gen_ai.evaluation.evaluator.type`` as proposed in
semantic-conventions-genai PR #359): ``llm_judge`` for a scorer with ``evaluator_type =
"llm_judge"`` (the judge), else ``deterministic``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Dataset
from tracegrade.scoring.score import Scorer
from tracegrade.version import __version__

LLM_JUDGE = "llm_judge"
DETERMINISTIC = "deterministic"


@dataclass(frozen=True)
class ScorerIdentity:
    """One scorer of an evaluator: its name, version, kind (``llm_judge`` or
    ``deterministic``) and, for a judge, its model."""

    name: str
    version: str
    type: str = DETERMINISTIC
    model: str | None = None


@dataclass(frozen=True)
class Evaluator:
    """What produced a result (see the module docstring); JSON-able through :meth:`to_dict`."""

    scorers: tuple[ScorerIdentity, ...]
    dataset: str | None
    dataset_fingerprint: str | None
    config_fingerprint: str
    tracegrade_version: str = __version__

    @property
    def id(self) -> str:
        """``ev-`` and 16 hex digits identifying this evaluator (equal identities, equal ids)."""
        text = json.dumps(self.to_dict(with_id=False), sort_keys=True, separators=(",", ":"))
        return "ev-" + hashlib.sha256(text.encode()).hexdigest()[:16]

    def scorer(self, name: str) -> ScorerIdentity | None:
        """The identity of the scorer called ``name`` (None: not one of this evaluator's)."""
        return next((s for s in self.scorers if s.name == name), None)

    def to_dict(self, *, with_id: bool = True) -> dict[str, Any]:
        """``{"id", "scorers": [{"name", "version", "type", "model"}], "dataset",
        "dataset_fingerprint", "config_fingerprint", "tracegrade_version"}``."""
        out: dict[str, Any] = {"id": self.id} if with_id else {}
        return {
            **out,
            "scorers": [dataclasses.asdict(s) for s in self.scorers],
            "dataset": self.dataset,
            "dataset_fingerprint": self.dataset_fingerprint,
            "config_fingerprint": self.config_fingerprint,
            "tracegrade_version": self.tracegrade_version,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Evaluator:
        """The inverse of :meth:`to_dict` (``id`` is recomputed, not read)."""
        return cls(
            tuple(ScorerIdentity(**s) for s in data.get("scorers") or ()),
            data.get("dataset"),
            data.get("dataset_fingerprint"),
            str(data.get("config_fingerprint") or ""),
            str(data.get("tracegrade_version") or ""),
        )


def evaluator_of(
    scorers: Sequence[Scorer],
    dataset: Dataset | None,
    config: Config,
    settings: Mapping[str, Any] | None = None,
) -> Evaluator:
    """The evaluator of a run or follower: these scorers, this dataset and config, and
    ``settings`` (the run's own threshold, tier and the like, part of the config's
    fingerprint)."""
    return Evaluator(
        tuple(scorer_identity(s) for s in scorers),
        dataset.name if dataset else None,
        dataset_fingerprint(dataset) if dataset else None,
        config_fingerprint(config, settings),
    )


def scorer_identity(scorer: Scorer) -> ScorerIdentity:
    """A scorer's name, version and kind (module docstring)."""
    kind = getattr(scorer, "evaluator_type", None) or DETERMINISTIC
    model = getattr(scorer, "judge_model", None) if kind == LLM_JUDGE else None
    return ScorerIdentity(scorer.name, scorer_version(scorer), str(kind), model)


def scorer_version(scorer: Scorer) -> str:
    """The scorer's version (module docstring)."""
    explicit = getattr(scorer, "version", None)
    if isinstance(explicit, str) and explicit:
        return explicit
    function = getattr(scorer, "function", None)  # a plain function wrapped as a scorer
    module = getattr(function, "__module__", None) or type(scorer).__module__
    return _module_version(module)


@cache
def _module_version(module: str) -> str:
    top = module.split(".")[0]
    if top == "tracegrade":
        return __version__
    for distribution in metadata.packages_distributions().get(top, ()):
        try:
            return f"{distribution} {metadata.version(distribution)}"
        except metadata.PackageNotFoundError:
            continue
    path = getattr(sys.modules.get(module), "__file__", None)
    if path and Path(path).is_file():
        return "sha256:" + hashlib.sha256(Path(path).read_bytes()).hexdigest()[:12]
    return "unversioned"


def dataset_fingerprint(dataset: Dataset) -> str:
    """SHA-256 (16 hex digits) of the dataset's content: its cases and settings as set, not
    the file's path or layout (the same cases from a file or from the store fingerprint
    alike), nor the defaults of fields left unset (a new optional case field changes no
    dataset's version)."""
    text = dataset.model_dump_json(exclude={"source", "digest"}, exclude_defaults=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def config_fingerprint(config: Config, settings: Mapping[str, Any] | None = None) -> str:
    """SHA-256 (16 hex digits) of what the configuration sets for scoring (not where it was
    read from, nor its sampling rules: which traces, not how) and of ``settings``."""
    values = {f.name: getattr(config, f.name) for f in dataclasses.fields(config)}
    for name in ("files", "sampling"):  # where it was read from; which traces, not how
        del values[name]  # a field renamed fails here, not by changing every evaluator's id
    text = json.dumps(
        {"config": values, "settings": dict(settings or {})},
        sort_keys=True,
        default=_plain,
        separators=(",", ":"),
    )
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(value: Any) -> Any:
    """JSON for the config's values: dataclasses, pydantic models, mappings, tuples."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if hasattr(value, "model_dump"):
        return value.model_dump()
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    return repr(value)


def result_id(evaluator_id: str, trace_id: str, case_id: str | None, scope: str = "trace") -> str:
    """The identity of one evaluator's result on one trace (or conversation: ``scope``) and
    case: 32 hex digits, the same for every version of that result (a re-scored trace), so a
    backend that receives it again can replace the earlier one."""
    key = "\x1f".join((evaluator_id, scope, trace_id, case_id or ""))
    return hashlib.sha256(key.encode()).hexdigest()[:32]
