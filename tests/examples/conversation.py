"""What ``tracegrade run`` does with an in-process agent, reduced to what these tests need:
one root span per case carrying ``tracegrade.case_id``, the case's turns sent in order as a
growing message list, and clarifying questions answered from the case's ``clarifications``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

from tracegrade.dataset import Case

Ask = Callable[[Any], str]
_tracer = trace.get_tracer("tests.examples")


def clarification_reply(case: Case, reply: str) -> str | None:
    """The scripted user reply to a clarifying question (first pattern found), else None."""
    return next(
        (
            answer
            for pattern, answer in case.clarifications.items()
            if re.search(pattern, reply, re.IGNORECASE)
        ),
        None,
    )


def converse(case: Case, ask: Ask) -> list[dict[str, str]]:
    """Send the case's user messages in order (a single-turn case as a plain string), answer
    clarifying questions (at most ``max_followups``); the whole conversation."""
    pending = list(case.turns or [case.input or ""])
    messages: list[dict[str, str]] = []
    followups = 0
    while pending:
        messages.append({"role": "user", "content": pending.pop(0)})
        single = len(messages) == 1 and not pending
        reply = ask(messages[0]["content"] if single else [dict(m) for m in messages])
        messages.append({"role": "assistant", "content": reply})
        if (
            not pending
            and followups < case.max_followups
            and (follow := clarification_reply(case, reply))
        ):
            pending.append(follow)
            followups += 1
    return messages


def run_case(case: Case, ask: Ask) -> list[dict[str, str]]:
    """:func:`converse` inside a root span for the case."""
    with _tracer.start_as_current_span(
        f"tracegrade case {case.id}", attributes={"tracegrade.case_id": case.id or ""}
    ):
        return converse(case, ask)
