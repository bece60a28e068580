"""Every regular expression tracegrade keeps at module level (Python ``re``, applied to span
attributes, answers, prompts and tool results) is linear on hostile text (issue 40 item 5): each
is run over strings of repeated units that make backtracking patterns quadratic: 8x the text
may take at most 16x the time (linear takes ~8x, quadratic 64x). The redactor's RE2 patterns,
the value extraction and the Markdown renderer have their own growth tests
(tests/otlp/test_redaction_linear.py, tests/scoring/test_values_linear.py,
tests/web/test_markdown_bounds.py).

Times are the best of three runs (CPU time of this thread), and a ratio over the bound is
measured again before it counts, so a loaded machine (CPU caches, frequency) does not fail the
test; a run under 1 ms at the small size is too short to compare and is skipped. The bound sits
between linear (8x) and quadratic (64x) with room on both sides: a CI run on a loaded machine
measured 12.5x and 13.9x for two linear patterns."""

from __future__ import annotations

import importlib
import pkgutil
import re
import time

import pytest

import tracegrade
from tracegrade.otlp.redaction import _compile as redaction_pattern
from tracegrade.otlp.redaction import default_rules

UNITS = (
    "a", "AKIA", "2024-01-", "![", "1.", "-1", " ", "a:", '"a":', "${", "{{", "<a", "[a](",
    "http://", "@a.", "0x", "sk-", "1,", "a ", "a.", "_a", "$1", "1 ", "a=", "-", ":", "/",
    "\\", "'", "aA1", "\n", "\t1", "a\n",
)  # fmt: skip
SMALL = 8_000
"""Characters of the small input; the large one is 8 times as long."""
GROWTH = 8
MAX_RATIO = 16.0
"""Time ratio allowed for GROWTH times the text: linear is ~8, quadratic ~64."""
MIN_SMALL_S = 0.001
ANCHORED = {
    "tracegrade.normalize.reprs._HEAD": "matched once at the start of a value (.match)",
    "tracegrade.scoring.values._MARKER_LINE": "matched once at its line's start (.fullmatch)",
}
"""Patterns only ever applied at one position: scanning them at every position (what this test
does) is quadratic, their use is not."""


def _module_patterns() -> dict[str, re.Pattern[str]]:
    found: dict[str, re.Pattern[str]] = {}
    for info in pkgutil.walk_packages(tracegrade.__path__, "tracegrade."):
        if info.name.endswith("__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an extra not installed
            continue
        for name, value in vars(module).items():
            items = value if isinstance(value, (list, tuple)) else [value]
            for i, item in enumerate(items):
                if isinstance(item, re.Pattern) and isinstance(item.pattern, str):
                    label = f"{info.name}.{name}" + (f"[{i}]" if items is value else "")
                    found.setdefault(label, item)
    return found


def _cpu_s(pattern: re.Pattern[str], text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.thread_time()
        for _match in pattern.finditer(text):
            pass
        best = min(best, time.thread_time() - start)
    return best


PATTERNS = _module_patterns()


def test_the_survey_finds_the_patterns_it_is_about() -> None:
    assert len(PATTERNS) >= 30
    assert set(ANCHORED) <= set(PATTERNS)


def _ratio(pattern: re.Pattern[str], text: str) -> tuple[float, float] | None:
    """CPU seconds on ``text`` and on GROWTH times it, or None when too short to compare."""
    small = _cpu_s(pattern, text)
    if small < MIN_SMALL_S:
        return None
    return small, _cpu_s(pattern, text * GROWTH)


def _quadratic_on(label: str, pattern: re.Pattern[str], chars: int = SMALL) -> str | None:
    """Why ``pattern`` is not linear on a unit repeated to ``chars`` characters, or None."""
    for unit in UNITS:
        text = unit * (chars // len(unit))
        for _attempt in range(3):  # over the bound three times running, or it was the machine
            times = _ratio(pattern, text)
            if times is None or times[1] <= MAX_RATIO * times[0]:
                break
        else:
            assert times is not None
            small, large = times
            return (
                f"{label} on {unit!r} repeated: {small:.4f} s at {len(text)} characters, "
                f"{large:.4f} s at {GROWTH} times that ({large / small:.1f}x)"
            )
    return None


def test_the_growth_check_catches_a_quadratic_pattern() -> None:
    assert _quadratic_on("backtracking", re.compile(r"\s*x"), 2_000) is not None
    assert _quadratic_on("scan", PATTERNS["tracegrade.normalize.reprs._HEAD"], 2_000) is not None


@pytest.mark.parametrize("label", sorted(set(PATTERNS) - set(ANCHORED)))
def test_a_pattern_is_linear_on_repeated_units(label: str) -> None:
    assert _quadratic_on(label, PATTERNS[label]) is None


VALUE_RULES = default_rules().values


@pytest.mark.parametrize("index", range(len(VALUE_RULES)))
def test_a_shipped_redaction_value_rule_is_linear(index: int) -> None:
    """config/redaction.yaml's value rules run on Python ``re`` (their ``\\b`` stands for a
    lookbehind RE2 has not): each shipped rule is held linear here."""
    rule = VALUE_RULES[index]
    compiled = redaction_pattern(rule.pattern, "config/redaction.yaml")
    assert _quadratic_on(f"value rule {rule.pattern!r}", compiled) is None
