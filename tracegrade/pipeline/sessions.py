"""``score --follow --sessions``: whole conversations scored as one, beside their traces.

Which conversation a trace belongs to is decided as ``dataset build`` groups traces
(:mod:`tracegrade.normalize.conversations`): by its conversation id (``gen_ai.conversation.id``,
``session.id``...), else by history continuity (a trace whose first LLM call replays every
user turn of an earlier trace continues that trace's conversation), else it starts its own.
A follower records each trace it scores in its conversation (:mod:`tracegrade.store.sessions`);
a conversation quiet for ``quiet_s`` seconds is claimed, its traces merged into one
(:func:`~tracegrade.normalize.conversations.merge_traces`) and scored reference-free by the
multi-turn checks: ``context_preserved`` over every turn (each turn after the first kept the
earlier ones), the follower's reference-free rules over all its turns (``production_rules``,
budgets, tool errors...), and, when the follower judges, the judge on the whole conversation
with the config's ``sessions.rubric`` (default the built-in ``conversation`` rubric). Its
result is stored and printed beside the per-trace ones (``SESSION PASS ...``), exported with
``tracegrade.session``, and scored again, as a new version, when a later turn arrives.

With ``--sessions``, sampling keeps or drops a conversation whole: by the bucket of its key
(:mod:`tracegrade.sampling`, at the rate its traces' rule gives), so no conversation is
scored with turns missing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tracegrade.config import Config
from tracegrade.dataset import Judge
from tracegrade.judge.conversation import ConversationJudge
from tracegrade.judge.rubrics import CONVERSATION
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.normalize import normalize_trace
from tracegrade.normalize.conversations import merge_traces
from tracegrade.report.evaluation_signals import SESSION_KEY
from tracegrade.scoring import CaseResult, evaluate
from tracegrade.scoring.context import ContextPreserved
from tracegrade.scoring.score import Scorer
from tracegrade.store import sessions as stored
from tracegrade.store.sessions import Member, SessionClaim, SessionRow
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

DEFAULT_QUIET_S = 300.0
"""Seconds without a new turn after which a conversation is scored (``--session-quiet-s``)."""
BATCH = 8
"""Conversations claimed at a time."""


@dataclass(frozen=True)
class SessionSettings:
    """How conversations are scored: after ``quiet_s`` seconds without a turn, with these
    ``scorers`` (:func:`session_scorers`) and pass ``threshold`` (None: the config's; the
    conversation judge's own threshold is ``sessions.threshold``)."""

    quiet_s: float
    scorers: tuple[Scorer, ...]
    threshold: float | None = None


def session_scorers(scorers: Sequence[Scorer], config: Config) -> tuple[Scorer, ...]:
    """The scorers of a whole conversation, from a follower's: ``context_preserved`` over
    every turn, the judge asked the config's ``sessions.rubric`` (default ``conversation``),
    the others as they are."""
    out: list[Scorer] = []
    settings = config.sessions
    for scorer in scorers:
        if isinstance(scorer, ContextPreserved):
            out.append(dataclasses.replace(scorer, every_turn=True))
        elif isinstance(scorer, JudgeScorer):
            if scorer.enabled and not any(isinstance(s, ConversationJudge) for s in out):
                rubric = settings.get("rubric") or CONVERSATION
                spec = Judge(rubric=rubric, threshold=settings.get("threshold", 0.7))
                out.append(ConversationJudge(scorer, spec))
        else:
            out.append(scorer)
    return tuple(out)


def members_of(store: Store, traces: Sequence[AgentTrace]) -> dict[str, Member]:
    """Trace id -> its place in its conversation (module docstring): the traces of this
    batch in start order, earlier conversations' turns looked up in the store."""
    ordered = sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id))
    wanted = [d for t in ordered if not t.conversation_id and (d := stored.turns_digest(t.history))]
    known = stored.continued(store.db, wanted)
    out: dict[str, Member] = {}
    for trace in ordered:
        digest = stored.turns_digest(trace.history)
        if trace.conversation_id:
            key = f"id:{trace.conversation_id}"
        elif digest is not None and digest in known:
            key = known[digest]
        else:
            key = f"trace:{trace.trace_id}"
        own = stored.turns_digest((*trace.history, *trace.user_inputs))
        if own is not None:
            known[own] = key
        service = trace.resource_attributes.get("service.name")
        out[trace.trace_id] = Member(
            key,
            trace.trace_id,
            trace.start_unix_nano,
            own,
            None if service is None else str(service),
        )
    return out


def score_sessions(
    store: Store,
    worker: str,
    settings: SessionSettings,
    config: Config,
    evaluator: str,
    lease_s: float,
) -> list[tuple[CaseResult, bool]]:
    """Claim the conversations that went quiet, score each as one and store the results with
    the claims; returns the (result, updated) pairs stored, each result's ``metadata``
    holding its conversation's key (:data:`~tracegrade.report.evaluation_signals.SESSION_KEY`),
    version, turns and trace ids."""
    claims = stored.claim(store.db, worker, BATCH, settings.quiet_s, lease_s)
    if not claims:
        return []
    merged: dict[str, tuple[SessionClaim, list[AgentTrace]]] = {}
    for claimed in claims:
        traces = [
            normalize_trace(t) for t in store.load(stored.members(store.db, claimed.key)) if t.spans
        ]
        if traces:
            merged[claimed.key] = (
                claimed,
                sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id)),
            )
    results = _scored(merged, settings, config)
    items: list[tuple[SessionClaim, SessionRow | None]] = []
    for claimed in claims:
        result = results.get(claimed.key)
        items.append((claimed, None if result is None else _row(result, evaluator)))
    done = stored.complete(store.db, worker, items)
    return [
        (results[c.key], c.updated)
        for c, ok in zip(claims, done, strict=True)
        if ok and c.key in results
    ]


def _scored(
    merged: Mapping[str, tuple[SessionClaim, list[AgentTrace]]],
    settings: SessionSettings,
    config: Config,
) -> dict[str, CaseResult]:
    """Conversation key -> its result, parented to its last turn."""
    whole = {key: merge_traces(traces) for key, (_, traces) in merged.items()}
    by_first = {trace.trace_id: key for key, trace in whole.items()}
    run = evaluate(
        list(whole.values()), None, list(settings.scorers), config, threshold=settings.threshold
    )
    out: dict[str, CaseResult] = {}
    for result in run.results:
        key = by_first.get(result.trace_id or "")
        if key is None:
            continue
        claimed, traces = merged[key]
        last = traces[-1]
        metadata: dict[str, Any] = {
            **result.metadata,
            SESSION_KEY: key,
            "version": claimed.version,
            "turns": len(traces),
            "trace_ids": [t.trace_id for t in traces],
        }
        out[key] = dataclasses.replace(
            result, trace_id=last.trace_id, span_id=last.evaluated_span_id, metadata=metadata
        )
    return out


def _row(result: CaseResult, evaluator: str) -> SessionRow:
    from tracegrade.report.document import case_entry

    ids = tuple(result.metadata.get("trace_ids") or ())
    entry = case_entry(result).model_dump(mode="json", exclude_unset=True)
    document = {**entry, "session": result.metadata.get(SESSION_KEY)}
    return SessionRow(evaluator, result.passed, result.score, ids, document)
