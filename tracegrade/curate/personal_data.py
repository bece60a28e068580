"""Redaction of personal data in built cases: built-in e-mail, phone and card-number patterns
plus the user's ``--redact`` regular expressions. A match becomes ``[REDACTED:<kind>]``
(``[REDACTED]`` for a user pattern). A card number must pass the Luhn check, so order ids and
other long digit runs are kept; a phone number needs separators or a leading ``+``, so prices,
dates and plain numbers are kept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from tracegrade.errors import ConfigError
from tracegrade.user_regex import UserRegexError, compile_user_regex

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


def _card(match: re.Match[str]) -> str:
    digits = re.sub(r"\D", "", match.group(0))
    return "[REDACTED:card]" if 13 <= len(digits) <= 19 and luhn_ok(digits) else match.group(0)


@dataclass(frozen=True)
class Redactor:
    """Replaces personal data in strings and in nested lists and mappings."""

    patterns: Sequence[Any] = field(default_factory=tuple)
    """User patterns, compiled by RE2 (:mod:`tracegrade.user_regex`)."""
    builtin: bool = True

    @classmethod
    def of(cls, patterns: Sequence[str], builtin: bool = True) -> Redactor:
        """A redactor with user ``patterns`` (regular expressions, run by RE2 in time linear
        in the text: :mod:`tracegrade.user_regex`).

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

    def text(self, value: str) -> str:
        """``value`` with every match replaced (see the module docstring)."""
        if self.builtin:
            value = EMAIL.sub("[REDACTED:email]", value)
            value = CARD.sub(_card, value)
            value = PHONE.sub("[REDACTED:phone]", value)
        for pattern in self.patterns:
            value = pattern.sub("[REDACTED]", value)
        return value

    def value(self, value: Any) -> Any:
        """Strings redacted at any depth of lists and mappings; other values unchanged."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
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
