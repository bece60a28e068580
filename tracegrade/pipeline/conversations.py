"""Stored conversations for review: read from the store and grouped (a conversation may span
several traces: :mod:`tracegrade.normalize.conversations`), scored reference-free with the
engine every face uses, and joined with their end-user feedback (the chat a reviewer reads is
:func:`tracegrade.web.pages.chat_of`, the dashboard's chat view).

A conversation is addressed by its key (``id:<conversation id>`` or ``trace:<first trace id>``)
and its trace ids; labels and feedback join it by trace id, so either may arrive before the
traces do.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.curate.derive import Conversation, merge
from tracegrade.dataset import Dataset
from tracegrade.errors import StoreError
from tracegrade.normalize.conversations import group_conversations
from tracegrade.pipeline._score import evaluate_dataset
from tracegrade.pipeline.reading import from_store, traces_by_id
from tracegrade.scoring.results import CaseResult
from tracegrade.store.feedback import Feedback, feedback_for
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace


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

    def as_curated(self, verdict: Mapping[str, Any] | None = None) -> Conversation:
        """The :class:`~tracegrade.curate.derive.Conversation` a case is derived from."""
        return Conversation(self.trace, self.trace_ids, verdict)


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
