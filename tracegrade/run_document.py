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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

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


class AgentRef(_Model):
    """The agent ``tracegrade run`` drove."""

    kind: str = Field(description="python, command or http.")
    spec: str = Field(description="The MODULE:FUNCTION, command or URL given.")


class RunMeta(_Model):
    """``run``: what the run was and where it came from (fields in the document's order)."""

    run_id: str = Field(description="Unique id: creation time and a random suffix.")
    created_at: str | None = Field(None, description="ISO 8601, UTC.")
    dataset: DatasetRef | None = Field(None, description="None for reference-free scoring.")
    tier: str | None = Field(None, description="smoke or full (None: every case).")
    threshold: float | None = Field(None, description="The pass score per case, in [0, 1].")
    min_pass_rate: float = Field(1.0, description="The fraction of cases that must pass.")
    passed: bool | None = Field(None, description="Whether the run passed (and --min-score held).")
    git_sha: str | None = Field(None, description="The working directory's git commit.")
    agent_version: str | None = Field(None, description="The traces' service.version.")
    models: list[str] = Field(default_factory=list, description="Models the agent called.")
    trace_source: str | None = Field(None, description="Files, store, memory or pytest.")
    config_files: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("config_files", "config_sources"),
        description="The config files read, in order (a later one overrides an earlier one; "
        "tracegrade.defaults/NAME: the packaged defaults). Read from config_sources in "
        "documents written before it was renamed.",
    )
    tracegrade_version: str | None = None
    git_branch: str | None = None
    label: str | None = Field(None, description="Free text of tracegrade run --label.")
    agent: AgentRef | None = Field(None, description="tracegrade run: the agent run.")
    started_at: str | None = Field(None, description="ISO 8601, UTC (tracegrade run).")
    finished_at: str | None = Field(None, description="ISO 8601, UTC (tracegrade run).")
    repeat: int = Field(1, description="Times each case was run.")
    concurrency: int | None = Field(None, description="Cases run at once.")
    interrupted: bool = Field(False, description="Stopped early (Ctrl-C): cases missing.")
    evaluator: dict[str, Any] | None = Field(
        None,
        description="Who scored the run: id, scorers with their versions and kinds, dataset "
        "and config fingerprints, tracegrade's version (tracegrade.scoring.identity).",
    )
    min_score: float | None = Field(None, description="--min-score, when given.")


class Spent(_Model):
    """What every attempt of a ``tracegrade run`` spent together (``--repeat N`` runs each
    case N times; the case's ``usage`` and the summary's tokens and cost are one attempt's)."""

    attempts: int = Field(0, description="Attempts counted.")
    input_tokens: int | None = Field(None, description="Tokens; None when none was recorded.")
    output_tokens: int | None = Field(None, description="Tokens; None when none was recorded.")
    cost_usd: float | None = Field(None, description="USD, of the attempts whose cost is known.")


class JudgeTotals(_Model):
    """The LLM judge's own calls in a run (apart from the agent's tokens and cost)."""

    calls: int = Field(0, description="Judge calls made (cache hits included).")
    cached: int = Field(0, description="Verdicts read from the judge cache.")
    input_tokens: int = Field(0, description="Tokens.")
    output_tokens: int = Field(0, description="Tokens.")
    cost_usd: float | None = Field(None, description="USD; None when a model's price is unknown.")
    errors: int = Field(0, description="Cases whose judging failed.")
    models: list[str] = Field(default_factory=list, description="Judge models used.")


class ClarifierTotals(_Model):
    """``tracegrade run``: the judge deciding follow-up replies, and its failures."""

    calls: int = Field(0, description="Clarifier calls made.")
    cached: int = Field(0, description="Replies read from the cache.")
    input_tokens: int = Field(0, description="Tokens.")
    output_tokens: int = Field(0, description="Tokens.")
    cost_usd: float | None = Field(None, description="USD; None when the price is unknown.")
    errors: list[str] = Field(default_factory=list, description="Each failure, by case.")


class CategoryFigures(_Model):
    """The cases of one ``category``."""

    results: int = 0
    passed: int = 0
    pass_rate: float | None = None
    score: float | None = Field(None, description="Weighted mean; None when none was scored.")


class TagFigures(_Model):
    """The cases of one tag."""

    cases: int = 0
    passed: int = 0
    pass_rate: float | None = None
    score: float | None = Field(None, description="Mean score (a failed unscored case is 0).")
    hallucination_rate: float | None = None


class LatencySample(_Model):
    """How latency percentiles were estimated when a run had more values of a kind than the
    sample holds (:mod:`tracegrade.scoring.summary`)."""

    method: str = Field(description="uniform reservoir sample.")
    size: int = Field(description="Values kept per kind.")
    values: dict[str, int] = Field(
        default_factory=dict, description="Kind (latency, llm_latency, tool_latency) -> seen."
    )


class RunnerFigures(_Model):
    """``tracegrade run``: where the run's time went (ms, s)."""

    attempts: int = Field(0, description="Attempts made (cases times repeats).")
    attempt_errors: int = Field(0, description="Attempts the agent failed.")
    wall_s: float = Field(0.0, description="Seconds from the first attempt to the last.")
    agent_ms_p50: float | None = Field(None, description="Median ms in the agent's conversation.")
    settle_ms_p50: float | None = Field(None, description="Median ms waiting for spans.")
    settle_ms_p95: float | None = None
    score_ms_p50: float | None = Field(None, description="Median ms loading and scoring.")
    score_ms_p95: float | None = None


class RunSummaryEntry(_Model):
    """``summary``: totals over the run's cases (values in [0, 1], durations in ms, costs in
    USD, tokens in tokens; fields in the document's order)."""

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
    hallucination_rate: float | None = None
    judge: JudgeTotals | None = Field(None, description="The judge's own calls and cost.")
    categories: dict[str, CategoryFigures] = Field(default_factory=dict)
    latency_mean_ms: float | None = None
    latency_total_ms: float | None = None
    by_tag: dict[str, TagFigures] = Field(default_factory=dict)
    latency_sample: LatencySample | None = Field(
        None, description="How the latency percentiles were estimated from a sample."
    )
    flaky: int = Field(0, description="tracegrade run: cases whose repeats disagree.")
    agent_errors: int = Field(0, description="tracegrade run: cases the agent failed on.")
    spent: Spent | None = Field(
        None, description="tracegrade run: tokens and USD of every attempt of every case."
    )
    runner: RunnerFigures | None = Field(None, description="tracegrade run: where time went.")
    simulated: dict[str, Any] | None = Field(
        None,
        description="tracegrade run: the goal-reached rate of the simulated conversations, "
        "its interval and their mean turns.",
    )
    simulator: dict[str, Any] | None = Field(
        None, description="tracegrade run: the simulated users' model calls, tokens and cost."
    )
    clarifier: ClarifierTotals | None = Field(
        None, description="tracegrade run: the judge deciding follow-ups, and its errors."
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


class ScorerDetail(_Model):
    """One scorer's verdict on a case: its value, why, and what it found."""

    value: float | None = Field(None, description="In [0, 1]; None: not scored.")
    reason: str | None = Field(None, description="Why this value (or why not scored).")
    details: dict[str, Any] = Field(
        default_factory=dict, description="What the scorer found (its own shape)."
    )


class FollowUpMessage(_Model):
    """A follow-up reply the runner gave to the agent's clarifying question."""

    written_by: str = Field(
        validation_alias=AliasChoices("written_by", "source"),
        description="script or judge (source in documents written before it was renamed).",
    )
    question: str = ""
    reply: str = ""


class AttemptEntry(_Model):
    """``tracegrade run``: one attempt (repeat) of a case, with its own tokens and cost."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    repeat: int = Field(0, description="Which repeat (0-based).")
    trace_ids: list[str] = Field(default_factory=list, description="The traces it sent.")
    passed: bool = False
    score: float | None = None
    error: str | None = Field(None, description="How the agent failed (None: it answered).")
    followups: int = Field(0, description="Follow-up replies given.")
    followup_writers: list[str] = Field(
        default_factory=list,
        validation_alias=AliasChoices("followup_writers", "followup_sources"),
        description="Who wrote each follow-up: script or judge (followup_sources in documents "
        "written before it was renamed).",
    )
    followup_messages: list[FollowUpMessage] = Field(default_factory=list)
    gave_up: bool = Field(False, description="The conversation ran out of turns.")
    revivals: list[int] = Field(
        default_factory=list, description="The turns the agent was revived before."
    )
    agent_ms: float = Field(0.0, description="ms in the agent's conversation.")
    settle_ms: float = Field(0.0, description="ms waiting for its spans to settle.")
    score_ms: float = Field(0.0, description="ms loading and scoring.")
    simulation: dict[str, Any] | None = Field(
        None, description="A simulated user's conversation: what it played, how it ended."
    )


class CaseEntry(_Model):
    """One item of ``cases``: a case scored against a trace (``tracegrade run`` adds the
    attempts, what they spent, the agent's error, the spread and whether the case is flaky;
    fields in the document's order)."""

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
    details: dict[str, ScorerDetail] = Field(default_factory=dict)
    attempts: list[AttemptEntry] = Field(
        default_factory=list, description="tracegrade run: one entry per repeat of the case."
    )
    spent: Spent | None = Field(
        None, description="tracegrade run: tokens and USD of every attempt of this case."
    )
    error: str | None = Field(None, description="tracegrade run: how the agent failed.")
    spread: float | None = Field(None, description="tracegrade run: max - min attempt score.")
    flaky: bool | None = Field(
        None, description="tracegrade run: the repeats disagree (None: not a tracegrade run)."
    )
    goal: dict[str, Any] | None = Field(
        None, description="tracegrade run: a simulated user's goal-reached rate over repeats."
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
        """The document as JSON-ready data (the fields it was built or read with)."""
        return self.model_dump(mode="json", exclude_unset=True)


class RunHead(_Model):
    """A run document without its ``cases``: its ``run`` and ``summary``, typed. What a reader
    holds while the cases stream past one at a time (:func:`read_head`, :func:`read_cases`):
    a run's cases may outnumber memory, its head never does."""

    schema_version: Literal["tracegrade.run/1"] = SCHEMA_VERSION
    run: RunMeta
    summary: RunSummaryEntry


class CaseEntries(Protocol):
    """A run's case entries as a run writes them (:class:`~tracegrade.report.caselog.CaseLog`
    on disk, :class:`~tracegrade.report.caselog.CaseList` in memory): read any number of
    times, typed or as the JSON line of each (:func:`entry_json`)."""

    def __iter__(self) -> Iterator[CaseEntry]: ...

    def __len__(self) -> int: ...

    def lines(self) -> Iterator[bytes]:
        """Each entry's JSON, in order."""
        ...


@dataclass(frozen=True)
class StreamedDocument:
    """A run document as ``score``, ``run`` and the pytest plugin write it: its typed head
    (built once, never changed) and its case entries (streamed from a case log: a run's cases
    may outnumber memory). :func:`document_json` is its JSON-ready form."""

    head: RunHead
    cases: CaseEntries


def head_of(run: RunMeta, summary: RunSummaryEntry) -> RunHead:
    """The head of a run document being written (its schema version set, so it is written)."""
    return RunHead(schema_version=SCHEMA_VERSION, run=run, summary=summary)


def entry_json(entry: CaseEntry) -> bytes:
    """A case entry's JSON (compact, its fields in the document's order; the fields it was
    built or read with)."""
    return entry.__pydantic_serializer__.to_json(entry, exclude_unset=True)


def head_json(head: RunHead) -> dict[str, Any]:
    """A run document's head as JSON-ready data (the fields it was built or read with)."""
    return head.model_dump(mode="json", exclude_unset=True)


def document_json(doc: StreamedDocument | Mapping[str, Any]) -> Mapping[str, Any]:
    """A run document as JSON-ready data: its head's fields and ``cases`` (each entry decoded
    from its JSON line as it is read). A mapping is returned as it is."""
    if not isinstance(doc, StreamedDocument):
        return doc
    return {**head_json(doc.head), "cases": _DecodedCases(doc.cases)}


class _DecodedCases:
    """The JSON-ready entries of :class:`CaseEntries`, decoded as they are read."""

    def __init__(self, cases: CaseEntries) -> None:
        self.cases = cases

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (orjson.loads(line) for line in self.cases.lines())

    def __len__(self) -> int:
        return len(self.cases)


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


RENAMED_FIELDS: Mapping[str, Mapping[str, str]] = {
    "run": {"config_sources": "config_files"},
    "cases[].attempts[]": {"followup_sources": "followup_writers"},
    "cases[].attempts[].followup_messages[]": {"source": "written_by"},
}
"""Fields renamed since documents were first written, by where they are: old -> new (the
models read either name; :func:`with_current_names` and :func:`case_with_current_names`
rename stored data)."""


def _renamed(entry: Any, where: str) -> Any:
    """``entry`` with the fields renamed at ``where`` under their new names, in their place
    (the same object when none is there)."""
    names = RENAMED_FIELDS[where]
    if not isinstance(entry, dict) or names.keys().isdisjoint(entry):
        return entry
    return {names.get(k, k): v for k, v in entry.items()}


def with_current_names(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` (a run document's JSON-ready data, with or without ``cases``) with the fields
    of :data:`RENAMED_FIELDS` under their current names, in their place; changed in place
    and returned. A document already current is returned as it is."""
    if "run" in doc:
        doc["run"] = _renamed(doc["run"], "run")
    if isinstance(doc.get("cases"), list):
        doc["cases"] = [case_with_current_names(case) for case in doc["cases"]]
    return doc


def case_with_current_names(case: Any) -> Any:
    """A case entry's JSON-ready data with its attempts' renamed fields under their current
    names (:data:`RENAMED_FIELDS`), changed in place; a case without attempts as it is."""
    attempts = case.get("attempts") if isinstance(case, dict) else None
    if not attempts or not isinstance(attempts, list):
        return case
    current = [_renamed(a, "cases[].attempts[]") for a in attempts]
    for attempt in current:
        messages = attempt.get("followup_messages") if isinstance(attempt, dict) else None
        if isinstance(messages, list):
            where = "cases[].attempts[].followup_messages[]"
            attempt["followup_messages"] = [_renamed(m, where) for m in messages]
    case["attempts"] = current
    return case


def read_head(
    doc: RunHead | StreamedDocument | Mapping[str, Any], source: str = "run document"
) -> RunHead:
    """The typed head of a run document: a document being written (its head), its JSON-ready
    data decoded from a file or the store (``doc["cases"]``, if any, is not read), or a
    :class:`RunHead` already read (returned as it is). The one place a reader turns a run
    document's ``run`` and ``summary`` into objects; documents of earlier versions read (fields
    added since have defaults).

    Raises:
        InputError: not a ``tracegrade.run/1`` head; the message names the field.
    """
    if isinstance(doc, RunHead):
        return doc
    if isinstance(doc, StreamedDocument):
        return doc.head
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


def document_cases(
    doc: StreamedDocument | Mapping[str, Any], source: str = "run document"
) -> Iterator[CaseEntry]:
    """The case entries of a run document (one being written, or its JSON-ready data), typed,
    one at a time (:func:`read_cases`).

    Raises:
        InputError: an entry is not a case entry (named by its index and field).
    """
    cases = doc.cases if isinstance(doc, StreamedDocument) else doc["cases"]
    return read_cases(cases, source)


def read_run_document(path: str | Path) -> RunDocument:
    """A run document file (``score --json``, ``run --json``) read and typed whole.

    Raises:
        InputError: the file cannot be read, is not JSON, or is not a ``tracegrade.run/1``
            document (the message names the file and the field).
    """
    try:
        text = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg}", source=str(path), line=exc.lineno) from exc
    return RunDocument.from_json(data, source=str(path))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the run document (for the docs)."""
    schema = RunDocument.model_json_schema()
    schema["$id"] = SCHEMA_VERSION
    return schema
