"""One golden case from one conversation: expectations derived from what its trace shows.

- ``id``: the ``tracegrade.case_id`` attribute when present, else ``conv-`` and a digest of the
  normalised first input (stable across builds);
- ``input``, or ``turns`` when the conversation has several user inputs;
- ``expected_tools``: the distinct tools performed successfully (failed calls are not
  expected), in order of first use, except those given exact arguments and those matching an
  ``ignore_tools`` pattern;
- ``expected_tool_calls``: every performed call of an ``exact_args`` tool (or of every tool
  with ``all_args``) with its exact arguments, ``required: true``, in the observed order;
  ``exact_args`` tools are also ``strict_tools``: a later performed call of one of them that
  is not expected (an extra write) fails the case;
- ``must_contain``: the values in the final answer (prices, ids, dates, times, quantities,
  single-digit counts such as "4 free checked bags") that a tool result contains, so a later
  answer that drops or changes them fails (searched over every reply, ``contain_scope:
  replies``, when the conversation has several turns);
- ``max_latency_ms`` and ``max_tokens``: the observed figures times ``headroom`` (default 2),
  latency at least :data:`LATENCY_MARGIN_MS` over the observed (:func:`budgets`);
- ``metadata``: source trace ids, ``service.name`` / ``service.version``, models, start time,
  the judge's verdict when a stored run judged the trace, and ``review: pending``.

With ``simulated_user`` the recorded turns become a simulated user
(:mod:`tracegrade.curate.simulated`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

from tracegrade.attributes import CASE_ID_ATTR
from tracegrade.curate.simulated import simulated_case
from tracegrade.normalize.conversations import merge_traces
from tracegrade.scoring.text import normalize
from tracegrade.scoring.values import EvidenceValues, extract
from tracegrade.trace import AgentTrace, ToolCall

GROUNDED_KINDS = ("price", "percent", "number", "date", "time", "id")
_QUANTITY = re.compile(r"(?<![\w.,$*])(\d)\**\s+(?=[A-Za-z])(?!am\b|pm\b)")
"""A single-digit quantity ("4 free checked bags"): too common to be a value in general
(:mod:`tracegrade.scoring.values` skips it), but an answer's count of something."""


@dataclass(frozen=True)
class DeriveOptions:
    """How expectations are derived (see the module docstring)."""

    exact_args: Sequence[str] = ()
    all_args: bool = False
    ignore_tools: Sequence[str] = ()
    """Glob patterns (``get_*``) of tools left out of the expectations (lookups that do not
    matter for the outcome)."""
    headroom: float = 2.0
    tags: Sequence[str] = ("from-traces",)
    simulated_user: bool = False
    """A simulated user in place of the recorded turns (:mod:`tracegrade.curate.simulated`)."""


@dataclass(frozen=True)
class ConversationTraces:
    """The traces of one conversation (one trace, or those sharing a conversation id), merged
    into one view, oldest first; ``verdict`` is the judge's stored verdict, if any."""

    trace: AgentTrace
    trace_ids: tuple[str, ...]
    verdict: Mapping[str, Any] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def merge(traces: Sequence[AgentTrace]) -> ConversationTraces:
    """One conversation from its traces (:func:`~tracegrade.normalize.conversations.merge_traces`:
    inputs, calls and usage in time order, the last trace's answer); a single trace stays as
    it is."""
    ordered = sorted(traces, key=lambda t: (t.start_unix_nano, t.trace_id))
    return ConversationTraces(merge_traces(ordered), tuple(t.trace_id for t in ordered))


def case_id(trace: AgentTrace) -> str:
    """The trace's ``tracegrade.case_id``, else a stable id from its first input."""
    value = trace.root_attributes.get(CASE_ID_ATTR, trace.resource_attributes.get(CASE_ID_ATTR))
    if value is not None:
        return str(value)
    first = normalize(trace.user_inputs[0]) if trace.user_inputs else trace.trace_id
    return "conv-" + hashlib.sha256(first.encode()).hexdigest()[:10]


def _exact(call: ToolCall, options: DeriveOptions) -> bool:
    return options.all_args or call.name in options.exact_args


def tool_expectations(trace: AgentTrace, options: DeriveOptions) -> dict[str, Any]:
    """``expected_tools``, ``expected_tool_calls`` and ``strict_tools`` (module docstring)."""
    performed = [
        c
        for c in trace.tool_calls
        if c.performed and not any(fnmatchcase(c.name, p) for p in options.ignore_tools)
    ]
    names = list(dict.fromkeys(c.name for c in performed if not _exact(c, options)))
    calls = [
        {"name": c.name, "arguments": c.arguments, "required": True}
        for c in performed
        if _exact(c, options) and isinstance(c.arguments, dict)
    ]
    out: dict[str, Any] = {}
    if names:
        out["expected_tools"] = names
    if calls:
        out["expected_tool_calls"] = calls
    if options.exact_args:
        out["strict_tools"] = list(dict.fromkeys(options.exact_args))
    return out


def grounded_values(trace: AgentTrace) -> list[str]:
    """The values of the final answer that some tool result contains, as written, once each."""
    if not trace.final_output:
        return []
    evidence = EvidenceValues.of([c.result for c in trace.tool_calls if c.result])
    values = [
        v.text
        for v in extract(trace.final_output)
        if v.kind in GROUNDED_KINDS and evidence.supports(v)
    ]
    values += [  # single-digit counts, when a tool result holds the number
        m.group(1) for m in _QUANTITY.finditer(trace.final_output) if m.group(1) in evidence.numbers
    ]
    return list(dict.fromkeys(values))


LATENCY_MARGIN_MS = 1000
"""The least a built latency budget adds to the observed latency (ms): a fast trace's
``headroom`` times its latency (2 x 40 ms) is within a re-run's jitter (a busy machine, a
cold cache), not a regression."""


def budgets(trace: AgentTrace, headroom: float) -> dict[str, Any]:
    """``max_latency_ms``: the observed latency (ms; the agent's own root span, as
    ``tracegrade run`` measures it: :attr:`AgentTrace.duration_ms`) times ``headroom``, and at
    least :data:`LATENCY_MARGIN_MS` more than observed; ``max_tokens``: the observed tokens
    times ``headroom`` (a deterministic count)."""
    out: dict[str, Any] = {}
    if trace.duration_ms > 0:
        observed = trace.duration_ms
        out["max_latency_ms"] = math.ceil(max(observed * headroom, observed + LATENCY_MARGIN_MS))
    tokens = (trace.input_tokens or 0) + (trace.output_tokens or 0)
    if tokens:
        out["max_tokens"] = math.ceil(tokens * headroom)
    return out


def metadata(conversation: ConversationTraces) -> dict[str, Any]:
    """Where the case came from, and ``review: pending``."""
    trace = conversation.trace
    started = dt.datetime.fromtimestamp(trace.start_unix_nano / 1e9, dt.UTC)
    resource = trace.resource_attributes
    out: dict[str, Any] = {
        "source_traces": list(conversation.trace_ids),
        "service.name": resource.get("service.name"),
        "service.version": resource.get("service.version"),
        "models": sorted({c.model for c in trace.llm_calls if c.model}),
        "started_at": started.isoformat().replace("+00:00", "Z"),
    }
    if trace.conversation_id:
        out["conversation_id"] = trace.conversation_id
    if conversation.verdict:
        out["judge_verdict"] = dict(conversation.verdict)
    out.update(conversation.extra)
    out["review"] = "pending"
    return {k: v for k, v in out.items() if v is not None}


def derive_case(conversation: ConversationTraces, options: DeriveOptions) -> dict[str, Any] | None:
    """The case of one conversation (see the module docstring); None without a user input."""
    trace = conversation.trace
    if not trace.user_inputs:
        return None
    case: dict[str, Any] = {"id": case_id(trace), "input": trace.user_inputs[0]}
    if len(trace.user_inputs) > 1:
        case["turns"] = list(trace.user_inputs)
    case.update(tool_expectations(trace, options))
    if values := grounded_values(trace):
        case["must_contain"] = values
        if len(trace.user_inputs) > 1:  # a conversation answers over several replies
            case["contain_scope"] = "replies"
    case.update(budgets(trace, options.headroom))
    if options.tags:
        case["tags"] = list(options.tags)
    case["metadata"] = metadata(conversation)
    return simulated_case(case, trace) if options.simulated_user else case
