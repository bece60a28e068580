"""A recorded conversation as a case with a simulated user (``dataset build
--simulated-user``), for a person to review.

The case keeps the expectations derived from the trace (:mod:`tracegrade.curate.derive`) and
replaces the recorded turns by a simulated ``user`` (:mod:`tracegrade.dataset.simulated`):

- ``input``: the conversation's first user message (the opening, sent as it was);
- ``user.goal``: that message as the goal to start from, marked for the reviewer to restate
  in their own words (what the user wanted, not what they typed);
- ``user.facts``: the values the user gave in any turn (ids, prices, numbers, percentages,
  dates, times: :func:`tracegrade.scoring.values.extract`), named by kind and order
  (``id_1``, ``price_1``) for the reviewer to rename;
- ``user.max_turns``: the recorded turns plus ``extra_turns`` (default 2);
- ``metadata.recorded_turns``: the user messages as recorded and ``metadata.recorded_answer``
  the agent's last answer, so the reviewer writes the stop condition (``user.stop``) and, for
  a keyless run, scripted ``replies``;
- ``metadata.review``: ``pending``, as for every built case.

A model then plays the user (``tracegrade run --simulator llm``) until the reviewer scripts
its replies. Personal data in the goal, the facts and the recorded turns is redacted as in the
input (:func:`tracegrade.curate.build.redact_case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tracegrade.dataset.simulated import MAX_TURNS_LIMIT
from tracegrade.scoring.values import extract
from tracegrade.trace import AgentTrace

FACT_KINDS = ("id", "price", "number", "percent", "date", "time")
"""The kinds of value taken as the user's facts."""
REVIEW_GOAL = "[review: restate the user's goal] "
"""Starts a built goal until a person restates it."""


def user_facts(messages: Sequence[str]) -> dict[str, str]:
    """The values the user gave, once each, in order: ``{kind}_{n}`` -> the value as typed."""
    facts: dict[str, str] = {}
    counts: dict[str, int] = {}
    seen: set[str] = set()
    for message in messages:
        for value in extract(message):
            if value.kind not in FACT_KINDS or value.text in seen:
                continue
            seen.add(value.text)
            counts[value.kind] = counts.get(value.kind, 0) + 1
            facts[f"{value.kind}_{counts[value.kind]}"] = value.text
    return facts


def simulated_user(inputs: Sequence[str], extra_turns: int = 2) -> dict[str, Any]:
    """The simulated user of a conversation whose user messages were ``inputs`` (at least
    one): a goal to restate, the facts given, ``max_turns`` (see the module docstring)."""
    user: dict[str, Any] = {"goal": REVIEW_GOAL + inputs[0]}
    if facts := user_facts(inputs):
        user["facts"] = facts
    user["max_turns"] = min(len(inputs) + extra_turns, MAX_TURNS_LIMIT)
    return user


def simulated_case(case: dict[str, Any], trace: AgentTrace, extra_turns: int = 2) -> dict[str, Any]:
    """``case`` (derived from ``trace``) with a simulated user in place of its recorded turns
    (see the module docstring)."""
    inputs = list(trace.user_inputs)
    user = simulated_user(inputs, extra_turns)
    metadata = {k: v for k, v in (case.get("metadata") or {}).items() if k != "review"}
    metadata["recorded_turns"] = inputs
    if trace.final_output:
        metadata["recorded_answer"] = trace.final_output
    out: dict[str, Any] = {}
    for key, value in case.items():
        if key in ("turns", "contain_scope", "metadata"):
            continue
        out[key] = value
        if key == "input":
            out["user"] = user
    if len(inputs) > 1 and "must_contain" in out:
        out["contain_scope"] = "replies"  # the answer may come over several replies
    out["metadata"] = {**metadata, "review": "pending"}
    return out
