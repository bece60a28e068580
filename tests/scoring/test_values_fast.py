"""The fast value extraction (intervals, run-by-run evidence, caches) equals the plain
definition: every pattern over the newline-joined evidence, claimed character by character."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tracegrade.scoring import values
from tracegrade.scoring.text import normalize
from tracegrade.scoring.values import Evidence, Value, extract

# The patterns as first written: without the leading lookaheads added for speed.
PLAIN_PATTERNS = [
    (kind, re.compile(re.sub(r"^\(\?=\[?[^)]*\)", "", p.pattern), p.flags))
    for kind, p in values._PATTERNS
]


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


def plain_evidence(texts: list[str]) -> Evidence:
    joined = "\n".join(texts)
    found = plain_extract(joined)
    numbers = {v.canonical for v in found if v.kind in ("price", "percent", "number")}
    numbers |= {
        c
        for raw in values._EVIDENCE_NUMBER.findall(joined.replace(",", ""))
        if (c := values._number(raw))
    }
    dates = {v.canonical for v in found if v.kind == "date"}
    dates |= {"--" + d[5:] for d in dates if not d.startswith("--")}
    times = {v.canonical for v in found if v.kind == "time"}
    return Evidence(normalize(joined), frozenset(numbers), frozenset(dates), frozenset(times))


# Pieces that make values and near-values, and every kind of edge a join can meet.
PIECES = [
    "May", "20", "2024", "1.", "2)", "$", "usd", "%", "10:30", "pm", "am", " ", "\n", ",",
    ".", "}", "]", "#", "?", "-", "*", "of", "ORD-1234", "ABCDEFG", "3rd", "1,250.00", "x", "_",
    "\u0663", "\u017f", "Sept", "aug", "USD", "J", "/", "2024-05-20", "9",
]  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30).map("".join))
def test_extract_equals_the_per_character_definition(text):
    assert extract(text) == plain_extract(text)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), max_size=5))
def test_evidence_equals_extracting_from_the_joined_texts(parts):
    assert Evidence.of(parts) == plain_evidence(parts)


def test_a_json_result_and_a_prompt_are_extracted_separately():
    assert values._groups(('{"price": 5}', "May", "20 of June", "# Policy")) == [
        '{"price": 5}',
        "May\n20 of June",
        "# Policy",
    ]


def test_the_plain_patterns_have_no_lookahead_prefix_left():
    assert (
        sum(
            p.pattern != q.pattern
            for (_, p), (_, q) in zip(values._PATTERNS, PLAIN_PATTERNS, strict=True)
        )
        == 5
    )
    assert not any(q.pattern.startswith("(?=") for _, q in PLAIN_PATTERNS)
