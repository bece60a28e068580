"""Issue 35, defects 5 and 6: what a regression says is true and readable. The "passed before
and fail now" reason names the first cases *and how many more*; a reason never cites a
p-value that did not decide it (``wilcoxon p=1`` on single attempts); the Markdown summary and
the console flag no change within noise (+1 ms of latency); JUnit never writes a property
whose value is unknown as "None"."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from tests.compare.documents import case, run
from tests.support.sample_document import CASES, DOC
from tracegrade.compare import compare_runs
from tracegrade.compare.model import Delta
from tracegrade.report.comparison import better, diff_lines, markdown
from tracegrade.report.junit import to_junit


def test_the_flipped_cases_are_named_up_to_ten_and_the_rest_counted():
    base = run("b", [case(f"c{i:02}", 0.9) for i in range(13)])
    current = run("c", [case(f"c{i:02}", 0.4) for i in range(13)])
    [flips] = [r for r in compare_runs(base, current).reasons if "passed before" in r]
    named = ", ".join(f"c{i:02}" for i in range(10))
    assert flips == f"13 case(s) passed before and fail now: {named} and 3 more"
    assert markdown(compare_runs(base, current)).count(" and 3 more") == 1


def test_a_score_drop_of_single_attempts_cites_no_p_value():
    base = run("b", [case(str(i), 0.95) for i in range(6)])
    current = run("c", [case(str(i), 0.85) for i in range(6)])
    comparison = compare_runs(base, current)
    [drop] = [r for r in comparison.reasons if r.startswith("mean score")]
    assert "p=" not in drop and "wilcoxon" not in drop


def test_noise_is_not_flagged_and_a_real_change_is():
    assert better("latency_p95_ms", Delta(40.0, 41.0, 1.0)) is None  # +1 ms of 40: noise
    assert better("latency_p95_ms", Delta(40.0, 60.0, 20.0)) is False
    assert better("cost_usd", Delta(0.01, 0.0101, 0.0001)) is None
    assert better("pass_rate", Delta(0.8, 0.802, 0.002)) is None
    assert better("pass_rate", Delta(0.8, 0.9, 0.1)) is True
    base = run("b", [case("a", 0.9, duration_ms=40.0)])
    current = run("c", [case("a", 0.9, duration_ms=41.0)])
    text = markdown(compare_runs(base, current))
    latency = [line for line in text.splitlines() if line.startswith("| latency")]
    assert latency and not any("🔴" in line or "🟢" in line for line in latency), latency
    slower = markdown(compare_runs(base, run("c", [case("a", 0.9, duration_ms=400.0)])))
    assert any("🔴" in line for line in slower.splitlines() if line.startswith("| latency p95"))


def test_a_cases_usage_change_within_noise_is_not_what_changed():
    base = run("b", [case("a", 0.9, duration_ms=40.0)])
    [changed] = compare_runs(base, run("c", [case("a", 0.4, duration_ms=41.0)])).cases
    assert not any("latency" in line for line in diff_lines(changed.diff))
    [changed] = compare_runs(base, run("c", [case("a", 0.4, duration_ms=90.0)])).cases
    assert "usage: latency +50 ms" in diff_lines(changed.diff)


def test_junit_writes_no_none_for_an_unknown_cost():
    doc = {**DOC, "summary": {**DOC["summary"], "cost_usd": None}, "cases": CASES}
    text = ET.tostring(to_junit(doc).getroot(), encoding="unicode")
    assert "None" not in text
    names = [p.get("name") for p in to_junit(doc).getroot().iter("property")]
    assert "cost_usd" not in names and "score" in names
