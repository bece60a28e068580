"""What the dashboard's pages show, one function per page: each reads the store, normalises
the traces it needs (once, here: a page never reads spans), and returns the page's data as a
mapping (its JSON twin is the same mapping). The pages run these in a worker thread.

- :func:`case_page`: one case result of a stored run (inputs, answer, chat per attempt,
  waterfalls, the verdict's reason; says so when the run's traces are not in the store);
- :func:`trace_page`: one stored trace (waterfall, chat of its conversation, reference-free
  scores, lint);
- :func:`side_by_side`: one case in two stored runs, answers and conversations side by side;
- :func:`run_page`: one stored run's cases, each failure's reason once.
"""

from __future__ import annotations

import difflib
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import yaml

from tracegrade.config import Config, Pricing
from tracegrade.curate.promote import suggested_facts, tool_choices
from tracegrade.curate.simulated import simulated_user
from tracegrade.normalize.conversations import conversations
from tracegrade.normalize.lint import lint
from tracegrade.pipeline.reading import Normalized, load_normalized
from tracegrade.pipeline.review import (
    conversation_among,
    feedback_shown,
    group,
    scored,
)
from tracegrade.pipeline.run_history import (
    marked_runs,
    passed_hallucinating,
    reason_line,
    reference_free,
)
from tracegrade.run_document import CaseEntry, RunHead, read_case, read_cases, read_head
from tracegrade.spans import TraceData
from tracegrade.store import browse, search
from tracegrade.store import review as queue_store
from tracegrade.store.runs import case_trace_ids, load_run
from tracegrade.store.traces import Store
from tracegrade.store.verdicts import judge_verdicts
from tracegrade.trace import AgentTrace
from tracegrade.web import waterfall
from tracegrade.web.chat import Chat, build_chat

if TYPE_CHECKING:
    from tracegrade.scoring.results import CaseResult


def verdict_reasons(case: CaseEntry, threshold: float | None) -> list[str]:
    """Why a case failed ([] when it passed): its hard failures (a score of 1.000 fails on
    one), else its error, else what went most wrong (the invented values, else the reason of
    its lowest-scoring scorer: :func:`_hardest`) and its score under the threshold, else its
    first reason."""
    if case.passed:
        return []
    if case.hard_failures:
        return list(case.hard_failures)
    errors = [a.error for a in case.attempts if a.error]
    if errors or case.error:
        return errors[:1] or [str(case.error)]
    if case.score is not None and threshold is not None and case.score < threshold:
        below = f"score {case.score:.3f} is below the threshold {threshold:.2f}"
        return [*_hardest(case)[:1], below]
    return list(case.reasons)[:1] or ["not scored"]


INVENTED = ("value_grounding", "faithfulness")
"""Scorers whose failure is an invented fact (values or claims no tool, document or input
gave): the hardest reason a case below the threshold can have, ahead of lower scores."""


def _hardest(case: CaseEntry) -> list[str]:
    """The case's reasons, the hardest first: an invented fact (:data:`INVENTED`), else the
    reason of its lowest-scoring scorer. A scorer's reason line is found from its stored
    reason (:func:`~tracegrade.scoring.labels.reason_line`, or ``name: reason`` in older runs)."""
    by_scorer = {  # a run stored before reason_line prefixed every reason with its name
        name: line
        for name, d in (case.details or {}).items()
        for line in (reason_line(name, str(d.reason)), f"{name}: {d.reason}")
        if line in case.reasons
    }
    scored = sorted(
        (name not in INVENTED, v, name)
        for name, v in case.scores.items()
        if v is not None and v < 1
    )
    first = [by_scorer[name] for *_, name in scored if name in by_scorer][:1]
    return first + [r for r in case.reasons if r not in first]


def other_reasons(case: CaseEntry, shown: Sequence[str] = ()) -> list[str]:
    """The case's reasons less its hard failures (a run document lists each hard failure
    among its reasons too) and less those already ``shown``."""
    skip = {*case.hard_failures, *shown}
    return [r for r in case.reasons if r not in skip]


def _chats(case: CaseEntry, loaded: Normalized) -> list[Chat]:
    """One chat per attempt (repeats are separate conversations)."""
    attempts = [a.trace_ids for a in case.attempts]
    if not any(attempts):
        attempts = [case_trace_ids(case)]
    return [
        build_chat([loaded[t] for t in ids if t in loaded], [t for t in ids if t not in loaded])
        for ids in attempts
        if ids
    ]


def case_page(store: Store, run_id: str, position: int, pricing: Pricing) -> dict[str, Any]:
    """One case result: ``run`` (the run head), ``case``, ``inputs``, ``final_output``,
    ``chats`` (one per attempt), ``waterfalls``, ``missing`` (trace ids the store lacks),
    ``trace_source``, ``verdict_reasons`` (why it failed), ``judge``, ``followups``,
    ``others`` (runs to put it side by side with).

    Raises:
        StoreError: no such run or position.
    """
    stored = browse.load_run_head(store, run_id)
    head = read_head(stored, f"run {run_id}")
    case = browse.load_case_result(store, run_id, position)
    entry = read_case(case, f"run {run_id}", position)
    ids = case_trace_ids(entry)
    loaded = load_normalized(store, ids)
    present = [loaded[t] for t in ids if t in loaded]
    return {
        "run": stored["run"],
        "case": case,
        "position": position,
        "inputs": [i for _, t in present for i in t.user_inputs],
        "final_output": present[-1][1].final_output if present else None,
        "chats": _chats(entry, loaded),
        "waterfalls": [waterfall.build(data, pricing, trace) for data, trace in present],
        "missing": [t for t in ids if t not in loaded],
        "trace_source": head.run.trace_source,
        "verdict_reasons": verdict_reasons(entry, head.summary.threshold),
        "judge": judge.model_dump() if (judge := entry.details.get("judge")) else None,
        "followups": [
            {"repeat": a.repeat, **m.model_dump()}
            for a in entry.attempts
            for m in a.followup_messages
        ],
        "others": _runs_with_case(store, head, entry),
    }


def _runs_with_case(store: Store, head: RunHead, case: CaseEntry) -> list[dict[str, Any]]:
    """Other stored runs of the same dataset (newest first, at most 100), to put this case
    side by side with."""
    dataset = _dataset(head)
    if not dataset or case.case_id is None:
        return []
    rows = browse.list_run_page(store, dataset=dataset, limit=100).rows
    return [r for r in rows if r["run_id"] != head.run.run_id]


def _dataset(head: RunHead) -> str | None:
    """The run's dataset name (None: reference-free scoring)."""
    return head.run.dataset.name if head.run.dataset else None


def chat_of(store: Store, trace_ids: Sequence[str]) -> Chat:
    """The chat of one conversation given by its traces' ids (any order; those not stored are
    listed in :attr:`Chat.missing`): what a page that shows a conversation calls, rendered
    by the ``chat`` macro of ``_chat.html``."""
    loaded = load_normalized(store, trace_ids)
    return build_chat(
        [loaded[t] for t in trace_ids if t in loaded], [t for t in trace_ids if t not in loaded]
    )


def conversation(store: Store, trace: tuple[TraceData, AgentTrace]) -> Chat:
    """The chat of the conversation ``trace`` belongs to: the indexed traces with its
    conversation id (at most 200), grouped as scoring groups them; the trace alone without
    one."""
    data, normalized = trace
    if not normalized.conversation_id:
        return build_chat([trace])
    ids = search.conversation_traces(store, normalized.conversation_id)
    loaded = load_normalized(store, [i for i in ids if i != data.trace_id])
    loaded[data.trace_id] = trace
    group = next(
        g
        for g in conversations([t for _, t in loaded.values()])
        if any(t.trace_id == data.trace_id for t in g)
    )
    return build_chat([loaded[t.trace_id] for t in group])


def _feedback_of(store: Store, trace_ids: Sequence[str], key: str) -> dict[str, Any]:
    """``key``: the first feedback records about these traces (a page shows
    :data:`~tracegrade.store.feedback.SHOWN_PER_PAGE`), ``<key>_total``: how many in all."""
    shown, total = feedback_shown(store, trace_ids)
    return {key: [f.to_dict() for f in shown], f"{key}_total": total}


def trace_page(store: Store, trace_id: str, config: Config) -> dict[str, Any] | None:
    """One stored trace (None when not stored): ``inputs``, ``final_output``, ``waterfall``,
    ``chat`` (its conversation), ``scores`` (reference-free), ``evaluations`` (the evaluation
    results and end-user feedback recorded about it, the first ones, oldest first;
    ``evaluations_total`` counts them all), ``labels`` (reviewers'
    labels of its conversation, oldest first), ``lint``, ``verdicts``."""
    loaded = load_normalized(store, [trace_id])
    if trace_id not in loaded:
        return None
    data, trace = loaded[trace_id]
    chat = conversation(store, loaded[trace_id])
    return {
        "trace_id": trace_id,
        "inputs": list(trace.user_inputs),
        "final_output": trace.final_output,
        "service": trace.resource_attributes.get("service.name"),
        "waterfall": waterfall.build(data, config.pricing, trace),
        "chat": chat,
        "scores": reference_free(trace, config),
        **_feedback_of(store, [trace_id], "evaluations"),
        "labels": [
            label.to_dict() for label in queue_store.labels_of_traces(store.db, chat.trace_ids)
        ],
        "lint": lint(trace).to_dict(),
        "verdicts": search.verdicts(store, [trace_id])[trace_id],
    }


def _side(store: Store, run_id: str, case_id: str) -> dict[str, Any]:
    doc = load_run(store, run_id)
    entries = list(read_cases(doc["cases"], f"run {run_id}"))
    position = next((i for i, c in enumerate(entries) if str(c.case_id) == case_id), None)
    if position is None:
        return {"run": doc["run"], "case": None, "position": None, "chats": [], "missing": []}
    case, entry = doc["cases"][position], entries[position]
    loaded = load_normalized(store, case_trace_ids(entry))
    chats = _chats(entry, loaded)
    return {
        "run": doc["run"],
        "case": case,
        "position": position,
        "chats": chats,
        "answer": next((m.text for m in reversed(chats[0].messages) if m.final), None)
        if chats
        else None,
        "missing": [t for c in chats for t in c.missing],
        "verdict_reasons": verdict_reasons(entry, read_head(doc).summary.threshold),
    }


DIFF_WORDS = 2_000
"""Words of each answer compared by :func:`answer_changes` (the diff is quadratic at worst)."""
_TOKENS = re.compile(r"\s+|\S+")


def answer_changes(base: str | None, current: str | None) -> list[tuple[str, str]]:
    """The word-level changes from the base answer to the current one, as (``same`` |
    ``removed`` | ``added``, text) segments in order ([] when either is missing); the first
    :data:`DIFF_WORDS` words of each (difflib's matcher)."""
    if base is None or current is None:
        return []
    a = _TOKENS.findall(base)[: 2 * DIFF_WORDS]
    b = _TOKENS.findall(current)[: 2 * DIFF_WORDS]
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            out.append(("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(("removed", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(("added", "".join(b[j1:j2])))
    return out


def side_by_side(store: Store, base_id: str, current_id: str, case_id: str) -> dict[str, Any]:
    """Case ``case_id`` in two stored runs: per side (``base``, ``current``) the run, the case
    result (None when the run lacks the case), its chats, final ``answer``, ``missing`` trace
    ids, and ``verdict_reasons``; ``changes``, the answer's word-level changes
    (:func:`answer_changes`).

    Raises:
        StoreError: either run is not stored.
    """
    base = _side(store, base_id, case_id)
    current = _side(store, current_id, case_id)
    changes = answer_changes(base.get("answer"), current.get("answer"))
    return {"case_id": case_id, "base": base, "current": current, "changes": changes}


def case_from_trace(store: Store, trace_id: str, simulated: bool = False) -> dict[str, str]:
    """The case editor's form values for a new case from a stored trace: its user input(s)
    and the tools it called ({} when the trace is not stored). With ``simulated``, a simulated
    user in place of the later turns: the opening as the input, a goal to restate and the
    facts the user gave (:func:`tracegrade.curate.simulated.simulated_user`), for the person
    writing the case to review; the conversation's earlier turns (the trace's ``history``)
    count, so a later turn's trace gives the whole conversation's goal and facts."""
    loaded = load_normalized(store, [trace_id.lower()])
    if not loaded:
        return {}
    _, trace = next(iter(loaded.values()))
    inputs = list(trace.user_inputs)
    values = {
        "input": inputs[0] if inputs else "",
        "turns": "\n".join(inputs) if len(inputs) > 1 and not simulated else "",
        "expected_tools": "\n".join(dict.fromkeys(trace.tools_called)),
        "tier": "full",
    }
    if simulated and inputs:
        conversation = [*trace.history, *inputs]
        values["input"] = conversation[0]
        values["user"] = yaml.safe_dump(
            simulated_user(conversation), sort_keys=False, allow_unicode=True, width=4096
        )
    return values


def breakdown(cases: Iterable[CaseEntry]) -> list[dict[str, Any]]:
    """Per tag and per ``metadata.category``: cases, passed, pass rate, mean score."""
    groups: dict[str, list[CaseEntry]] = defaultdict(list)
    for case in cases:
        for tag in case.tags:
            groups[f"tag: {tag}"].append(case)
        category = case.metadata.get("category") or case.category
        if category:
            groups[f"category: {category}"].append(case)
    out = []
    for name in sorted(groups):
        members = groups[name]
        scores = [c.score for c in members if c.score is not None]
        passed = sum(c.passed for c in members)
        out.append(
            {
                "group": name,
                "cases": len(members),
                "passed": passed,
                "pass_rate": passed / len(members),
                "score": sum(scores) / len(scores) if scores else None,
            }
        )
    return out


def run_page(
    store: Store, run_id: str, sort_key: Callable[[CaseEntry], Any], descending: bool
) -> dict[str, Any]:
    """One stored run: ``run``, ``summary``, ``cases`` sorted by ``sort_key`` (a function of
    each case's :class:`~tracegrade.run_document.CaseEntry`; each case with its ``position``,
    ``verdict_reasons`` and its other ``reasons``: each reason once), ``breakdown`` (per tag
    and category), ``passed_hallucinating`` (how many passing cases count in the hallucination
    rate), ``others`` (runs of the same dataset, the baseline marked; see
    :func:`~tracegrade.pipeline.run_history.marked_runs`), ``gate`` (how the run went against the
    run it was gated with, or None).

    Raises:
        StoreError: no such run.
    """
    doc = load_run(store, run_id)
    head = read_head(doc, f"run {run_id}")
    entries = list(read_cases(doc["cases"], f"run {run_id}"))
    rows = []
    for i, (c, entry) in enumerate(zip(doc["cases"], entries, strict=True)):
        why = verdict_reasons(entry, head.summary.threshold)
        reasons = other_reasons(entry, why)
        rows.append((entry, {**c, "position": i, "verdict_reasons": why, "reasons": reasons}))
    rows.sort(key=lambda row: sort_key(row[0]), reverse=descending)
    cases = [row for _, row in rows]
    return {
        "run": doc["run"],
        "summary": doc["summary"],
        "cases": cases,
        "breakdown": breakdown(entries),
        "passed_hallucinating": passed_hallucinating(entries),
        "others": marked_runs(
            store, browse.list_run_page(store, dataset=_dataset(head), limit=100).rows
        ),
        "gate": marked_runs(store, [doc["run"]])[0]["gate"],
    }


def review_view(store: Store, trace_ids: Sequence[str], config: Config) -> dict[str, Any]:
    """Everything a reviewer sees of one conversation: key, trace ids, the chat, tracegrade's
    reference-free scores and reasons, end-user feedback, earlier labels, stored judge
    verdicts, the tool calls to pick expectations from and the answer facts to suggest.

    Raises:
        StoreError: none of the traces is stored.
    """
    loaded = load_normalized(store, [t.lower() for t in trace_ids])  # read once, for both
    found = group([trace for _, trace in loaded.values()])
    conversation = conversation_among(store, found, trace_ids)
    result = scored([conversation], config).get(conversation.key)
    verdicts = judge_verdicts(store, conversation.trace_ids)
    return {
        "key": conversation.key,
        "trace_ids": list(conversation.trace_ids),
        "chat": build_chat([loaded[t] for t in conversation.trace_ids]),
        "scores": _scores(result),
        **_feedback_of(store, conversation.trace_ids, "feedback"),
        "labels": [
            label.to_dict() for label in queue_store.labels(store.db, conversation=conversation.key)
        ],
        "judge": [verdicts[t] for t in conversation.trace_ids if t in verdicts],
        "tools": tool_choices(conversation.trace),
        "facts": suggested_facts(conversation.trace),
        "turns": len(conversation.trace.user_inputs),
    }


def _scores(result: CaseResult | None) -> dict[str, Any]:
    if result is None:
        return {"score": None, "passed": None, "scorers": {}}
    return {
        "score": result.score,
        "passed": result.passed,
        "reasons": list(result.reasons),
        "scorers": {
            name: {"value": d.get("value"), "reason": d.get("reason")}
            for name, d in result.details.items()
        },
    }
