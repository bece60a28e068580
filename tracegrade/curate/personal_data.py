"""Redaction of personal data in built cases: built-in e-mail, phone and card-number patterns
plus the user's ``--redact`` regular expressions. A match becomes a placeholder
``[REDACTED:<kind>:<n>]`` (kind ``email``, ``phone``, ``card``, or ``value`` for a user
pattern), numbered within a case by :class:`Numbering` so the same value is the same
placeholder in every turn: a case stays matchable to its trace and runnable
(:mod:`tracegrade.dataset.placeholders`). A card number must pass the Luhn check, so order
ids and other long digit runs are kept; a phone number needs separators or a leading ``+``,
so prices, dates and plain numbers are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade._util.user_regex import UserRegexError, compile_user_regex
from tracegrade.errors import ConfigError

EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
PHONE = re.compile(
    r"(?<![\w+])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,4}\)[\s.-]?|\d{2,4}[\s.-])\d{3,4}[\s.-]\d{3,4}(?![\w-])"
    r"|(?<![\w+])\+\d{8,15}(?!\w)"
)
CARD = re.compile(r"(?<![\w+-])(?:\d[ -]?){12,18}\d(?![\w-])")


def luhn_ok(digits: str) -> bool:
    """True when ``digits`` (digits only) pass the Luhn checksum of card numbers."""
    total = 0
    for i, char in enumerate(reversed(digits)):
        value = int(char) * (2 if i % 2 else 1)
        total += value - 9 if value > 9 else value
    return total % 10 == 0


def is_card(text: str) -> bool:
    """True for 13-19 digits (spaces and dashes aside) that pass the Luhn check."""
    digits = re.sub(r"\D", "", text)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


class Numbering:
    """Placeholders of one case: each distinct (kind, value) gets the next number of its kind,
    the same value always the same placeholder."""

    def __init__(self) -> None:
        self.numbers: dict[tuple[str, str], int] = {}
        self.counts: dict[str, int] = {}

    def placeholder(self, kind: str, value: str) -> str:
        """``[REDACTED:kind:n]`` for ``value``."""
        key = (kind, " ".join(value.split()))
        if key not in self.numbers:
            self.counts[kind] = self.numbers[key] = self.counts.get(kind, 0) + 1
        return f"[REDACTED:{kind}:{self.numbers[key]}]"


@dataclass(frozen=True)
class PersonalDataRedactor:
    """Replaces personal data in strings and in nested lists and mappings."""

    patterns: Sequence[Any] = field(default_factory=tuple)
    """User patterns, compiled by RE2 (:mod:`tracegrade._util.user_regex`)."""
    builtin: bool = True

    @classmethod
    def of(cls, patterns: Sequence[str], builtin: bool = True) -> PersonalDataRedactor:
        """A redactor with user ``patterns`` (regular expressions, run by RE2 in time linear
        in the text: :mod:`tracegrade._util.user_regex`).

        Raises:
            ConfigError: a pattern that RE2 cannot compile.
        """
        compiled = []
        for pattern in patterns:
            try:
                compiled.append(compile_user_regex(pattern))
            except UserRegexError as exc:
                raise ConfigError(f"--redact {pattern!r}: {exc}") from None
        return cls(tuple(compiled), builtin)

    def text(self, value: str, numbering: Numbering | None = None) -> str:
        """``value`` with every match replaced by its placeholder (see the module docstring;
        a fresh :class:`Numbering` when none is given)."""
        numbering = numbering or Numbering()

        def mark(kind: str) -> Any:
            return lambda match: numbering.placeholder(kind, match.group(0))

        if self.builtin:
            value = EMAIL.sub(mark("email"), value)
            value = CARD.sub(
                lambda m: mark("card")(m) if is_card(m.group(0)) else m.group(0), value
            )
            value = PHONE.sub(mark("phone"), value)
        for pattern in self.patterns:
            value = pattern.sub(mark("value"), value)
        return value

    def value(self, value: Any, numbering: Numbering | None = None) -> Any:
        """Strings redacted at any depth of lists and mappings; other values unchanged."""
        if isinstance(value, str):
            return self.text(value, numbering)
        if isinstance(value, list):
            return [self.value(v, numbering) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v, numbering) for k, v in value.items()}
        return value


def is_redacted(value: Any) -> bool:
    """True when a redaction marker appears anywhere in ``value``."""
    if isinstance(value, str):
        return "[REDACTED" in value
    if isinstance(value, list):
        return any(is_redacted(v) for v in value)
    if isinstance(value, dict):
        return any(is_redacted(v) for v in value.values())
    return False
