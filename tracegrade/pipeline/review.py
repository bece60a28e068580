"""Review queues and labels (``tracegrade review``, the dashboard's Review page).

A queue is built once from a :class:`QueueRule` over the stored conversations
(:mod:`.conversations`): **filters** all hold (a time window on the conversation's first
trace, ``service.name``, ``KEY=VALUE`` tags on a resource or root-span attribute), and when
**signals** are given any one selects a conversation (the reason is kept): the overall
reference-free verdict fails (production rules, budgets), named scorers fail, the score is
below X, a stored judge verdict is below X, end-user feedback is negative (or any feedback).
Then ``sample`` keeps a fraction (below 1) or a count, decided by the first trace id
(:mod:`tracegrade.sampling`: the same conversations every time), and ``limit`` the first N.
Reviewers then claim items one at a time (:mod:`tracegrade.store.review`).

Human labels as data: ``tracegrade review export FILE`` writes every stored label as one
JSON object a line (``tracegrade.label/1``), and ``review import FILE`` takes such lines back
(labels from another store, another tool, or a benchmark's recorded outcomes).

A line::

    {"schema_version": "tracegrade.label/1", "conversation": "trace:4bf9...",
     "trace_ids": ["4bf9..."], "reviewer": "ana", "created_at": 1764000000.0,
     "verdict": "fail", "axes": {"tools_right": "fail"}, "note": "...",
     "expectation": {"must_contain": ["$129.00"]}, "queue": "negative-feedback",
     "source": "review"}

Only ``trace_ids``, ``reviewer`` and ``verdict`` are required on import (``created_at``
defaults to now, ``source`` to ``import``, ``conversation`` to the stored traces'
conversation, else ``trace:<first id>``); unknown fields are refused, and sizes are bounded
(a line :data:`MAX_LINE_BYTES`, a note :data:`MAX_NOTE_CHARS`, ``created_at`` 1970-2100:
:func:`checked`). Lines end at ``\\n`` only; export writes U+0085, U+2028 and U+2029 escaped.
A bad line is reported as ``file:line: field: reason`` and skipped; the good lines are
imported. Importing the same line twice adds nothing.

Stored conversations for review: read from the store and grouped (a conversation may span
several traces: :mod:`tracegrade.normalize.conversations`), scored reference-free with the
engine every face uses, and joined with their end-user feedback (the chat a reviewer reads is
:func:`tracegrade.web.pages.chat_of`, the dashboard's chat view).

A conversation is addressed by its key (``id:<conversation id>`` or ``trace:<first trace id>``)
and its trace ids; labels and feedback join it by trace id, so either may arrive before the
traces do.
"""

from __future__ import annotations

import itertools
import json
import math
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tracegrade.config import Config, load_config
from tracegrade.curate.derive import ConversationTraces, merge
from tracegrade.dataset import Dataset
from tracegrade.errors import ConfigError, InputError, StoreError
from tracegrade.normalize.conversations import group_conversations
from tracegrade.pipeline._score import evaluate_dataset
from tracegrade.pipeline.reading import from_store, parse_since, traces_by_id
from tracegrade.sampling import lowest, sampled
from tracegrade.scoring.results import CaseResult
from tracegrade.store import review as queue_store
from tracegrade.store.feedback import SHOWN_PER_PAGE, Feedback, feedback_for, feedback_page
from tracegrade.store.review import AXES, VERDICTS, Label, QueueItem
from tracegrade.store.traces import Store
from tracegrade.store.verdicts import judge_verdicts
from tracegrade.trace import AgentTrace


class QueueRule(BaseModel):
    """Which stored conversations a queue holds (see the module docstring). Times are ``30m``
    / ``12h`` / ``7d`` (ago) or ISO dates; scores in [0, 1]."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    since: str | None = None
    until: str | None = None
    service: str | None = None
    where: dict[str, str] = Field(default_factory=dict)
    failed: bool = False
    failed_scorers: list[str] = Field(default_factory=list)
    score_below: float | None = Field(None, ge=0, le=1)
    judge_below: float | None = Field(None, ge=0, le=1)
    feedback: Literal["negative", "any"] | None = None
    sample: float | None = Field(None, gt=0)
    limit: int | None = Field(None, ge=1)

    @property
    def needs_scores(self) -> bool:
        """Whether the rule reads tracegrade's scores (the conversations are scored then)."""
        return self.failed or bool(self.failed_scorers) or self.score_below is not None

    @property
    def has_signals(self) -> bool:
        """Whether the rule names any signal (else every filtered conversation is taken)."""
        return self.needs_scores or self.judge_below is not None or self.feedback is not None


@dataclass(frozen=True)
class RuleInputs:
    """What a rule reads about the conversations: results by key, feedback by trace id,
    stored judge verdicts by trace id."""

    results: Mapping[str, CaseResult] = field(default_factory=dict)
    feedback: Mapping[str, list[Feedback]] = field(default_factory=dict)
    verdicts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)


def _attributes_hold(conversation: StoredConversation, where: Mapping[str, str]) -> bool:
    def holds(key: str, value: str) -> bool:
        return any(
            str(attrs[key]) == value
            for t in conversation.members
            for attrs in (t.root_attributes, t.resource_attributes)
            if key in attrs
        )

    return all(holds(k, v) for k, v in where.items())


def _filtered(rule: QueueRule) -> str:
    """The reason of a conversation taken by a rule without signals: what it matched."""
    matched = [f"service {rule.service}"] if rule.service is not None else []
    matched += [f"{k}={v}" for k, v in rule.where.items()]
    return "matches " + ", ".join(matched) if matched else "every conversation"


def signals(conversation: StoredConversation, rule: QueueRule, evidence: RuleInputs) -> list[str]:
    """Why the rule's signals select ``conversation`` (empty: they do not)."""
    why = []
    result = evidence.results.get(conversation.key)
    if result is not None and rule.failed and not result.passed:
        failures = dict.fromkeys([*result.hard_failures, *result.reasons])  # each once
        why.append("fails: " + "; ".join(list(failures)[:2]))
    for name in rule.failed_scorers:
        value = result.scores.get(name) if result is not None else None
        if value is not None and value < 1.0:
            why.append(f"{name} {value:.2f}")
    if (
        result is not None
        and rule.score_below is not None
        and (result.score or 0.0) < rule.score_below
    ):
        why.append(f"score {result.score or 0.0:.2f} < {rule.score_below:g}")
    judged = [evidence.verdicts[t] for t in conversation.trace_ids if t in evidence.verdicts]
    if rule.judge_below is not None and judged and judged[-1]["score"] < rule.judge_below:
        why.append(f"judge {judged[-1]['score']:.2f} < {rule.judge_below:g}")
    found = [f for t in conversation.trace_ids for f in evidence.feedback.get(t, [])]
    if rule.feedback == "any" and found:
        why.append(f"{len(found)} feedback")
    if rule.feedback == "negative" and any(f.positive is False for f in found):
        why.append("negative feedback")
    return why


def select(
    conversations: Sequence[StoredConversation], rule: QueueRule, evidence: RuleInputs
) -> list[tuple[StoredConversation, str]]:
    """The conversations the rule selects, with the reason, in conversation order."""
    chosen = []
    for conversation in conversations:
        service = conversation.trace.resource_attributes.get("service.name")
        if rule.service is not None and service != rule.service:
            continue
        if not _attributes_hold(conversation, rule.where):
            continue
        why = signals(conversation, rule, evidence) if rule.has_signals else [_filtered(rule)]
        if why:
            chosen.append((conversation, "; ".join(why)))
    if rule.sample is not None and rule.sample < 1:
        chosen = [c for c in chosen if sampled(c[0].trace_ids[0], rule.sample)]
    elif rule.sample is not None:
        keep = lowest((c[0].trace_ids[0] for c in chosen), int(rule.sample))
        chosen = [c for c in chosen if c[0].trace_ids[0] in keep]
    return chosen[: rule.limit] if rule.limit is not None else chosen


@dataclass(frozen=True)
class BuiltQueue:
    """A queue just built: its name, the conversations considered and the items it holds."""

    name: str
    considered: int
    items: int


def build_queue(
    db: str | None, name: str, rule: QueueRule, created_by: str | None, config: Config | None = None
) -> BuiltQueue:
    """Apply ``rule`` to the stored conversations and store queue ``name`` with the selected
    ones (see the module docstring).

    Raises:
        ConfigError: a bad time in the rule.
        StoreError: a queue of that name exists; the store cannot be read.
    """
    since, until = parse_since(rule.since), parse_since(rule.until)
    with Store(db) as store:
        conversations = load_conversations(store, since_unix_nano=since, until_unix_nano=until)
        ids = [t for c in conversations for t in c.trace_ids]
        evidence = RuleInputs(
            scored(conversations, config or load_config()) if rule.needs_scores else {},
            feedback_for(store.db, ids) if rule.feedback else {},
            judge_verdicts(store, ids) if rule.judge_below is not None else {},
        )
        chosen = select(conversations, rule, evidence)
        items = [(c.key, c.trace_ids, why) for c, why in chosen]
        queue_store.create_queue(
            store.db, name, rule.model_dump(exclude_defaults=True), items, created_by
        )
    return BuiltQueue(name, len(conversations), len(items))


def next_item(store: Store, queue: str, reviewer: str) -> QueueItem | None:
    """The item ``reviewer`` reviews next in ``queue`` (claimed for them), None when done.

    Raises:
        StoreError: no such queue.
    """
    queue_store.queue_rule(store.db, queue)
    return queue_store.claim_next(store.db, queue, reviewer)


@dataclass(frozen=True)
class LabelInput:
    """A verdict to record: on the conversation of ``trace_ids`` (``queue``: the queue item it
    completes), by ``reviewer``; ``axes`` maps :data:`~tracegrade.store.review.AXES` to
    ``pass`` / ``fail``; ``expectation`` holds corrected case fields."""

    trace_ids: Sequence[str]
    reviewer: str
    verdict: str
    axes: Mapping[str, str] = field(default_factory=dict)
    note: str | None = None
    expectation: Mapping[str, Any] | None = None
    queue: str | None = None
    conversation: str | None = None
    created_at: float | None = None
    source: str = "review"


MAX_NOTE_CHARS = 16_384
"""Characters of a label's note, at most."""
MAX_FIELD_CHARS = 1_024
"""Characters of a label's reviewer, conversation key and queue name, at most."""
MAX_TRACE_IDS = 1_000
"""Trace ids of one label's conversation, at most."""
MAX_EXPECTATION_CHARS = 65_536
"""Characters of a label's corrected expectation (as JSON), at most."""
CREATED_AT_MAX_S = 4_102_444_800.0
"""The latest ``created_at`` a label may have: 2100-01-01T00:00:00Z (Unix s)."""


def checked(label: LabelInput) -> LabelInput:
    """``label`` when it is well formed.

    Raises:
        ConfigError: no trace id or reviewer; a verdict or axis verdict other than pass / fail;
            an unknown axis; ``created_at`` not a Unix time (s) between 1970 and 2100; a field
            longer than its bound (:data:`MAX_NOTE_CHARS`, :data:`MAX_FIELD_CHARS`,
            :data:`MAX_TRACE_IDS`, :data:`MAX_EXPECTATION_CHARS`), each naming the field.
    """
    if not label.trace_ids or not all(isinstance(t, str) and t for t in label.trace_ids):
        raise ConfigError("a label needs the trace ids of its conversation")
    if not label.reviewer.strip():
        raise ConfigError("a label needs its reviewer's name")
    _check_sizes(label)
    at = label.created_at
    if at is not None and not (math.isfinite(at) and 0 <= at < CREATED_AT_MAX_S):
        raise ConfigError(
            f"created_at {at!r}: a Unix time in seconds between 1970 and 2100 (e.g. 1764000000)"
        )
    if label.verdict not in VERDICTS:
        raise ConfigError(f"verdict {label.verdict!r}: use pass or fail")
    for axis, verdict in label.axes.items():
        if axis not in AXES or verdict not in VERDICTS:
            raise ConfigError(f"axis {axis}={verdict!r}: use {', '.join(AXES)} with pass or fail")
    return label


def _check_sizes(label: LabelInput) -> None:
    if len(label.trace_ids) > MAX_TRACE_IDS:
        raise ConfigError(f"trace_ids: {len(label.trace_ids)} ids, at most {MAX_TRACE_IDS}")
    if any(len(t) > 64 for t in label.trace_ids):
        raise ConfigError("trace_ids: a trace id is 32 hex digits")
    if label.note is not None and len(label.note) > MAX_NOTE_CHARS:
        raise ConfigError(f"note: {len(label.note):,} characters, at most {MAX_NOTE_CHARS:,}")
    for name in ("reviewer", "conversation", "queue", "source"):
        value = getattr(label, name)
        if value is not None and len(value) > MAX_FIELD_CHARS:
            raise ConfigError(f"{name}: {len(value):,} characters, at most {MAX_FIELD_CHARS:,}")
    if label.expectation is not None:
        size = len(json.dumps(label.expectation, default=str))
        if size > MAX_EXPECTATION_CHARS:
            raise ConfigError(
                f"expectation: {size:,} characters of JSON, at most {MAX_EXPECTATION_CHARS:,}"
            )


def record_label(store: Store, label: LabelInput) -> tuple[Label, bool]:
    """Store a person's verdict (its queue item done in the same transaction); the
    conversation key is the queue item's, else the stored traces', else ``trace:<first id>``.
    Returns the label and whether it is new (False: the very same label was stored before).

    Raises:
        ConfigError: a malformed label (:func:`checked`).
    """
    checked(label)
    ids = tuple(t.lower() for t in label.trace_ids)
    key = label.conversation or _key_of(store, ids)
    stored = Label(
        key,
        ids,
        label.reviewer.strip(),
        label.verdict,
        time.time() if label.created_at is None else label.created_at,
        {k: v for k, v in label.axes.items() if v},
        label.note or None,
        dict(label.expectation) if label.expectation else None,
        label.queue,
        label.source,
    )
    return stored, queue_store.add_label(store.db, stored)


def _key_of(store: Store, trace_ids: Sequence[str]) -> str:
    try:
        return conversation_of(store, trace_ids).key
    except StoreError:  # traces not stored (yet): the first trace names it
        return f"trace:{trace_ids[0]}"


def list_queues(store: Store) -> list[dict[str, Any]]:
    """Every queue with its rule and progress (:func:`tracegrade.store.review.queues`)."""
    return queue_store.queues(store.db)


def skip_item(store: Store, queue: str, conversation: str, reviewer: str) -> None:
    """Give a claimed item back; it is never offered to ``reviewer`` again."""
    queue_store.skip(store.db, queue, conversation, reviewer)


def queue_item(store: Store, queue: str, conversation: str) -> QueueItem:
    """One item of a queue.

    Raises:
        StoreError: no such item.
    """
    return queue_store.item(store.db, queue, conversation)


def queue_progress(store: Store, queue: str) -> dict[str, int]:
    """A queue's item counts (``open``, ``claimed``, ``done``, ``total``).

    Raises:
        StoreError: no such queue.
    """
    queue_store.queue_rule(store.db, queue)
    return queue_store.progress(store.db, queue)


SCHEMA_VERSION = "tracegrade.label/1"


class LabelLine(BaseModel):
    """One line of a labels file (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    schema_version: Literal["tracegrade.label/1"] = "tracegrade.label/1"
    conversation: str | None = None
    trace_ids: list[str] = Field(min_length=1)
    reviewer: str = Field(min_length=1)
    created_at: float | None = None
    verdict: Literal["pass", "fail"]
    axes: dict[str, Literal["pass", "fail"]] = Field(default_factory=dict)
    note: str | None = None
    expectation: dict[str, Any] | None = None
    queue: str | None = None
    source: str = "import"


def export_labels(db: str | None, path: str | Path, since_s: float | None = None) -> int:
    """Write the stored labels (made since ``since_s``, Unix s), oldest first, one JSON object
    a line; returns how many."""
    with Store(db) as store:
        labels = queue_store.labels(store.db, since_s=since_s)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "w", encoding="utf-8", newline="\n") as out:
        for label in labels:
            line = {"schema_version": SCHEMA_VERSION, **label.to_dict()}
            out.write(json.dumps(line, ensure_ascii=False).translate(_LINE_BREAKS) + "\n")
    return len(labels)


_LINE_BREAKS = {ord(c): f"\\u{ord(c):04x}" for c in "\x85\u2028\u2029"}
"""Characters JSON leaves raw that other readers take for line breaks (Python's
``str.splitlines``, JavaScript before ES2019): written escaped, so every line reads back."""
MAX_LINE_BYTES = 1 << 20
"""Bytes of one line of a labels file, at most: a longer line is reported and skipped without
being held in memory."""
_SKIP_BYTES = 1 << 16


def _lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes without the line break) of a JSONL file, split on ``\\n`` only;
    None for a line longer than :data:`MAX_LINE_BYTES` (read past in small pieces)."""
    with open(path, "rb") as file:
        for number in itertools.count(1):
            line = file.readline(MAX_LINE_BYTES + 1)
            if not line:
                return
            if line.endswith(b"\n") or len(line) <= MAX_LINE_BYTES:
                yield number, line.rstrip(b"\r\n")
                continue
            while (rest := file.readline(_SKIP_BYTES)) and not rest.endswith(b"\n"):
                pass
            yield number, None


@dataclass
class Imported:
    """What an import did: labels added, lines already stored, bad lines (file:line)."""

    added: int = 0
    duplicates: int = 0
    errors: list[InputError] = field(default_factory=list)


def _problem(exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "line"
    return f"{where}: {first.get('msg', 'invalid')}"


def import_labels(db: str | None, path: str | Path) -> Imported:
    """Store the labels of a labels file (see the module docstring).

    Raises:
        InputError: the file cannot be read.
    """
    source = str(path)
    report, seen = Imported(), 0
    try:
        with Store(db) as store:
            for number, text in _lines(Path(path)):
                if text is not None and not text.strip():
                    continue
                seen += 1
                try:
                    report.added += _import_line(store, text)
                except (ValidationError, ConfigError) as exc:
                    why = _problem(exc) if isinstance(exc, ValidationError) else str(exc)
                    report.errors.append(InputError(why, source=source, line=number))
    except OSError as exc:
        raise InputError(f"cannot read labels: {exc}", source=source) from exc
    report.duplicates = seen - report.added - len(report.errors)
    return report


def _import_line(store: Store, text: bytes | None) -> int:
    """Store one line's label; 1 when new, 0 when already stored.

    Raises:
        ConfigError: a line too long, not UTF-8, or a malformed label.
        ValidationError: not a label line.
    """
    if text is None:
        raise ConfigError(f"line: longer than {MAX_LINE_BYTES:,} bytes, skipped")
    try:
        decoded = text.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"line: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    _, added = record_label(store, _label_input(LabelLine.model_validate_json(decoded)))
    return int(added)


def _label_input(line: LabelLine) -> LabelInput:
    """The label a file's line records (the same fields, less its schema version)."""
    return LabelInput(**line.model_dump(exclude={"schema_version"}))


@dataclass(frozen=True)
class StoredConversation:
    """One conversation: its key, its traces (oldest first) and their merged view."""

    key: str
    members: tuple[AgentTrace, ...]
    trace: AgentTrace

    @property
    def trace_ids(self) -> tuple[str, ...]:
        """The conversation's trace ids, oldest first."""
        return tuple(t.trace_id for t in self.members)

    def as_curated(self, verdict: Mapping[str, Any] | None = None) -> ConversationTraces:
        """The :class:`~tracegrade.curate.derive.ConversationTraces` a case is derived from."""
        return ConversationTraces(self.trace, self.trace_ids, verdict)


def group(traces: Sequence[AgentTrace]) -> list[StoredConversation]:
    """Traces grouped into conversations, oldest conversation first."""
    keys = group_conversations(traces)
    groups: dict[str, list[AgentTrace]] = {}
    for trace in sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id)):
        groups.setdefault(keys[trace.trace_id], []).append(trace)
    return [
        StoredConversation(key, tuple(members), merge(members).trace)
        for key, members in groups.items()
    ]


def load_conversations(
    store: Store, *, since_unix_nano: int | None = None, until_unix_nano: int | None = None
) -> list[StoredConversation]:
    """The stored conversations whose first trace started in [since, until) (Unix ns)."""
    traces = from_store(store, since_unix_nano=since_unix_nano).traces
    if until_unix_nano is not None:
        traces = [t for t in traces if t.start_unix_nano < until_unix_nano]
    return group(traces)


def conversations_of(store: Store, trace_ids: Sequence[str]) -> list[StoredConversation]:
    """The conversations the stored traces ``trace_ids`` form (traces not stored are left
    out)."""
    return group(list(traces_by_id(store, [t.lower() for t in trace_ids]).values()))


def conversation_of(store: Store, trace_ids: Sequence[str]) -> StoredConversation:
    """The conversation of these traces (the one holding the first of them).

    Raises:
        StoreError: none of them is stored.
    """
    return conversation_among(store, conversations_of(store, trace_ids), trace_ids)


def conversation_among(
    store: Store, found: Sequence[StoredConversation], trace_ids: Sequence[str]
) -> StoredConversation:
    """Of the conversations ``found`` among the stored traces ``trace_ids``, the one holding
    the first of them (else the first found).

    Raises:
        StoreError: none was found (``store`` names where they were looked for).
    """
    first = trace_ids[0].lower() if trace_ids else ""
    for conversation in found:
        if first in conversation.trace_ids:
            return conversation
    if found:
        return found[0]
    raise StoreError(f"no trace {', '.join(trace_ids) or '(none given)'} in {store.location}")


def conversation_feedback(store: Store, trace_ids: Sequence[str]) -> list[Feedback]:
    """The end-user feedback on these traces, oldest first."""
    by_trace = feedback_for(store.db, [t.lower() for t in trace_ids])
    found = [f for ids in by_trace.values() for f in ids]
    return sorted(found, key=lambda f: (f.time_unix_nano, f.received_at))


def feedback_shown(
    store: Store, trace_ids: Sequence[str], limit: int = SHOWN_PER_PAGE
) -> tuple[list[Feedback], int]:
    """What a page shows of the feedback on these traces: the first ``limit`` records, oldest
    first, and how many there are in all."""
    return feedback_page(store.db, [t.lower() for t in trace_ids], limit)


def scored(
    conversations: Sequence[StoredConversation],
    config: Config | None = None,
    dataset: Dataset | None = None,
    judge: bool | None = False,
) -> dict[str, CaseResult]:
    """Conversation key -> its result, scored as ``tracegrade score`` scores (reference-free
    without ``dataset``; else the case each conversation matches, conversations matching none
    left out), the judge as ``judge`` says (False: never)."""
    if not conversations:
        return {}
    by_trace = {c.trace.trace_id: c.key for c in conversations}
    run = evaluate_dataset([c.trace for c in conversations], dataset, config=config, judge=judge)
    return {by_trace[r.trace_id]: r for r in run.results if r.trace_id in by_trace}
