"""Placeholders for redacted personal data in a case's messages.

``tracegrade dataset build`` never writes the e-mail addresses, phone numbers, card numbers
and ``--redact`` matches of the conversations it turns into cases; it writes a placeholder
instead, numbered within the case so that the same value is the same placeholder wherever it
recurs (in later turns too): ``[REDACTED:email:1]``, ``[REDACTED:phone:2]``,
``[REDACTED:card:1]``, ``[REDACTED:value:1]`` (a ``--redact`` match). Two uses keep such a case
working:

- **Matching** (:func:`same_message`): a case message matches a recorded user message when
  they are equal up to whitespace, each placeholder standing for any non-empty text. So a
  built case still matches the trace it was built from (which holds the real value), and any
  trace of the same conversation. Any ``[REDACTED...]`` marker counts (``[REDACTED]`` written
  by the trace store's own secret redaction, ``[REDACTED:email]`` of earlier builds).
- **Running** (:func:`stand_in`): ``tracegrade run`` replaces each placeholder with a made-up
  value of its kind before the agent sees the message: ``customer1@example.com`` (the
  ``example.com`` domain is reserved for examples, RFC 2606), ``+1 202-555-0101`` (555-0100
  to 555-0199 are reserved for fiction in the North American numbering plan), a 16-digit
  number that passes the Luhn check (``4000 0000 0000 0010`` ...; the ``4000 0000 0000``
  prefix is no issuer's), and ``redacted-1`` for other values. The same placeholder gets the
  same stand-in in every turn, so the conversation stays coherent; the stand-in is not the
  original (redaction cannot be undone).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from tracegrade._util.user_regex import compile_user_regex

PLACEHOLDER = re.compile(r"\[REDACTED(?::([a-z]+))?(?::(\d+))?\]")
"""A redaction marker: ``[REDACTED]``, ``[REDACTED:KIND]`` or ``[REDACTED:KIND:N]``."""


def _normalized(text: str | None) -> str:
    return " ".join((text or "").split())


def has_placeholder(text: str | None) -> bool:
    """True when ``text`` holds a redaction marker."""
    return bool(text) and "[REDACTED" in str(text) and PLACEHOLDER.search(str(text)) is not None


@lru_cache(maxsize=4096)
def _pattern(case_text: str) -> Any:
    """A whole-text pattern of a (normalised) case message: each marker any non-empty text,
    the rest literal; compiled by RE2 (linear in the message, whatever the markers)."""
    parts = PLACEHOLDER.split(case_text)[::3]  # split() also returns the two groups
    return compile_user_regex("(?s)" + "(.+?)".join(re.escape(p) for p in parts))


def same_message(case_text: str | None, observed: str | None) -> bool:
    """Whether a case's message (``input`` or a turn) matches a recorded user message
    (whitespace-normalised; see the module docstring for placeholders)."""
    expected, seen = _normalized(case_text), _normalized(observed)
    if expected == seen:
        return True
    if not has_placeholder(expected):
        return False
    return _pattern(expected).fullmatch(seen) is not None


def _card(n: int) -> str:
    digits = f"400000000000{n % 1000:03d}"
    total = 0
    for i, char in enumerate(reversed(digits)):  # the check digit will sit at the right
        value = int(char) * (2 if i % 2 == 0 else 1)
        total += value - 9 if value > 9 else value
    number = digits + str((10 - total % 10) % 10)
    return " ".join(number[i : i + 4] for i in range(0, 16, 4))


def _stand_in_for(kind: str | None, n: int) -> str:
    if kind == "email":
        return f"customer{n}@example.com"
    if kind == "phone":
        return f"+1 202-555-01{n % 100:02d}"
    if kind == "card":
        return _card(n)
    return f"redacted-{n}"


def stand_in(text: str) -> str:
    """``text`` with each placeholder replaced by a made-up value of its kind (see the module
    docstring); a marker without a number counts as number 1. Text without one is returned
    as it is."""
    if "[REDACTED" not in text:
        return text

    def value(match: re.Match[str]) -> str:
        return _stand_in_for(match.group(1), int(match.group(2) or 1))

    return PLACEHOLDER.sub(value, text)
