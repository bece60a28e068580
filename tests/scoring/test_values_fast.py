"""The fast value extraction (intervals, run-by-run evidence, caches) equals the plain
definition: every pattern over the newline-joined evidence, claimed character by character."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.scoring import values
from tracegrade.scoring.text import normalize
from tracegrade.scoring.values import EvidenceValues, LazyEvidenceValues, Value, extract

# The patterns as first written, before they were rewritten for speed (leading lookaheads,
# then a character class first): the fast ones must find exactly the same matches.
_MONTH = (
    r"\b(?P<month>september|february|november|december|january|october|august|march|april"
    r"|june|july|sept|may|jan|feb|mar|apr|jun|jul|aug|sep|oct|nov|dec)\b\.?"
)
_DAY = r"(?P<day>\d{1,2})(?:st|nd|rd|th)?"
PLAIN_PATTERNS = [
    ("date", re.compile(r"(?<!\d)(?P<y>\d{4})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?!\d)")),
    ("date", re.compile(_MONTH + r"\s+" + _DAY + r"(?:,?\s+(?P<year>\d{4}))?(?![\d:])", re.I)),
    ("date", re.compile(_DAY + r"\s+(?:of\s+)?" + _MONTH + r"(?:,?\s+(?P<year>\d{4}))?", re.I)),
    (
        "time",
        re.compile(
            r"(?<![\d:])(?P<h>\d{1,2}):(?P<min>\d{2})(?::\d{2})?(?:\s*(?P<ampm>[ap]\.?m\.?))?(?![\d:])",
            re.I,
        ),
    ),
    ("id", re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I)),
    (
        "id",
        re.compile(
            r"\b(?!\d+-[A-Za-z]+\b)(?!\d+(?:st|nd|rd|th)\b)(?=[A-Za-z0-9_-]*[A-Za-z])"
            r"(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9][A-Za-z0-9_-]{3,}\b"
        ),
    ),
    ("id", re.compile(r"\b[A-Z]{6,}\b")),
    ("price", re.compile(r"(?:[$€£]|usd\s?)\s?(?P<num>\d[\d,]*(?:\.\d+)?)", re.I)),
    ("percent", re.compile(r"(?<![\w.])(?P<num>\d+(?:\.\d+)?)\s?%")),
    ("number", re.compile(r"(?<![\w.])(?P<num>-?\d[\d,]*(?:\.\d+)?)(?![\w])")),
]
PLAIN_EVIDENCE_NUMBER = re.compile(r"(?<![\w.])-\d+(?:\.\d+)?|\d+(?:\.\d+)?")


def plain_extract(text: str) -> list[Value]:
    taken = [False] * len(text)
    for marker in values._LIST_MARKER.finditer(text):
        taken[marker.start() : marker.end()] = [True] * (marker.end() - marker.start())
    found = []
    for kind, pattern in PLAIN_PATTERNS:
        for match in pattern.finditer(text):
            start, end = match.span()
            if any(taken[start:end]):
                continue
            canonical = values._canonical(kind, match)
            taken[start:end] = [True] * (end - start)
            if canonical is not None:
                found.append((start, Value(kind, match.group(0).strip(), canonical)))
    return [value for _, value in sorted(found, key=lambda item: item[0])]


def plain_evidence(texts: list[str]) -> EvidenceValues:
    joined = "\n".join(texts)
    found = plain_extract(joined)
    numbers = {v.canonical for v in found if v.kind in ("price", "percent", "number")}
    numbers |= {
        c
        for raw in PLAIN_EVIDENCE_NUMBER.findall(joined.replace(",", ""))
        if (c := values._number(raw))
    }
    dates = {v.canonical for v in found if v.kind == "date"}
    dates |= {"--" + d[5:] for d in dates if not d.startswith("--")}
    times = {v.canonical for v in found if v.kind == "time"}
    return EvidenceValues(normalize(joined), frozenset(numbers), frozenset(dates), frozenset(times))


# Pieces that make values and near-values, and every kind of edge a join can meet.
PIECES = [
    "May", "20", "2024", "1.", "2)", "$", "usd", "%", "10:30", "pm", "am", " ", "\n", ",",
    ".", "}", "]", "#", "?", "-", "*", "of", "ORD-1234", "ABCDEFG", "3rd", "1,250.00", "x", "_",
    "\u0663", "\u017f", "Sept", "aug", "USD", "J", "/", "2024-05-20", "9",
    "e4f5a6b7-12ab-34cd-56ef-7890abcdef12", "12-ab", "a1", "x1y2", "21st", "12th", "st", "\u212a",
    "\u0130", "Dec", "u", "s", "d", "\u20ac", "\u00a3", "-5", "a.", "AB12", "ABCDEF", "of",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_extract_equals_the_per_character_definition(text):
    assert extract(text) == plain_extract(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), max_size=5))
def test_evidence_equals_extracting_from_the_joined_texts(parts):
    assert EvidenceValues.of(parts) == plain_evidence(parts)


def test_a_json_result_and_a_prompt_are_extracted_separately():
    assert values._groups(('{"price": 5}', "May", "20 of June", "# Policy")) == [
        '{"price": 5}',
        "May\n20 of June",
        "# Policy",
    ]


def _matches(pattern: re.Pattern[str], text: str) -> list[tuple[object, ...]]:
    return [(m.span(), m.groupdict()) for m in pattern.finditer(text)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_each_fast_pattern_finds_what_its_plain_form_finds(text):
    for (kind, fast), (plain_kind, plain) in zip(values._PATTERNS, PLAIN_PATTERNS, strict=True):
        assert kind == plain_kind
        assert _matches(fast, text) == _matches(plain, text), plain.pattern
    assert values._EVIDENCE_NUMBER.findall(text) == PLAIN_EVIDENCE_NUMBER.findall(text)


def test_every_fast_pattern_starts_with_one_character_class():
    """What lets the regex engine skip positions in C (a leading lookahead or group does not)."""
    for _, pattern in [*values._PATTERNS, ("number", values._EVIDENCE_NUMBER)]:
        assert re.match(r"(?:\(\?P<\w+>)?(?:\[|\\d)", pattern.pattern), pattern.pattern


def test_case_insensitive_letters_keep_their_unicode_twins():
    # re.IGNORECASE matches the long s as "s" and the Kelvin sign as "k"; the rewritten
    # patterns spell their letters out and must keep doing so
    texts = ("\u017fept 15", "15 \u017fept", "u\u017fd 20", "Sept. 5th", "5 AUG. 2024", "\u212a9x1")
    for text in texts:
        for (_, fast), (_, plain) in zip(values._PATTERNS, PLAIN_PATTERNS, strict=True):
            assert _matches(fast, text) == _matches(plain, text), (text, plain.pattern)
    assert extract("\u017fept 15") == extract("15 \u017fept") == []


def test_a_prompt_after_a_sentence_is_extracted_apart_unless_the_join_makes_a_list_marker():
    assert values._groups(("I paid 12.", "# Policy")) == ["I paid 12.", "# Policy"]
    assert values._groups(("see\n 12.", "# Policy")) == ["see\n 12.\n# Policy"]
    assert values._groups(("-\n12)", "# Policy")) == ["-\n12)\n# Policy"]
    for texts in (["I paid 12.", "# Policy"], ["see\n 12.", "# 5"], ["-\n12)", "#"]):
        assert EvidenceValues.of(texts) == plain_evidence(texts)


# Near-numbers whose value (``$12.5``, ``-5.5``) is not among the digit runs (``12.53``, ``5.5``)
LAZY_PIECES = [*PIECES, "12.5,3", ",-5.5", "0.50", "-0", "00", "0.0", "007", "1200", "a,-12"]


def _candidates(full: EvidenceValues, texts: list[str]) -> list[Value]:
    """Values to check: those of the texts, and every canonical the evidence holds."""
    found = [v for text in texts for v in extract(text)]
    found += [Value(kind, c, c) for kind in ("number", "price", "percent") for c in full.numbers]
    found += [Value("date", c, c) for c in full.dates] + [Value("time", c, c) for c in full.times]
    return found


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(LAZY_PIECES), max_size=12).map("".join), max_size=5),
    st.lists(st.sampled_from(LAZY_PIECES), max_size=12).map("".join),
)
def test_lazy_evidence_supports_what_evidence_supports(parts, answer):
    full = EvidenceValues.of(parts)
    for value in _candidates(full, [answer, "\n".join(parts), *parts]):
        # a fresh one per value: each check computes its part from nothing
        assert LazyEvidenceValues(tuple(parts)).supports(value) == full.supports(value), value
    lazy = LazyEvidenceValues.of(parts)
    assert [lazy.supports(v) for v in extract(answer)] == [
        full.supports(v) for v in extract(answer)
    ]


def test_a_value_number_missing_from_the_digit_runs_is_still_supported():
    for text, number in (("paid $12.5,3", "12.5"), ("x,-5.5", "-5.5")):
        assert number not in values._digit_runs(text)
        assert LazyEvidenceValues((text,)).supports(Value("number", number, number))
        assert EvidenceValues.of([text]).supports(Value("number", number, number))


def test_the_month_test_holds_every_character_a_month_pattern_matches():
    """Case-insensitive matching takes the long s for "s": each character it takes for a
    letter of a month name's first three must casefold to that letter."""
    every = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    for letter in sorted(set("".join(values._MONTH_PREFIXES))):
        assert {c.casefold() for c in re.findall(letter, every, re.IGNORECASE)} == {letter}
    assert values._has_month("\u017fEP") and not values._has_month("a summer day")
