"""Placeholders of redacted data in case messages: matched as any text, run as made-up
values (issue 27, defect 2)."""

from __future__ import annotations

import pytest

from tracegrade.curate.personal_data import PersonalDataRedactor, luhn_ok
from tracegrade.dataset.placeholders import has_placeholder, same_message, stand_in


@pytest.mark.parametrize(
    ("case_text", "observed", "same"),
    [
        ("Hi, I am [REDACTED:email:1]", "Hi,  I am jo@example.org", True),
        ("Hi, I am [REDACTED:email:1]", "Hi, I am", False),  # a placeholder is never empty
        ("[REDACTED:phone:1] or [REDACTED:email:2]?", "+1 (555) 010-4477 or a@b.co?", True),
        ("card [REDACTED]", "card [REDACTED]", True),  # the store's own secret redaction
        ("card [REDACTED]", "card 4111 1111 1111 1111", True),
        ("order (ORD-1) [REDACTED:value:1].*", "order (ORD-1) x.*", True),  # the rest literal
        ("order (ORD-1) [REDACTED:value:1].*", "order (ORD-1) x.y", False),
        ("plain text", "plain  text", True),
        ("plain text", "plain text!", False),
        (None, None, True),
    ],
)
def test_same_message(case_text: str | None, observed: str | None, same: bool) -> None:
    assert same_message(case_text, observed) is same


def test_stand_ins_are_made_up_values_of_their_kind_and_stable() -> None:
    text = stand_in(
        "[REDACTED:email:1] [REDACTED:email:2] [REDACTED:email:1] [REDACTED:phone:3] "
        "[REDACTED:card:2] [REDACTED:value:4] [REDACTED]"
    )
    words = text.split(" ")
    assert words[:3] == ["customer1@example.com", "customer2@example.com", "customer1@example.com"]
    assert words[3:5] == ["+1", "202-555-0103"]
    card = "".join(words[5:9])
    assert len(card) == 16 and luhn_ok(card) and card.startswith("4000000000000")
    assert words[9:] == ["redacted-4", "redacted-1"]
    assert not has_placeholder(text) and stand_in("no placeholder") == "no placeholder"


def test_what_build_redacts_a_stand_in_matches() -> None:
    """A built case's message matches the original it was redacted from and the message a
    run sends for it."""
    original = "I'm ann@example.org (+44 20 7946 0018), and ann@example.org again"
    built = PersonalDataRedactor().text(original)
    assert built == "I'm [REDACTED:email:1] ([REDACTED:phone:1]), and [REDACTED:email:1] again"
    assert same_message(built, original) and same_message(built, stand_in(built))
