"""Is what was derived plausible? Checks that a present value is the kind of value it should be.

A field can be present and still wrong: a framework's envelope read as the user's message
(``{"messages": [...]}``), an agent's name read as the input (OpenLLMetry's ``kwargs.name``),
a Python repr read as the answer, a placeholder (``<elided>``) read as content, a tool's
arguments recorded differently by the tool span and the model. Normalisation avoids each
shape it knows (:mod:`.envelopes`, :mod:`.arguments`); these checks catch what it does not,
so lint never calls such a trace all ok.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from tracegrade.normalize.envelopes import looks_like_repr, message_list
from tracegrade.normalize.messages import is_placeholder
from tracegrade.trace import AgentTrace, ToolCall


def _json_structure(text: str) -> str | None:
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        value = json.loads(stripped)
    except ValueError:
        return None
    if isinstance(value, dict):
        return "a JSON object"
    return "a JSON array" if isinstance(value, list) else None


_ENVELOPE_KEYS = frozenset({"messages", "inputs", "outputs", "args", "kwargs", "lc", "raw", "task"})
"""Top-level keys of the framework objects seen in place of a message (:mod:`.envelopes`)."""


def text_problem(text: str, agent_names: Iterable[str]) -> tuple[bool, str] | None:
    """Why ``text`` (a user input or a final answer) looks like something else than a
    message: ``(certain, reason)``; ``certain`` False for a JSON value that may be a
    structured answer. ``None`` when it looks like a message."""
    stripped = text.strip()
    if is_placeholder(text):
        return True, f"is the placeholder {stripped!r}: content was not captured"
    if stripped in {n for n in agent_names if n}:
        return True, f"is the agent's name {stripped!r}, not a message"
    if message_list(text) is not None:
        return True, "is a framework's message envelope (a message list or state), not its text"
    if looks_like_repr(text):
        return True, "is a Python object's repr, not content"
    structure = _json_structure(text)
    if structure is None:
        return None
    value = json.loads(stripped)
    if isinstance(value, dict) and not _ENVELOPE_KEYS.isdisjoint(value):
        return (
            True,
            f"parses as {structure} with {sorted(_ENVELOPE_KEYS & set(value))}: a "
            "framework's call object or state, not its text",
        )
    return False, f"parses as {structure} (structured output, or a framework's call object?)"


def _names(trace: AgentTrace) -> list[str]:
    return [a.name for a in trace.agents if a.name] + [trace.root_span_name]


def texts(trace: AgentTrace) -> dict[str, list[tuple[bool, str]]]:
    """Problems with the user inputs and the final answer: ``{field: [(certain, reason)]}``."""
    names = _names(trace)
    found: dict[str, list[tuple[bool, str]]] = {}
    for number, text in enumerate(trace.user_inputs, 1):
        problem = text_problem(text, names)
        if problem:
            found.setdefault("user_inputs", []).append(
                (problem[0], f"user input {number} {problem[1]}")
            )
    if trace.final_output is not None:
        problem = text_problem(trace.final_output, names)
        if problem:
            found.setdefault("final_output", []).append(
                (problem[0], f"the final answer {problem[1]}")
            )
    return found


def argument_problems(calls: Sequence[ToolCall]) -> list[tuple[bool, str]]:
    """Tool calls whose arguments disagree between records (certain), or are a bare value
    where function tools take an object (not certain: no request to compare with)."""
    problems = []
    for call in calls:
        if call.arguments_mismatch:
            problems.append((True, f"{call.name}: {call.arguments_mismatch}"))
        elif (
            call.arguments_recorded
            and call.arguments is not None
            and not isinstance(call.arguments, (dict, list))
        ):
            problems.append(
                (
                    False,
                    f"{call.name}: arguments recorded as the bare value {call.arguments!r}, "
                    "not an object of named arguments",
                )
            )
    return problems


def result_problems(calls: Sequence[ToolCall]) -> list[str]:
    """Tool calls whose result is a framework's envelope (a serialised message) or a repr."""
    problems = []
    for call in calls:
        result = call.result
        if result is None:
            continue
        if message_list(result) is not None:
            problems.append(f"{call.name}: the result is a serialised message, not its content")
        elif looks_like_repr(result):
            problems.append(f"{call.name}: the result is a Python object's repr")
    return problems
