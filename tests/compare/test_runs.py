"""compare_runs on small documents: statuses, the paired tests, each regression rule."""

from __future__ import annotations

import pytest

from tests.compare.documents import case, run
from tracegrade.compare import RegressionRules, compare_runs, hallucinated, rules_from
from tracegrade.errors import ConfigError


def test_cases_pair_by_id_with_new_and_removed() -> None:
    base = run("b", [case("a", 1.0), case("gone", 1.0)])
    current = run("c", [case("a", 1.0), case("fresh", 0.9)])
    statuses = {c.case_id: c.status for c in compare_runs(base, current).cases}
    assert statuses == {"a": "unchanged", "fresh": "new", "gone": "removed"}


def test_a_flip_to_failure_is_a_regression_with_the_current_reasons() -> None:
    comparison = compare_runs(run("b", [case("a", 0.9)]), run("c", [case("a", 0.4)]))
    (only,) = comparison.cases
    assert only.status == "regressed" and "a is below threshold" in only.reasons
    assert comparison.regression and "1 case(s) passed before and fail now: a" in comparison.reasons
    assert only.axes["correctness"].delta == pytest.approx(-0.5)


def test_a_score_move_within_tolerance_is_unchanged_beyond_it_improved() -> None:
    small = compare_runs(run("b", [case("a", 0.80)]), run("c", [case("a", 0.84)]))
    large = compare_runs(run("b", [case("a", 0.80)]), run("c", [case("a", 0.95)]))
    assert small.cases[0].status == "unchanged"
    assert large.cases[0].status == "improved" and not large.regression


def test_disagreeing_repeats_are_flaky_and_never_a_regression() -> None:
    base = run("b", [case("a", 0.9, attempts=[0.9, 0.9, 0.9])])
    current = run("c", [case("a", 0.9, attempts=[0.9, 0.2, 0.9])])
    comparison = compare_runs(base, current)
    assert comparison.cases[0].status == "flaky" and comparison.cases[0].flaky_in == ("current",)
    assert not comparison.regression


def test_consistent_repeats_that_all_fail_regress_and_report_the_attempt_test() -> None:
    base = run("b", [case("a", 0.9, attempts=[0.9, 0.95, 0.9])])
    current = run("c", [case("a", 0.2, attempts=[0.2, 0.25, 0.3])])
    (only,) = compare_runs(base, current).cases
    assert only.status == "regressed"
    assert only.test is not None and only.test.name == "wilcoxon" and only.test.n == 3
    assert only.test.p_value == pytest.approx(0.25)  # the smallest two-sided p with 3 pairs


def test_a_score_only_drop_with_repeats_needs_a_significant_attempt_test() -> None:
    base = run("b", [case("a", 0.95, attempts=[0.95, 0.95, 0.95])])
    current = run("c", [case("a", 0.8, attempts=[0.8, 0.8, 0.8])])
    (only,) = compare_runs(base, current).cases
    assert only.status == "unchanged" and "not significant" in only.reasons[0]


def test_mean_score_drop_without_repeats_follows_the_threshold() -> None:
    base = run("b", [case(str(i), 0.95) for i in range(4)])
    current = run("c", [case(str(i), 0.88) for i in range(4)])
    comparison = compare_runs(base, current)
    assert comparison.regression and comparison.reasons[0].startswith("mean score 0.950 -> 0.880")
    assert not compare_runs(base, current, RegressionRules(max_score_drop=0.1)).regression


def test_mean_score_drop_with_repeats_needs_the_paired_test_over_cases() -> None:
    steady = [case(str(i), 0.95, attempts=[0.95] * 3) for i in range(12)]
    lower = [case(str(i), 0.85, attempts=[0.85] * 3) for i in range(12)]
    mixed = [case(str(i), 0.85 if i % 2 else 1.0, attempts=[0.9] * 3) for i in range(12)]
    significant = compare_runs(run("b", steady), run("c", lower))
    assert significant.test.significant and significant.regression
    noisy = compare_runs(run("b", steady), run("c", mixed))
    assert not noisy.test.significant and not noisy.regression  # mean 0.95 -> 0.925, p > 0.05


def test_hallucination_rate_rise_above_two_points_is_a_regression() -> None:
    forbidden = {"hallucination": {"value": 0.0, "details": {"forbidden_found": ["guaranteed"]}}}
    base = run("b", [case(str(i), 1.0) for i in range(10)])
    current = run("c", [*(case(str(i), 1.0) for i in range(9)), case("9", 1.0, details=forbidden)])
    comparison = compare_runs(base, current)
    assert comparison.deltas["hallucination_rate"].delta == pytest.approx(0.1)
    assert comparison.regression and "hallucination rate 0.0% -> 10.0%" in comparison.reasons[0]
    assert comparison.cases[9].status == "unchanged"  # the case itself still passes


def test_latency_and_cost_ratios_are_off_by_default() -> None:
    base = run("b", [case("a", 1.0, duration_ms=100, cost_usd=0.01)])
    current = run("c", [case("a", 1.0, duration_ms=300, cost_usd=0.05)])
    assert not compare_runs(base, current).regression
    rules = RegressionRules(max_latency_p95_ratio=1.5, max_cost_ratio=2.0)
    reasons = compare_runs(base, current, rules).reasons
    assert len(reasons) == 2 and "x3.00 > x1.5" in reasons[0] and "x5.00 > x2" in reasons[1]


def test_hallucinated_is_the_one_definition() -> None:
    assert hallucinated({"scores": {"value_grounding": 0.5}})
    assert hallucinated({"scores": {"hallucination": 0.5}})
    assert not hallucinated({"scores": {"value_grounding": 1.0, "hallucination": None}})


def test_rules_come_from_the_config_and_bad_keys_name_the_field() -> None:
    assert rules_from({"max_score_drop": 0.1, "alpha": 0.01}) == RegressionRules(
        max_score_drop=0.1, alpha=0.01
    )
    with pytest.raises(ConfigError, match=r"tracegrade.yaml: field 'regression.max_drop'"):
        rules_from({"max_drop": 0.1})


def test_the_json_document_has_the_documented_shape() -> None:
    data = compare_runs(run("b", [case("a", 0.9)]), run("c", [case("a", 0.4)])).to_json()
    assert data["schema_version"] == "tracegrade.comparison/1"
    assert {"base", "current", "cases", "regression", "reasons", "deltas", "test"} <= set(data)
    (entry,) = data["cases"]
    assert {"case_id", "status", "base_score", "current_score", "axes", "diff"} <= set(entry)
    assert entry["diff"]["source"] == "results" and entry["score_delta"] == pytest.approx(-0.5)


def test_several_results_of_one_case_are_its_attempts() -> None:
    # tracegrade score on a case matched by three traces writes three entries with its id
    steady = run("b", [case("a", 0.9), case("a", 0.95), case("a", 0.9)])
    split = run("c", [case("a", 0.9), case("a", 0.3), case("a", 0.95)])
    (only,) = compare_runs(steady, split).cases
    assert only.base_attempts == only.current_attempts == 3
    assert only.status == "flaky" and only.current_score == 0.9  # the median of the attempts
