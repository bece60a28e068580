"""``tracegrade dataset build``: choose conversations, derive one case each, redact, collapse
near-duplicates and write (or append to) a golden dataset that :func:`load_dataset` loads.

Selection, in order: conversations (traces grouped by conversation id, else one per trace);
``where`` filters (``KEY=VALUE`` on a resource or root-span attribute of any of the
conversation's traces; all must hold); ``trace_ids`` (a conversation holding one of them);
``sample`` (a fraction below 1, or a count, decided from the first trace id:
:mod:`tracegrade.sampling`). Near-duplicates: two cases whose normalised inputs (all turns)
have a :func:`rapidfuzz.fuzz.ratio` of at least ``similarity`` (0-100, default 90), or the
same id, are one case; the first kept lists the others under ``metadata.duplicates``. With
``append`` the existing cases' ids and inputs count as kept, so nothing is added twice.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from rapidfuzz import fuzz, process

from tracegrade._util.bounded import load_yaml
from tracegrade.curate.derive import ConversationTraces, DeriveOptions, derive_case, merge
from tracegrade.curate.personal_data import Numbering, PersonalDataRedactor, is_redacted
from tracegrade.dataset import load_dataset
from tracegrade.errors import ConfigError, DatasetError
from tracegrade.normalize.conversations import group_conversations
from tracegrade.sampling import lowest, sampled
from tracegrade.scoring.text import normalize
from tracegrade.trace import AgentTrace


@dataclass(frozen=True)
class BuildOptions:
    """What ``dataset build`` selects and how it derives cases (see the module docstring)."""

    derive: DeriveOptions = field(default_factory=DeriveOptions)
    where: Mapping[str, str] = field(default_factory=dict)
    trace_ids: Sequence[str] = ()
    sample: float | None = None
    redact: Sequence[str] = ()
    similarity: float = 90.0


@dataclass
class BuildReport:
    """What a build did: conversations read and selected, cases derived, written, collapsed
    as near-duplicates of each other, left out as already in the dataset (``--append``: a
    case an existing one has, by id or by a near-identical input), and skipped (no user
    input)."""

    conversations: int = 0
    selected: int = 0
    cases: list[dict[str, Any]] = field(default_factory=list)
    duplicates: int = 0
    skipped: int = 0
    existing: int = 0
    already_in: int = 0
    """Conversations whose case the dataset already has (``--append``)."""


def parse_where(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a mapping.

    Raises:
        ConfigError: an item without ``=``.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--where {item!r}: use KEY=VALUE, e.g. user.feedback=positive")
        out[key.strip()] = value.strip()
    return out


def conversations(
    traces: Sequence[AgentTrace], verdicts: Mapping[str, Mapping[str, Any]] | None = None
) -> list[tuple[ConversationTraces, list[AgentTrace]]]:
    """Traces grouped into conversations (by conversation id, else by history continuity:
    :func:`~tracegrade.normalize.conversations.group_conversations`), oldest conversation
    first, each with the judge verdict of its last judged trace."""
    keys = group_conversations(traces)
    groups: dict[str, list[AgentTrace]] = {}
    for trace in traces:
        groups.setdefault(keys[trace.trace_id], []).append(trace)
    out = []
    for members in groups.values():
        conversation = merge(members)
        verdict = next(
            (verdicts[t] for t in reversed(conversation.trace_ids) if verdicts and t in verdicts),
            None,
        )
        out.append(
            (ConversationTraces(conversation.trace, conversation.trace_ids, verdict), members)
        )
    return sorted(out, key=lambda c: (c[0].trace.start_unix_nano, c[0].trace_ids))


def _matches(members: Sequence[AgentTrace], where: Mapping[str, str]) -> bool:
    def holds(key: str, value: str) -> bool:
        return any(
            str(attrs[key]) == value
            for t in members
            for attrs in (t.root_attributes, t.resource_attributes)
            if key in attrs
        )

    return all(holds(k, v) for k, v in where.items())


def select(
    groups: Sequence[tuple[ConversationTraces, list[AgentTrace]]], options: BuildOptions
) -> list[ConversationTraces]:
    """The conversations ``where``, ``trace_ids`` and ``sample`` keep (module docstring)."""
    wanted = {t.lower() for t in options.trace_ids}
    chosen = [
        c
        for c, members in groups
        if _matches(members, options.where) and (not wanted or wanted & set(c.trace_ids))
    ]
    if options.sample is None:
        return chosen
    if options.sample < 1:
        return [c for c in chosen if sampled(c.trace_ids[0], options.sample)]
    keep = lowest((c.trace_ids[0] for c in chosen), int(options.sample))
    return [c for c in chosen if c.trace_ids[0] in keep]


def redact_case(case: dict[str, Any], redactor: PersonalDataRedactor) -> dict[str, Any]:
    """The case with personal data replaced in its input, turns, simulated user (goal, facts,
    recorded turns and answer) and expectations; a redacted
    ``must_contain`` value is dropped and a redacted argument accepts any value. The input and
    turns get numbered placeholders (the same value the same one in every turn), which
    ``score`` matches as any text and ``run`` replaces with made-up values of their kind
    (:mod:`tracegrade.dataset.placeholders`)."""
    out = dict(case)
    numbering = Numbering()
    out["input"] = redactor.text(case["input"], numbering)
    if "turns" in case:
        out["turns"] = [redactor.text(t, numbering) for t in case["turns"]]
    if "user" in case:
        out["user"] = _redact_user(case["user"], redactor, numbering)
    metadata = case.get("metadata") or {}
    if "recorded_turns" in metadata:
        out["metadata"] = {
            **metadata,
            "recorded_turns": [redactor.text(t, numbering) for t in metadata["recorded_turns"]],
            **(
                {"recorded_answer": redactor.text(metadata["recorded_answer"], numbering)}
                if "recorded_answer" in metadata
                else {}
            ),
        }
    if "must_contain" in case:
        kept = [v for v in case["must_contain"] if not is_redacted(redactor.value(v))]
        out["must_contain"] = kept
        if not kept:
            del out["must_contain"]
    if "expected_tool_calls" in case:
        out["expected_tool_calls"] = [
            {
                **call,
                "arguments": {
                    k: {"any": True} if is_redacted(redactor.value(v)) else v
                    for k, v in call["arguments"].items()
                },
            }
            for call in case["expected_tool_calls"]
        ]
    return out


def _redact_user(
    user: Mapping[str, Any], redactor: PersonalDataRedactor, numbering: Numbering
) -> dict[str, Any]:
    """A simulated user's goal and facts with personal data replaced (the same placeholders as
    in the input)."""
    out = dict(user)
    out["goal"] = redactor.text(user["goal"], numbering)
    if "facts" in user:
        out["facts"] = {k: redactor.text(str(v), numbering) for k, v in user["facts"].items()}
    return out


def _key(case: Mapping[str, Any]) -> str:
    return normalize(" \n ".join(case.get("turns") or [case.get("input") or ""]))


class _Kept:
    """Cases kept so far, by id and by normalised input (for near-duplicate lookups)."""

    def __init__(self, similarity: float):
        self.similarity = similarity
        self.ids: dict[str, dict[str, Any] | None] = {}
        self.keys: list[str] = []
        self.owners: list[dict[str, Any] | None] = []

    def add(self, case: Mapping[str, Any], owner: dict[str, Any] | None) -> None:
        self.ids[str(case.get("id"))] = owner
        self.keys.append(_key(case))
        self.owners.append(owner)

    def duplicate_of(self, case: Mapping[str, Any]) -> tuple[bool, dict[str, Any] | None]:
        """(is a duplicate, the new case it duplicates, None for an existing one)."""
        if str(case["id"]) in self.ids:
            return True, self.ids[str(case["id"])]
        found = process.extractOne(
            _key(case), self.keys, scorer=fuzz.ratio, score_cutoff=self.similarity
        )
        return (True, self.owners[found[2]]) if found else (False, None)


def build_dataset(
    traces: Sequence[AgentTrace],
    options: BuildOptions,
    existing: Sequence[Mapping[str, Any]] = (),
    verdicts: Mapping[str, Mapping[str, Any]] | None = None,
) -> BuildReport:
    """Cases from ``traces`` (see the module docstring); ``existing`` cases are not repeated.

    Raises:
        ConfigError: a bad ``--redact`` pattern.
    """
    redactor = PersonalDataRedactor.of(options.redact)
    groups = conversations(traces, verdicts)
    report = BuildReport(conversations=len(groups), existing=len(existing))
    chosen = select(groups, options)
    report.selected = len(chosen)
    kept = _Kept(options.similarity)
    for case in existing:
        kept.add(case, None)
    for conversation in chosen:
        derived = derive_case(conversation, options.derive)
        if derived is None:
            report.skipped += 1
            continue
        case = redact_case(derived, redactor)
        duplicate, owner = kept.duplicate_of(case)
        if duplicate and owner is None:
            report.already_in += 1
            continue
        if owner is not None:
            report.duplicates += 1
            owner["metadata"].setdefault("duplicates", []).extend(conversation.trace_ids)
            continue
        kept.add(case, case)
        report.cases.append(case)
    return report


def read_existing(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """An existing dataset file for ``--append``: its parsed document and its cases.

    Raises:
        DatasetError: the file does not load as a dataset.
    """
    load_dataset(path)  # the whole file must be valid before anything is added
    data = load_yaml(path.read_text(encoding="utf-8"))
    cases = data if isinstance(data, list) else data.get("cases", [])
    return data, cases


def write_dataset(
    path: Path, cases: list[dict[str, Any]], document: Any = None, trace_source: str = ""
) -> None:
    """Write ``cases`` as a YAML dataset (added to ``document``'s cases when appending), then
    check that it loads; a new dataset's description names ``trace_source``, where its traces
    were read from.

    Raises:
        DatasetError: the written file does not load (a bug; the message names the field).
    """
    if document is None:
        today = dt.datetime.now(dt.UTC).date().isoformat()
        document = {
            "name": path.stem,
            "description": f"Built by tracegrade dataset build from {trace_source or 'traces'} on "
            f"{today}; review each case (metadata.review: pending).",
            "cases": [],
        }
    target = document if isinstance(document, list) else document.setdefault("cases", [])
    target.extend(cases)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as out:
        yaml.safe_dump(document, out, sort_keys=False, allow_unicode=True, width=100)
    try:
        load_dataset(path)
    except DatasetError as exc:  # pragma: no cover - derive_case writes only valid fields
        raise DatasetError(f"{path}: the built dataset does not load: {exc}") from exc
