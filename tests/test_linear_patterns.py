"""Trace text cannot stall scoring or the dashboard: the built-in patterns run in time linear
in the text (long whitespace runs took 24-47 s), user patterns run on RE2 (a dataset's
``^(a+)+$`` hung ``score``). The dashboard's part: tests/web/test_pages.py."""

from __future__ import annotations

import time

import pytest

from tracegrade._util.user_regex import UserRegexError, compile_user_regex
from tracegrade.dataset.predicates import PredicateError, parse_predicate
from tracegrade.judge.client import ReplyError, parse_reply
from tracegrade.judge.rubrics import Verdict
from tracegrade.normalize.envelopes import looks_like_repr
from tracegrade.normalize.results import is_object_repr
from tracegrade.scoring.values import extract

HOSTILE = [
    " " * 60_000 + "x",
    "\n" * 60_000 + "x",
    " \n" * 30_000 + "1.",
    "[" + " " * 60_000,
    "<a at 0x1>" + " " * 60_000 + "x",
    "<a at 0x1>," + " " * 60_000 + "x",
]


def _seconds(function, *args) -> float:
    started = time.perf_counter()
    function(*args)
    return time.perf_counter() - started


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_answers_of_whitespace_are_scanned_in_linear_time(text: str) -> None:
    assert _seconds(extract, text) < 0.5
    assert _seconds(is_object_repr, text) < 0.5
    assert _seconds(looks_like_repr, text) < 0.5


def test_the_built_in_patterns_still_find_what_they_did() -> None:
    assert is_object_repr("[<a.B object at 0x7f>, <c at 0xff>]")
    assert is_object_repr(" ( <a at 0x1> , ) ") and not is_object_repr("<a at 0x1> x")
    assert [v.text for v in extract("Steps:\n\n  1. pay $20\n 2) ship on 2024-05-20")] == [
        "$20",
        "2024-05-20",
    ]


def test_a_judge_reply_of_spaces_is_refused_at_once() -> None:
    started = time.perf_counter()
    with pytest.raises(ReplyError):
        parse_reply("```" + " " * 4_000 + "x", Verdict)
    assert time.perf_counter() - started < 0.5
    fenced = '```json\n{"score": 1.0, "reasoning": "ok"}\n```'
    assert parse_reply(fenced, Verdict).score == 1.0


def test_a_catastrophic_dataset_regex_runs_in_linear_time() -> None:
    predicate = parse_predicate({"regex": "^(a+)+$"})
    started = time.perf_counter()
    assert not predicate.check("a" * 50_000 + "b")[0]
    assert predicate.check("aaaa")[0]
    assert time.perf_counter() - started < 0.5


def test_a_pattern_re2_cannot_run_is_refused_at_load_with_why() -> None:
    with pytest.raises(PredicateError, match="lookaround"):
        parse_predicate({"regex": "(?<=id-)\\d+"})
    with pytest.raises(UserRegexError, match="not supported"):
        compile_user_regex("(a)\\1")
    assert compile_user_regex("ORD-\\d+", ignore_case=True).search("ord-12")
