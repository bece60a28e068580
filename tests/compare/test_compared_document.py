"""``compared_document``: a run document cut to what the comparison reads of its cases, so that
``score --baseline`` and ``compare`` do not hold every scorer's details of every case."""

from __future__ import annotations

from tests.compare.documents import case, run
from tracegrade.compare import compare_runs
from tracegrade.compare.run_cases import compared_document

DETAILS = {
    "value_grounding": {"score": 0.5, "details": {"ungrounded": ["$348"], "grounded": ["$12"]}},
    "hallucination": {"score": 0.0, "details": {"forbidden_found": ["refund"], "checked": 3}},
    "tool_arguments": {"score": 1.0, "details": {"calls": [{"name": "search"}] * 50}},
}


def test_only_what_the_comparison_reads_is_kept():
    entry = case("a", 0.5, details=DETAILS, notes=["n"], metadata={"big": "x" * 1000})
    kept = compared_document(run("r", [entry]))["cases"][0]
    assert kept["details"] == {
        "value_grounding": {"details": {"ungrounded": ["$348"]}},
        "hallucination": {"details": {"forbidden_found": ["refund"]}},
    }
    assert set(kept) == {
        *("case_id", "trace_id", "passed", "score", "scores", "axes", "reasons", "usage"),
        "details",
    }
    assert kept["usage"] == entry["usage"] and kept["reasons"] == entry["reasons"]


def test_the_details_left_still_give_the_diff_and_the_hallucination_rate():
    base = run("b", [case("a", 0.9)])
    current = run("c", [case("a", 0.5, details=DETAILS)])
    comparison = compare_runs(base, current)
    diff = comparison.cases[0].diff
    assert diff is not None and diff.newly_ungrounded == ("$348",)
    assert diff.newly_forbidden == ("refund",)
    assert comparison.current.hallucination_rate == 1.0
