"""The comparison and run reports: console colours and rows, Markdown, the step summary of a run
without a baseline, and the run document's summary additions."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from tests.compare.documents import case, run
from tracegrade.compare import compare_runs
from tracegrade.pipeline.gate import publish_gate
from tracegrade.report.comparison import (
    CHANGED_LISTED,
    FAILED_LISTED,
    markdown,
    print_comparison,
    run_markdown,
)


def test_the_console_shows_deltas_and_the_changed_cases() -> None:
    comparison = compare_runs(run("b", [case("a", 0.9)]), run("c", [case("a", 0.4)]))
    console = Console(record=True, width=120)
    print_comparison(comparison, console)
    text = console.export_text()
    assert "mean score" in text and "-0.500" in text and "regressed" in text
    assert "a is below threshold" in text and "regression" in text
    assert "[red]" not in text  # markup rendered, not printed


def test_markdown_lists_the_metrics_and_the_cases() -> None:
    comparison = compare_runs(run("b", [case("a", 0.9)]), run("c", [case("a", 0.95)]))
    text = markdown(comparison)
    assert text.startswith("### tracegrade: ✅ no regression")
    assert "| mean score | 0.900 | 0.950 | +0.050 🟢 |" in text


def test_the_changed_cases_listed_are_bounded_and_the_rest_counted() -> None:
    """150 of 400 cases regress: the console and the Markdown list the first 100 (comparison
    order) and count the other 50, between the unchanged ones."""
    base = run("b", [case(f"c{n}", 0.9) for n in range(400)])
    current = run("c", [case(f"c{n}", 0.4 if n % 8 < 3 else 0.9) for n in range(400)])
    comparison = compare_runs(base, current)
    regressed = [c.case_id for c in comparison.cases if c.status == "regressed"]
    assert len(regressed) == 150 and CHANGED_LISTED == 100
    text = markdown(comparison)
    assert f"| {regressed[99]} | regressed |" in text
    assert f"| {regressed[100]} | regressed |" not in text
    assert "and 50 more changed cases" in text
    console = Console(record=True, width=200)
    print_comparison(comparison, console)
    printed = console.export_text()
    assert f" {regressed[99]} " in printed and f" {regressed[100]} " not in printed
    assert "and 50 more changed cases" in printed


def test_a_run_without_baseline_writes_its_own_step_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    doc = run("r1", [case("a", 0.9), case("b", 0.4)], passed=False)
    assert publish_gate(doc, None, None, str(tmp_path / "run.md")) == []
    text = summary.read_text()
    assert text.startswith("### tracegrade: ❌ run failed")
    assert "| 1/2 | 50.0% | 0.650 |" in text and "| b | 0.400 | b is below threshold |" in text
    assert text == (tmp_path / "run.md").read_text() + "\n"
    assert run_markdown(doc) + "\n" == text


def test_a_runs_markdown_lists_fifty_failed_cases_and_counts_the_rest_in_one_pass() -> None:
    cases = [case(f"c{n}", 0.4 if n % 2 else 0.9) for n in range(301)]
    doc = run("big", cases, passed=False)

    class Streamed:  # a case log's cases: read from the spool file on each pass
        def __iter__(self):
            return iter(cases)

    doc["cases"] = Streamed()
    text = run_markdown(doc)
    listed = [line for line in text.splitlines() if line.startswith("| c")]
    assert listed[0].startswith("| c1 |") and listed[-1].startswith("| c99 |")
    assert len(listed) == FAILED_LISTED
    assert "and 100 more failed cases" in text


def test_a_changed_dataset_is_pointed_out() -> None:
    base = run("b", [case("a", 0.9)])
    current = run("c", [case("a", 0.9)])
    current["run"]["dataset"] = {"name": "shop", "digest": "d2"}
    text = markdown(compare_runs(base, current))
    assert "> dataset shop changed between the runs (digest d1 -> d2)" in text
