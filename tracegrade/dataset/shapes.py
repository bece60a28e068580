"""The case shapes of the design documents, mapped onto tracegrade's case fields.

Golden cases written for the design documents load as they are, JSON or YAML:

- **Seed files** (``input, expected_tools, expected_fields, criteria, tier``): already
  tracegrade's own field names; nothing to map.
- **Case editor** (``name, prompt, judge_prompt, judge_threshold``): ``prompt`` is the
  ``input``; ``judge_prompt`` / ``judge_threshold`` become ``judge: {rubric, threshold}``.
  A multi-turn case lists ``turns`` (or the document's ``rounds``) whose items are a string
  or an object ``{prompt, judge_prompt?, judge_threshold?, revive?}``; the user messages
  become ``turns``, and the per-turn prompts one rubric that lists them turn by turn (the
  judge reads the whole conversation and grades its final answer), its threshold the case's
  ``judge_threshold`` or else the highest per-turn threshold. ``test_agent_revival: true``
  is ``revive: true`` (the agent is restarted before every turn after the first); a turn
  object's ``revive: true`` revives it before that turn only.
- **Regression alerts** ``EvalCase`` (``id, name, category, input.messages, expectedOutput.
  {mustContain, mustNotContain, expectedTools, maxLatencyMs}, tags, weight``): the user
  messages of ``input.messages`` become ``input`` (one) or ``turns`` (several);
  ``expectedOutput`` spreads into ``must_contain``, ``must_not_contain``,
  ``expected_tools`` and ``max_latency_ms``.

``name`` and ``category`` are kept on the case. :func:`to_case_fields` returns the mapped
fields and the problems found (``(path, message)``, ``path`` a tuple of keys and indexes
into the original case), so the loader reports them with the other errors of the file.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracegrade.dataset.located import suggestion

Problem = tuple[tuple[str | int, ...], str]

EXPECTED_OUTPUT = {
    "mustContain": "must_contain",
    "mustNotContain": "must_not_contain",
    "expectedTools": "expected_tools",
    "maxLatencyMs": "max_latency_ms",
}
"""``expectedOutput`` key of the regression-alert ``EvalCase`` -> tracegrade case field."""

CASE_KEYS = (
    "prompt",
    "judge_prompt",
    "judge_threshold",
    "expectedOutput",
    "rounds",
    "test_agent_revival",
)
"""Case keys of the other shapes (suggested for a misspelt key like any case field)."""

TURN_TEXT_KEYS = ("prompt", "input", "content", "message")
"""Keys that hold the user's message in a turn object (the first present wins)."""


def to_case_fields(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Map one case of any design-document shape onto tracegrade's case fields (see the
    module docstring). Keys that belong to no shape are passed through, for the case model to
    reject with a suggestion."""
    case = dict(raw)
    problems: list[Problem] = []
    if "prompt" in case and "input" not in case:
        case["input"] = case.pop("prompt")
    if "rounds" in case and "turns" not in case:
        case["turns"] = case.pop("rounds")
    if "test_agent_revival" in case and "revive" not in case:
        case["revive"] = case.pop("test_agent_revival")
    if isinstance(case.get("input"), Mapping):
        case.update(_from_messages(case.pop("input"), problems))
    if isinstance(case.get("turns"), list):
        case.update(_from_turns(case["turns"], case, problems))
    if "judge_prompt" in case or "judge_threshold" in case:
        case.update(_judge(case, problems))
    if isinstance(case.get("expectedOutput"), Mapping):
        case.update(_expected_output(case.pop("expectedOutput"), problems))
    return case, problems


def _from_messages(value: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """``input: {messages: [{role, content}]}`` -> ``input`` or ``turns`` (user messages)."""
    messages = value.get("messages")
    extra = sorted(set(value) - {"messages"})
    if extra:
        problems.append((("input", extra[0]), "unknown key; 'input' holds only 'messages'"))
    if not isinstance(messages, list):
        problems.append((("input", "messages"), "expected a list of {role, content} messages"))
        return {}
    users = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("content"), str):
            problems.append((("input", "messages", index), "expected {role, content: text}"))
        elif message.get("role", "user") == "user":
            users.append(message["content"])
    if not users:
        problems.append((("input", "messages"), "no message with role 'user'"))
        return {}
    return {"input": users[0]} if len(users) == 1 else {"turns": users}


def _from_turns(
    turns: list[Any], case: Mapping[str, Any], problems: list[Problem]
) -> dict[str, Any]:
    """Turn objects -> user messages, their judge prompts -> one rubric, their revivals ->
    ``revive`` (turn numbers)."""
    if all(isinstance(turn, str) for turn in turns):
        return {}
    texts: list[str] = []
    rubrics: list[str] = []
    thresholds: list[float] = []
    revived: list[int] = []
    for index, turn in enumerate(turns):
        if isinstance(turn, str):
            texts.append(turn)
            continue
        key = next((k for k in TURN_TEXT_KEYS if isinstance(turn, Mapping) and k in turn), None)
        if key is None or not isinstance(turn[key], str):
            problems.append((("turns", index), "a turn is text or an object with 'prompt'"))
            continue
        texts.append(turn[key])
        if turn.get("judge_prompt"):
            rubrics.append(f"After turn {index + 1} ({turn[key]!r}): {turn['judge_prompt']}")
        if isinstance(turn.get("judge_threshold"), int | float):
            thresholds.append(float(turn["judge_threshold"]))
        if turn.get("revive") is True:
            revived.append(index + 1)
    mapped: dict[str, Any] = {"turns": texts}
    if revived and not case.get("revive"):
        mapped["revive"] = revived
    if rubrics and "judge_prompt" not in case and "judge" not in case:
        mapped["judge_prompt"] = "\n".join(rubrics)
    if thresholds and "judge_threshold" not in case:
        mapped["judge_threshold"] = max(thresholds)
    return mapped


def _judge(case: dict[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """``judge_prompt`` / ``judge_threshold`` -> ``judge: {rubric, threshold}``."""
    prompt = case.pop("judge_prompt", None)
    threshold = case.pop("judge_threshold", None)
    if "judge" in case:
        problems.append((("judge_prompt",), "give either 'judge' or 'judge_prompt', not both"))
        return {}
    if prompt is None:
        problems.append((("judge_threshold",), "'judge_threshold' needs a 'judge_prompt'"))
        return {}
    judge: dict[str, Any] = {"rubric": prompt}
    if threshold is not None:
        judge["threshold"] = threshold
    return {"judge": judge}


def _expected_output(value: Mapping[str, Any], problems: list[Problem]) -> dict[str, Any]:
    """``expectedOutput: {mustContain, ...}`` -> tracegrade's fields (snake_case accepted)."""
    mapped: dict[str, Any] = {}
    snake = set(EXPECTED_OUTPUT.values())
    for key, item in value.items():
        if key in EXPECTED_OUTPUT or key in snake:
            mapped[EXPECTED_OUTPUT.get(key, key)] = item
        else:
            message = "unknown field" + suggestion(key, [*EXPECTED_OUTPUT])
            problems.append((("expectedOutput", key), message))
    return mapped
