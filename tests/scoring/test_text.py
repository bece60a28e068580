"""Phrase matching on word boundaries, thousands separators ignored (scoring.text)."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.scoring.text import contains_phrase, found_phrases, normalize


def test_symbol_phrase_matches_literally():
    assert contains_phrase("Total: $1,327", "$")


def test_word_does_not_match_inside_another_phrase():
    assert not contains_phrase("the profit margin is healthy", "price")


def test_word_does_not_match_as_a_prefix_of_a_longer_word():
    assert not contains_phrase("it was priced fairly", "price")


def test_word_matches_on_boundaries_case_insensitively():
    assert contains_phrase("PRICE: $20", "price")


def test_thousands_separator_is_ignored_in_the_text():
    assert contains_phrase("You have 1,327 points", "1327")


def test_thousands_separator_is_ignored_in_the_phrase():
    assert contains_phrase("You have 1327 points", "1,327")


def test_digits_inside_a_larger_number_do_not_match():
    assert not contains_phrase("1,327", "327")


def test_multiword_phrase_tolerates_extra_whitespace():
    assert contains_phrase("order\n   number 12", "order number")


def test_blank_phrase_never_matches():
    assert not contains_phrase("anything", "  ")


def test_found_phrases_returns_those_present_in_order():
    assert found_phrases("Shipped via UPS, tracking 1Z999", ["tracking", "fedex", "ups"]) == [
        "tracking",
        "ups",
    ]


def test_normalize_casefolds_strips_separators_and_collapses_whitespace():
    assert normalize("  Total  1,250,000\tUSD ") == "total 1250000 usd"


def test_normalize_keeps_commas_that_are_not_thousands_separators():
    assert normalize("sizes 10,12,14") == "sizes 10,12,14"


def plain_normalize(text):
    """normalize() as first written, before it was made faster."""
    thousands = re.sub(r"(?<=\d),(?=\d{3}(?!\d))", "", text.casefold())
    return re.sub(r"\s+", " ", thousands).strip()


_NORMALIZE_PIECES = [
    "1", "12", "327", "1000", ",", " ", "\t", "\n", "\u00a0", "\u2003", "\x1c", "\u0663", "A",
    "\u00df", "\u212a", "x", ".", "\r\n", "\u0130",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_NORMALIZE_PIECES), max_size=30).map("".join))
def test_normalize_equals_its_plain_definition(text):
    assert normalize(text) == plain_normalize(text)


def test_split_splits_on_exactly_the_whitespace_that_backslash_s_matches():
    space = re.compile(r"\s")
    assert all(bool(space.match(chr(c))) == chr(c).isspace() for c in range(sys.maxunicode + 1))
