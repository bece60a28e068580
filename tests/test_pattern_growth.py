"""Every regular expression tracegrade keeps at module level (Python ``re``, applied to span
attributes, answers, prompts and tool results) is linear on hostile text (issue 40 item 5): each
is run over strings of repeated units that make backtracking patterns quadratic, and 8x the
text may take at most ~10x the time. The redactor's RE2 patterns, the value extraction and the
Markdown renderer have their own growth tests (tests/otlp/test_redaction_linear.py,
tests/scoring/test_values_linear.py, tests/web/test_markdown_bounds.py).

Times are the best of three runs (CPU time of this thread), so a loaded machine does not fail
the test; a run under 0.5 ms at the small size is too short to compare and is skipped."""

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


def _quadratic_on(label: str, pattern: re.Pattern[str], chars: int = SMALL) -> str | None:
    """Why ``pattern`` is not linear on a unit repeated to ``chars`` characters, or None."""
    for unit in UNITS:
        text = unit * (chars // len(unit))
        small = _cpu_s(pattern, text)
        if small < 0.0005:
            continue
        large = _cpu_s(pattern, text * 8)
        if large > 10 * small * 1.25:
            return (
                f"{label} on {unit!r} repeated: {small:.4f} s at {len(text)} characters, "
                f"{large:.4f} s at 8 times that ({large / small:.1f}x)"
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
