"""A simulated user: who talks to the agent in ``tracegrade run`` instead of (or after) the
case's scripted turns.

A case's ``user`` gives the user's ``goal``, an optional ``persona``, the ``facts`` it knows
(an order number, a budget: name -> value), the ``stop`` condition in words ("the agent
confirmed the refund") and ``max_turns``, the most user messages the conversation may hold
(scripted turns included). Who plays the user:

- an LLM (any OpenAI-compatible endpoint, behind the judge's client settings:
  :mod:`tracegrade.judge.simulate`), from the goal, persona, facts and stop condition;
- a *scripted* user, for tests and keyless runs: ``replies`` maps a regular expression
  (RE2, searched case-insensitively in the agent's reply) to the user's next message, the
  first match winning, with ``{fact}`` placeholders filled from ``facts``; ``stop_when`` is
  the pattern of an agent reply that meets the goal. An agent reply that meets neither is one
  the script has no answer to: the scripted user gives up.

A fact counts as *given* once its value is in a user message; a user message that gives a
fact again answers an agent that asked for it again (:func:`facts_in`).
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from tracegrade._util.user_regex import UserRegexError, compile_user_regex

FACT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DEFAULT_MAX_TURNS = 8
"""User messages a simulated conversation may hold when the case says nothing."""
MAX_TURNS_LIMIT = 50


def _placeholders(text: str) -> list[str]:
    """The ``{name}`` placeholders of ``text`` (``{{`` escapes a brace)."""
    try:
        return [field for _, field, _, _ in string.Formatter().parse(text) if field is not None]
    except ValueError as exc:
        raise ValueError(f"{text!r}: {exc} (write {{{{ for a literal brace)") from None


def _pattern(pattern: str, where: str) -> None:
    try:
        compile_user_regex(pattern, True)
    except UserRegexError as exc:
        raise ValueError(f"{where} {pattern!r} is not a valid regular expression: {exc}") from None


class SimulatedUser(BaseModel):
    """The simulated user of a case (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")

    goal: str = Field(min_length=1)
    """What the user wants from the conversation, in words."""
    persona: str | None = None
    """Who the user is and how they talk ("a busy customer who answers in few words")."""
    facts: dict[str, str | int | float] = {}
    """What the user knows and gives when asked: name -> value (``order_number: 550e...``)."""
    stop: str | None = None
    """When the goal is met, in words ("the agent confirmed the refund"); default the goal."""
    max_turns: int = Field(DEFAULT_MAX_TURNS, ge=1, le=MAX_TURNS_LIMIT)
    """The most user messages in the conversation, scripted turns included."""
    replies: dict[str, str] = {}
    """A scripted user: regular expression on the agent's reply -> the user's next message
    (``{fact}`` placeholders filled), first match wins."""
    stop_when: str | None = Field(None, validate_default=True)
    """A scripted user: the pattern of an agent reply that meets the goal."""

    @field_validator("facts")
    @classmethod
    def _fact_names(cls, value: dict[str, Any]) -> dict[str, Any]:
        bad = [name for name in value if not FACT_NAME.fullmatch(name)]
        if bad:
            raise ValueError(f"fact names {bad} must be identifiers (letters, digits, _)")
        return value

    @field_validator("replies")
    @classmethod
    def _replies(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        facts = info.data.get("facts") or {}
        for pattern, reply in value.items():
            _pattern(pattern, "the reply pattern")
            unknown = [n for n in _placeholders(reply) if n not in facts]
            if unknown:
                raise ValueError(
                    f"the reply to {pattern!r} names {unknown}, not among the facts {sorted(facts)}"
                )
        return value

    @field_validator("stop_when")
    @classmethod
    def _stop_pattern(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            _pattern(value, "stop_when")
        elif info.data.get("replies"):
            raise ValueError(
                "a scripted user (replies) needs stop_when: the pattern of the agent's reply "
                "that meets the goal"
            )
        return value

    @property
    def scripted(self) -> bool:
        """True when the case scripts the user's replies."""
        return bool(self.replies)

    @property
    def stop_condition(self) -> str:
        """``stop``, else the goal."""
        return self.stop or self.goal

    def fill(self, reply: str) -> str:
        """``reply`` with its ``{fact}`` placeholders replaced by the facts' values."""
        return reply.format_map({name: str(value) for name, value in self.facts.items()})

    def reply_to(self, agent_reply: str) -> str | None:
        """The scripted user's message for ``agent_reply`` (first matching pattern), or None."""
        for pattern, reply in self.replies.items():
            if compile_user_regex(pattern, True).search(agent_reply):
                return self.fill(reply)
        return None

    def meets_goal(self, agent_reply: str) -> bool:
        """Whether ``agent_reply`` matches ``stop_when`` (a scripted user)."""
        return self.stop_when is not None and bool(
            compile_user_regex(self.stop_when, True).search(agent_reply)
        )

    def facts_in(self, text: str) -> list[str]:
        """The facts whose value ``text`` holds (whitespace and case ignored), in fact order."""
        seen = _squeezed(text)
        return [name for name, value in self.facts.items() if _squeezed(str(value)) in seen]


def _squeezed(text: str) -> str:
    return " ".join(text.split()).casefold()


def given_at(user: SimulatedUser, messages: Iterable[Mapping[str, str]]) -> dict[str, int]:
    """Fact name -> the user turn (1-based) that first gave it, over ``messages`` (user and
    assistant, oldest first)."""
    given: dict[str, int] = {}
    turn = 0
    for message in messages:
        if message.get("role") != "user":
            continue
        turn += 1
        for name in user.facts_in(message.get("content") or ""):
            given.setdefault(name, turn)
    return given
