"""The run document ``tracegrade.run/1`` as typed, versioned models (pydantic).

What ``score --json`` / ``run --json`` write, what the store keeps and what ``compare`` and
``score --baseline`` read: :class:`RunDocument` with its :class:`RunMeta` (``run``),
:class:`RunSummaryEntry` (``summary``) and :class:`CaseEntry` items (``cases``). Every field
carries its unit in its description. A document read from a file is validated here, at the
edge (:meth:`RunDocument.from_json`), and a bad one names the field; documents written by
earlier versions of tracegrade validate (fields added since have defaults), and fields a
later version adds are kept (``extra="allow"``: a reader is never newer than the writer's
schema version allows). The JSON Schema
(:func:`json_schema`) is published in the docs.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracegrade.errors import InputError

SCHEMA_VERSION: Literal["tracegrade.run/1"] = "tracegrade.run/1"
"""The version of the run document; bumped on any incompatible change."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class DatasetRef(_Model):
    """The golden dataset a run scored against."""

    name: str | None = Field(None, description="The dataset's name.")
    source: str | None = Field(None, description="Where it was read from (a file path).")
    digest: str | None = Field(None, description="SHA-256 of its cases: a changed dataset shows.")
    cases: int | None = Field(None, description="How many cases it holds (before the tier).")


class RunMeta(_Model):
    """``run``: what the run was and where it came from."""

    run_id: str = Field(description="Unique id: creation time and a random suffix.")
    created_at: str | None = Field(None, description="ISO 8601, UTC.")
    dataset: DatasetRef | None = Field(None, description="None for reference-free scoring.")
    tier: str | None = Field(None, description="smoke or full (None: every case).")
    threshold: float | None = Field(None, description="The pass score per case, in [0, 1].")
    min_pass_rate: float = Field(1.0, description="The fraction of cases that must pass.")
    passed: bool | None = Field(None, description="Whether the run passed (and --min-score held).")
    tracegrade_version: str | None = None
    git_sha: str | None = None
    git_branch: str | None = None
    agent_version: str | None = Field(None, description="The traces' service.version.")
    models: list[str] = Field(default_factory=list, description="Models the agent called.")
    trace_source: str | None = Field(None, description="Files, store, memory or pytest.")
    config_sources: list[str] = Field(default_factory=list)
    label: str | None = Field(None, description="Free text of tracegrade run --label.")
    agent: dict[str, Any] | None = Field(None, description='{"kind", "spec"} of the agent run.')
    started_at: str | None = Field(None, description="ISO 8601, UTC (tracegrade run).")
    finished_at: str | None = Field(None, description="ISO 8601, UTC (tracegrade run).")
    repeat: int = Field(1, description="Times each case was run.")
    concurrency: int | None = Field(None, description="Cases run at once.")
    interrupted: bool = Field(False, description="Stopped early (Ctrl-C): cases missing.")
    min_score: float | None = Field(None, description="--min-score, when given.")
    evaluator: dict[str, Any] | None = Field(
        None,
        description="Who scored the run: id, scorers with their versions and kinds, dataset "
        "and config fingerprints, tracegrade's version (tracegrade.scoring.identity).",
    )


class Spent(_Model):
    """What every attempt of a ``tracegrade run`` spent together (``--repeat N`` runs each
    case N times; the case's ``usage`` and the summary's tokens and cost are one attempt's)."""

    attempts: int = Field(0, description="Attempts counted.")
    input_tokens: int | None = Field(None, description="Tokens; None when none was recorded.")
    output_tokens: int | None = Field(None, description="Tokens; None when none was recorded.")
    cost_usd: float | None = Field(None, description="USD, of the attempts whose cost is known.")


class RunSummaryEntry(_Model):
    """``summary``: totals over the run's cases (values in [0, 1], durations in ms, costs in
    USD, tokens in tokens)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    results: int = 0
    passed: int = 0
    failed: int = 0
    pass_rate: float | None = None
    score: float | None = Field(None, description="Weighted mean; a failed unscored case is 0.")
    threshold: float | None = None
    unmatched_cases: int = 0
    unmatched_traces: int = 0
    axes: dict[str, float] = Field(default_factory=dict, description="Mean per axis.")
    scorers: dict[str, float] = Field(default_factory=dict, description="Mean per scorer.")
    excluded: dict[str, int] = Field(default_factory=dict, description="Axis -> cases unscored.")
    latency_p50_ms: float | None = None
    latency_p95_ms: float | None = None
    llm_latency_p50_ms: float | None = None
    llm_latency_p95_ms: float | None = None
    tool_latency_p50_ms: float | None = None
    tool_latency_p95_ms: float | None = None
    input_tokens: int | None = Field(
        None,
        description="The agent's, never the judge's; with repeats, of one attempt per case (its "
        "median repeat): what every attempt spent is ``spent``.",
    )
    output_tokens: int | None = None
    cost_usd: float | None = None
    spent: Spent | None = Field(
        None, description="tracegrade run: tokens and USD of every attempt of every case."
    )
    hallucination_rate: float | None = None
    judge: dict[str, Any] | None = Field(None, description="The judge's own calls and cost.")
    categories: dict[str, dict[str, Any]] = Field(default_factory=dict)
    latency_mean_ms: float | None = None
    latency_total_ms: float | None = None
    by_tag: dict[str, dict[str, Any]] = Field(default_factory=dict)
    agent_errors: int = Field(0, description="tracegrade run: cases the agent failed on.")
    flaky: int = Field(0, description="tracegrade run: cases whose repeats disagree.")
    latency_sample: dict[str, Any] | None = Field(
        None, description="How the latency percentiles were estimated from a sample."
    )
    clarifier: dict[str, Any] | None = Field(
        None, description="tracegrade run: the judge deciding follow-ups, and its errors."
    )
    simulated: dict[str, Any] | None = Field(
        None,
        description="tracegrade run: the goal-reached rate of the simulated conversations, "
        "its interval and their mean turns.",
    )
    simulator: dict[str, Any] | None = Field(
        None, description="tracegrade run: the simulated users' model calls, tokens and cost."
    )


class CaseUsage(_Model):
    """A case's usage (durations ms, tokens, cost USD)."""

    duration_ms: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    llm_calls: int = 0
    tool_calls: int = 0
    llm_latency_max_ms: float | None = None
    tool_latency_max_ms: float | None = None
    unpriced_models: list[str] = Field(default_factory=list)


class CaseEntry(_Model):
    """One item of ``cases``: a case scored against a trace (``tracegrade run`` adds the
    attempts, the spread and whether the case is flaky)."""

    model_config = ConfigDict(extra="allow", frozen=True)

    case_id: str | None = Field(None, description="None for reference-free scoring.")
    trace_id: str | None = Field(None, description="None when no trace matched the case.")
    passed: bool
    score: float | None = Field(None, description="Overall score in [0, 1].")
    scores: dict[str, float | None] = Field(default_factory=dict)
    reasons: list[str] = Field(default_factory=list, description="Why it failed or lost score.")
    notes: list[str] = Field(default_factory=list, description="What was not scored, and why.")
    hard_failures: list[str] = Field(default_factory=list)
    axes: dict[str, float] = Field(default_factory=dict)
    excluded: dict[str, str] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    tier: str | None = None
    category: str | None = None
    weight: float = 1.0
    metadata: dict[str, Any] = Field(default_factory=dict)
    usage: CaseUsage | None = None
    details: dict[str, dict[str, Any]] = Field(default_factory=dict)
    spent: Spent | None = Field(
        None, description="tracegrade run: tokens and USD of every attempt of this case."
    )
    attempts: list[dict[str, Any]] = Field(
        default_factory=list, description="tracegrade run: one entry per repeat of the case."
    )
    error: str | None = Field(None, description="tracegrade run: how the agent failed.")
    spread: float | None = Field(None, description="tracegrade run: max - min attempt score.")
    flaky: bool | None = Field(
        None, description="tracegrade run: the repeats disagree (None: not a tracegrade run)."
    )


class RunDocument(_Model):
    """The whole run document (see the module docstring)."""

    schema_version: Literal["tracegrade.run/1"] = SCHEMA_VERSION
    run: RunMeta
    summary: RunSummaryEntry
    cases: list[CaseEntry]

    @classmethod
    def from_json(cls, data: Any, source: str = "run document") -> RunDocument:
        """A run document from its decoded JSON.

        Raises:
            InputError: not a ``tracegrade.run/1`` document; the message names the field.
        """
        return _validate(cls, data, source)

    def to_json(self) -> dict[str, Any]:
        """The document as JSON-ready data."""
        return self.model_dump(mode="json", exclude_none=False)


class RunHead(_Model):
    """A run document without its ``cases``: its ``run`` and ``summary``, typed. What a reader
    holds while the cases stream past one at a time (:func:`read_head`, :func:`read_cases`):
    a run's cases may outnumber memory, its head never does."""

    schema_version: Literal["tracegrade.run/1"] = SCHEMA_VERSION
    run: RunMeta
    summary: RunSummaryEntry


_M = TypeVar("_M", bound=BaseModel)


def _validate(model: type[_M], data: Any, source: str, prefix: str = "") -> _M:
    """``data`` as ``model``; an InputError naming the first bad field (``prefix`` first)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = prefix + ".".join(str(p) for p in first["loc"])
        raise InputError(
            f"not a {SCHEMA_VERSION} document: {where}: {first['msg']}", source=source
        ) from exc


def read_head(doc: RunHead | Mapping[str, Any], source: str = "run document") -> RunHead:
    """The typed head of a run document: its JSON-ready data as written by ``score``/``run``
    or decoded from a file or the store (``doc["cases"]``, if any, is not read), or a
    :class:`RunHead` already read (returned as it is). The one place a reader turns a run
    document's ``run`` and ``summary`` into objects; documents of earlier versions read (fields
    added since have defaults).

    Raises:
        InputError: not a ``tracegrade.run/1`` head; the message names the field.
    """
    if isinstance(doc, RunHead):
        return doc
    return _validate(RunHead, {k: v for k, v in doc.items() if k != "cases"}, source)


def read_case(
    entry: CaseEntry | Mapping[str, Any], source: str = "run document", index: int | None = None
) -> CaseEntry:
    """One item of a run document's ``cases`` as a :class:`CaseEntry` (one already read is
    returned as it is).

    Raises:
        InputError: not a case entry; the message names the field (``cases.INDEX.field`` when
            ``index`` is given).
    """
    if isinstance(entry, CaseEntry):
        return entry
    prefix = "cases." if index is None else f"cases.{index}."
    return _validate(CaseEntry, entry, source, prefix)


def read_cases(
    entries: Iterable[CaseEntry | Mapping[str, Any]], source: str = "run document"
) -> Iterator[CaseEntry]:
    """:func:`read_case` of each entry, lazily and in order: ``entries`` (a list, a store
    cursor, a :class:`~tracegrade.report.caselog.CaseLog`) is read once, one entry at a time.

    Raises:
        InputError: an entry is not a case entry (named by its index and field).
    """
    return (read_case(entry, source, i) for i, entry in enumerate(entries))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the run document (for the docs)."""
    schema = RunDocument.model_json_schema()
    schema["$id"] = SCHEMA_VERSION
    return schema
