"""Concrete values in text: prices, percentages, numbers, dates, times and identifiers.

Value grounding compares the values an answer states with the values its evidence (tool
results, user input, system instructions) contains. Each value is extracted with its kind
and a canonical form, so ``$1,250.00`` matches ``1250``, ``May 20, 2024`` matches
``2024-05-20`` and ``07:00 PM`` matches ``19:00:00``.

What is *not* extracted, because it is noise rather than a claim: list markers (``1.`` at a
line start), single-digit numbers, and numbers inside an extracted date, time or id. A number
joined to a word (``30-day``) or an ordinal (``21st``) is a number, not an id.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

from tracegrade.scoring.text import normalize

MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "january",
            "february",
            "march",
            "april",
            "may",
            "june",
            "july",
            "august",
            "september",
            "october",
            "november",
            "december",
        ],
        start=1,
    )
}
MONTHS.update({name[:3]: number for name, number in list(MONTHS.items())})
MONTHS["sept"] = 9

_MONTH_WORDS = sorted(MONTHS, key=len, reverse=True)
_FIRST = "".join(sorted({m[0] for m in MONTHS} | {m[0].upper() for m in MONTHS})) + "\u017f"
"""The first letters of month names as ``re.IGNORECASE`` matches them (with the long s)."""
_DAY = r"(?P<day>\d\d?)(?:st|nd|rd|th)?"
_MONTH_FIRST = (
    rf"(?P<month>[{_FIRST}](?<!\w[{_FIRST}])(?i:"
    + "|".join(
        rf"(?<={c})(?:{'|'.join(m[1:] for m in _MONTH_WORDS if m[0] == c)})"
        for c in dict.fromkeys(m[0] for m in _MONTH_WORDS)
    )
    + r"))"
)
r"""``\b(?P<month>september|...|dec)\b`` (case-insensitive) starting with a character class:
``\b`` becomes a lookbehind past the first letter, the rest of the name is chosen by that
letter (at most one name fits between two word boundaries, so their order does not matter)."""
# Every pattern starts with a single character class (its first character; a ``\b`` or
# ``(?<!...)`` before it becomes a lookbehind one character wider after it, a lookahead at the
# start one conditioned on that character): the regex engine then skips the positions that
# cannot start a match in a C loop, without entering the pattern (2-4x faster scans than the
# plain patterns, the same matches; tests/scoring/test_values_fast.py compares them).
# The id pattern's lookaheads look at most 64 characters ahead for its first digit and first
# letter (and a number's ordinal suffix): unbounded, each word start of a long run of letters
# and hyphens (or digits and hyphens) was scanned to the run's end, quadratic (240 KB of
# ``2024-01-`` took 23 s to score, issue 40 item 5). An id whose first digit or letter comes
# later is not one.
_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("date", re.compile(r"(?P<y>\d(?<!\d\d)\d{3})[-/](?P<m>\d{1,2})[-/](?P<d>\d{1,2})(?!\d)")),
    (
        "date",
        re.compile(_MONTH_FIRST + r"(?i:\b\.?\s+" + _DAY + r"(?:,?\s+(?P<year>\d{4}))?(?![\d:]))"),
    ),
    (
        "date",
        re.compile(
            r"(?P<day>\d\d?)(?i:(?:st|nd|rd|th)?\s+(?:of\s+)?)"
            + _MONTH_FIRST
            + r"(?i:\b\.?(?:,?\s+(?P<year>\d{4}))?)"
        ),
    ),
    (
        "time",
        re.compile(
            r"(?P<h>\d(?<![\d:]\d)\d?):(?P<min>\d{2})(?::\d{2})?(?:\s*(?P<ampm>[ap]\.?m\.?))?(?![\d:])",
            re.IGNORECASE,
        ),
    ),
    (
        "id",
        re.compile(
            r"[0-9a-fA-F](?<!\w[0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}"
            r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
    ),
    (
        "id",
        re.compile(
            r"[A-Za-z0-9](?<!\w[A-Za-z0-9])(?:(?<=\d)|(?=[A-Za-z_-]{0,64}+\d))"
            r"(?:(?<=[A-Za-z])|(?=[0-9_-]{0,64}+[A-Za-z]))"
            r"(?:(?<=[A-Za-z])|(?!\d{0,64}+(?:-[A-Za-z]+|st|nd|rd|th)\b))[A-Za-z0-9_-]{3,}\b"
        ),
    ),
    ("id", re.compile(r"[A-Z](?<!\w[A-Z])[A-Z]{5,}\b")),
    (
        "price",
        re.compile(
            r"[$€£uU](?:(?<=[uU])[sS\u017f][dD]\s?|(?<=[$€£]))\s?(?P<num>\d[\d,]*(?:\.\d+)?)"
        ),
    ),
    ("percent", re.compile(r"(?P<num>\d(?<![\w.]\d)\d*(?:\.\d+)?)\s?%")),
    (
        "number",
        re.compile(r"(?P<num>[-\d](?<![\w.][-\d])(?:(?<=-)\d|(?<=\d))[\d,]*(?:\.\d+)?)(?!\w)"),
    ),
]
_UUID_GATE = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
"""What every UUID contains, starting with a literal (found by a fast substring search)."""
_MONTH_PREFIXES = tuple(dict.fromkeys(month[:3] for month in MONTHS))


def _has_month(text: str) -> bool:
    """True when the casefolded text holds the first three letters of a month name: every
    match of a month name pattern does (``re.IGNORECASE`` matches these letters only as
    characters that casefold to them, such as the long s; a test checks every character)."""
    folded = text.casefold()
    return any(prefix in folded for prefix in _MONTH_PREFIXES)


_NEEDS: dict[int, Callable[[str], bool]] = {
    0: lambda t: "-" in t or "/" in t,
    1: _has_month,
    2: _has_month,
    3: lambda t: ":" in t,
    4: lambda t: _UUID_GATE.search(t) is not None,
    8: lambda t: "%" in t,
}
"""Per pattern (by index in :data:`_PATTERNS`), a character or substring every match
contains: a pattern is not run on a text without it (a substring test costs ~1% of a scan;
the month test, shared by two patterns, runs once per text)."""
_EVIDENCE_NUMBER = re.compile(r"[-\d](?:(?<=-)(?<![\w.]-)\d+(?:\.\d+)?|(?<=\d)\d*(?:\.\d+)?)")
r"""Every number in evidence: digit runs, and negatives only where ``-`` is not a joiner
(``ORD-1234`` holds 1234 and ``2024-05-20`` holds 20): ``(?<![\w.])-\d+(?:\.\d+)?|\d+(?:\.\d+)?``
starting with a character class (see :data:`_PATTERNS`)."""
_LIST_MARKER = re.compile(r"^[^\S\n]*(?:[-*][^\S\n]*)?\d{1,2}[.)]\s", re.MULTILINE)
"""A numbered list item's marker at a line's start. Its spaces stay on the line (``[^\\S\\n]``):
with ``\\s*`` every line start of a run of blank lines rescanned the rest of the run
(quadratic: a 60 KB answer took 46 s to score)."""


@dataclass(frozen=True)
class Value:
    """One value: ``kind`` (price, percent, number, date, time, id), the ``text`` as written,
    and the ``canonical`` form compared against evidence."""

    kind: str
    text: str
    canonical: str


@functools.lru_cache(maxsize=8192)
def _number(text: str) -> str | None:
    try:
        return format(Decimal(text.replace(",", "")).normalize(), "f")
    except InvalidOperation:
        return None


def _date(kind_match: re.Match[str]) -> str | None:
    groups = kind_match.groupdict()
    year: int | None
    month: int | None
    if groups.get("y"):
        year, month, day = int(groups["y"]), int(groups["m"]), int(groups["d"])
    else:
        month, day = MONTHS.get(groups["month"].lower().rstrip(".")), int(groups["day"])
        year = int(groups["year"]) if groups.get("year") else None
    if not month or not 1 <= month <= 12 or not 1 <= day <= 31:
        return None
    return f"{year:04d}-{month:02d}-{day:02d}" if year else f"--{month:02d}-{day:02d}"


def _time(match: re.Match[str]) -> str | None:
    hour, minute = int(match["h"]), int(match["min"])
    ampm = (match["ampm"] or "").lower().replace(".", "")
    if ampm == "pm" and hour < 12:
        hour += 12
    elif ampm == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{minute:02d}" if hour < 24 and minute < 60 else None


def _canonical(kind: str, match: re.Match[str]) -> str | None:
    if kind == "date":
        return _date(match)
    if kind == "time":
        return _time(match)
    if kind == "id":
        return match.group(0).casefold()
    number = _number(match["num"])
    if (
        kind == "number"
        and number is not None
        and abs(Decimal(number)) < 10
        and "." not in match["num"]
    ):
        return None
    return number


class _Spans:
    """Disjoint half-open character ranges already claimed, kept sorted: an overlap test is a
    binary search, whatever the text's length."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        if start >= end:  # an empty range claims nothing
            return False
        i = bisect.bisect_right(self.starts, start) - 1
        if i >= 0 and self.ends[i] > start:
            return True
        return i + 1 < len(self.starts) and self.starts[i + 1] < end

    def add(self, start: int, end: int) -> None:
        if start < end:
            i = bisect.bisect_right(self.starts, start)
            self.starts.insert(i, start)
            self.ends.insert(i, end)


def extract(text: str) -> list[Value]:
    """The values in ``text``, left to right, without overlaps (see the module docstring).

    Each pattern scans ``text`` once (skipped when the text lacks a character every match
    needs); earlier patterns claim their ranges first, each claim a binary search and a list
    insertion, with no work per character. Recent results are cached: the scorers of one
    trace extract from the same answer."""
    return list(_extract(text))


_DATES_AND_TIMES = 4
"""The patterns before this index (dates, then times) claim their ranges before any other, so
they find the same values whether or not the later patterns run."""


def _claim(text: str, patterns: int) -> list[tuple[int, Value]]:
    """(start, value) of the first ``patterns`` of :data:`_PATTERNS`, in pattern order."""
    taken = _Spans()
    for marker in _LIST_MARKER.finditer(text):
        taken.add(*marker.span())
    found: list[tuple[int, Value]] = []
    tested: dict[Callable[[str], bool], bool] = {}
    for number, (kind, pattern) in enumerate(_PATTERNS[:patterns]):
        if (needs := _NEEDS.get(number)) is not None:
            if needs not in tested:
                tested[needs] = needs(text)
            if not tested[needs]:
                continue
        for match in pattern.finditer(text):
            start, end = match.span()
            if taken.overlaps(start, end):
                continue
            canonical = _canonical(kind, match)
            taken.add(start, end)
            if canonical is not None:
                found.append((start, Value(kind, match.group(0).strip(), canonical)))
    return found


@functools.lru_cache(maxsize=64)
def _extract(text: str) -> tuple[Value, ...]:
    found = _claim(text, len(_PATTERNS))
    return tuple(value for _, value in sorted(found, key=lambda item: item[0]))


@dataclass(frozen=True)
class EvidenceValues:
    """The canonical values of a body of evidence text, for :meth:`supports`."""

    text: str
    numbers: frozenset[str]
    dates: frozenset[str]
    times: frozenset[str]

    @classmethod
    def of(cls, texts: list[str]) -> EvidenceValues:
        """The values of several texts (tool results, user inputs, instructions). Recent
        results are cached: several scorers of one trace read the same evidence."""
        return _evidence(tuple(texts))

    def supports(self, value: Value) -> bool:
        """True when the evidence contains ``value`` (by kind: number, date, time, or id text)."""
        if value.kind in ("price", "percent", "number"):
            return value.canonical in self.numbers
        if value.kind == "date":
            return value.canonical in self.dates
        if value.kind == "time":
            return value.canonical in self.times
        return _mentions(self.text, value.canonical)


_IN_VALUES = frozenset("_-$€£.,:%)*")
"""Non-alphanumeric, non-space characters a value pattern (or a list marker) can match."""


def _outside_values(char: str) -> bool:
    return not (char.isalnum() or char.isspace() or char in _IN_VALUES)


_MARKER_LINE = re.compile(r"\s*(?:[-*]\s*)?\d{1,2}[.)]")
"""A last line that the joining newline would make a list marker (:data:`_LIST_MARKER`)."""


def _independent(left: str, right: str) -> bool:
    """True when no pattern can match across the newline joining ``left`` and ``right``, so
    extracting from ``left + "\n" + right`` equals extracting from each: one side's edge
    character can be part of no value (``}`` ending a JSON tool result, ``#`` opening a
    prompt) and no list marker can end on the newline (``left`` may end with ``.`` or ``)``
    unless its last line is a marker without its space, such as ``12.``)."""
    if not left or not right:
        return False
    if _outside_values(left[-1]):
        return True
    return _outside_values(right[0]) and (
        left[-1] not in ".)" or _MARKER_LINE.fullmatch(left, left.rfind("\n") + 1) is None
    )


def _groups(texts: tuple[str, ...]) -> list[str]:
    """``texts`` joined by newlines into the fewest runs that extract independently."""
    groups, current = [], [texts[0]]
    for left, right in itertools.pairwise(texts):
        if _independent(left, right):
            groups.append("\n".join(current))
            current = []
        current.append(right)
    groups.append("\n".join(current))
    return groups


@functools.lru_cache(maxsize=256)
def _group_numbers(group: str) -> tuple[tuple[Value, ...], frozenset[str]]:
    """The values of one run of evidence, and every number in it (see :class:`EvidenceValues`).
    Cached: a long system prompt or a common tool result repeats across a dataset's traces."""
    return _extract(group), _digit_runs(group)


@functools.lru_cache(maxsize=256)
def _digit_runs(group: str) -> frozenset[str]:
    """The canonical numbers of :data:`_EVIDENCE_NUMBER` in ``group`` (commas dropped first)."""
    return frozenset(
        c for raw in _EVIDENCE_NUMBER.findall(group.replace(",", "")) if (c := _number(raw))
    )


@functools.lru_cache(maxsize=16)
def _evidence(texts: tuple[str, ...]) -> EvidenceValues:
    """:meth:`EvidenceValues.of`, uncached. Equal to extracting from the newline-joined texts, but
    run by run (see :func:`_independent`), each run's result cached."""
    values: list[Value] = []
    numbers: set[str] = set()
    for group in _groups(texts) if texts else [""]:
        group_values, group_numbers = _group_numbers(group)
        values.extend(group_values)
        numbers |= group_numbers
    numbers |= {v.canonical for v in values if v.kind in ("price", "percent", "number")}
    dates = _with_month_days({v.canonical for v in values if v.kind == "date"})
    times = {v.canonical for v in values if v.kind == "time"}
    return EvidenceValues(_normalized_text(texts), frozenset(numbers), dates, frozenset(times))


def _with_month_days(dates: set[str]) -> frozenset[str]:
    """Canonical dates, each full date also as ``--MM-DD`` (a date said without its year)."""
    return frozenset(dates | {"--" + d[5:] for d in dates if not d.startswith("--")})


def _normalized_text(texts: tuple[str, ...]) -> str:
    """normalize() of the newline-joined texts, text by text ("\n" is collapsed whitespace)."""
    return " ".join(n for n in map(_normalized, texts) if n)


def _mentions(text: str, canonical: str) -> bool:
    """True when ``text`` (normalised) holds ``canonical`` not inside a longer word or number."""
    return re.search(r"(?<![0-9a-z])" + re.escape(canonical) + r"(?![0-9a-z])", text) is not None


_normalized = functools.lru_cache(maxsize=256)(normalize)


class LazyEvidenceValues:
    """:meth:`EvidenceValues.supports` of the same texts, each part computed when a check first
    needs it: a number is looked up among the evidence's digit runs (a value's number not
    among them, rare, in the full values of the runs whose text could hold it), a date or a
    time among the dates and times alone, an id in the normalised text. An answer without
    values costs nothing; one without dates or times skips most pattern scans."""

    def __init__(self, texts: tuple[str, ...]) -> None:
        self.texts = texts
        self.groups = _groups(texts) if texts else [""]
        self._numbers: frozenset[str] | None = None
        self._dates_times: tuple[frozenset[str], frozenset[str]] | None = None
        self._text: str | None = None

    @classmethod
    def of(cls, texts: list[str]) -> LazyEvidenceValues:
        """The lazy evidence of ``texts`` (cached like :meth:`EvidenceValues.of`)."""
        return _lazy_evidence(tuple(texts))

    def supports(self, value: Value) -> bool:
        """What :meth:`EvidenceValues.supports` answers for the same texts."""
        if value.kind in ("price", "percent", "number"):
            return self._has_number(value.canonical)
        if value.kind in ("date", "time"):
            if self._dates_times is None:
                found = [_group_dates_times(group) for group in self.groups]
                self._dates_times = (
                    frozenset().union(*(dates for dates, _ in found)),
                    frozenset().union(*(times for _, times in found)),
                )
            return value.canonical in self._dates_times[value.kind == "time"]
        if self._text is None:
            self._text = _normalized_text(self.texts)
        return _mentions(self._text, value.canonical)

    def _has_number(self, canonical: str) -> bool:
        if self._numbers is None:
            self._numbers = frozenset().union(*map(_digit_runs, self.groups))
        if canonical in self._numbers:
            return True
        # A value's number is its matched digits, commas dropped, minus a sign, leading zeros
        # and trailing fraction zeros: what is left is in the text of the run it came from
        # (when that text is ASCII: Decimal reads other digits, such as "\u0663", as 0-9).
        digits = canonical.lstrip("-")
        digits = digits[1:] if digits.startswith("0.") else digits
        return any(
            canonical in _value_numbers(group)
            for group in self.groups
            if not group.isascii() or digits in group.replace(",", "")
        )


def _value_numbers(group: str) -> frozenset[str]:
    kinds = ("price", "percent", "number")
    return frozenset(v.canonical for v in _group_numbers(group)[0] if v.kind in kinds)


@functools.lru_cache(maxsize=256)
def _group_dates_times(group: str) -> tuple[frozenset[str], frozenset[str]]:
    """The canonical dates (each full date also as ``--MM-DD``) and times of one run."""
    found = [value for _, value in _claim(group, _DATES_AND_TIMES)]
    dates = _with_month_days({v.canonical for v in found if v.kind == "date"})
    return dates, frozenset(v.canonical for v in found if v.kind == "time")


@functools.lru_cache(maxsize=16)
def _lazy_evidence(texts: tuple[str, ...]) -> LazyEvidenceValues:
    return LazyEvidenceValues(texts)


def clear_caches() -> None:
    """Forget every cached extraction (benchmarks measure cold runs with it)."""
    for cached in (
        _number,
        _extract,
        _group_numbers,
        _digit_runs,
        _group_dates_times,
        _evidence,
        _lazy_evidence,
        _normalized,
    ):
        cached.cache_clear()
