"""The overall score: weighted axes, correctness folding, exclusions and the pass rule."""

from __future__ import annotations

import pytest

from tracegrade.scoring.overall import combine
from tracegrade.scoring.score import Score, skipped

DEFAULT_WEIGHTS = {
    "groundedness": 0.4,
    "correctness": 0.4,
    "completeness": 0.2,
    "hallucination": 0.5,
    "judge": 0.4,
}


def scores(**values):
    """name=value (float, None for skipped) or name=Score."""
    out = {}
    for name, value in values.items():
        out[name] = (
            value
            if isinstance(value, Score)
            else (
                skipped(name, f"{name} does not apply")
                if value is None
                else Score(name, value, "ok")
            )
        )
    return out


def test_default_weights_are_groundedness_correctness_completeness(config):
    assert dict(config.weights) == DEFAULT_WEIGHTS


def test_default_threshold_is_0_7(config):
    assert config.threshold == 0.7


def test_overall_is_the_weighted_mean_of_the_axes():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=0.5, completeness=0.0), DEFAULT_WEIGHTS, 0.7
    )
    assert overall.value == pytest.approx(0.4 * 1.0 + 0.4 * 0.5 + 0.2 * 0.0)


def test_correctness_is_tool_correctness_when_no_arguments_were_scored():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=0.5, tool_arguments=None, completeness=1.0),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert overall.axes["correctness"] == 0.5


def test_tool_arguments_fold_into_correctness_as_the_mean():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=1.0, tool_arguments=0.5, completeness=1.0),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert overall.axes["correctness"] == 0.75
    assert overall.value == pytest.approx(0.4 + 0.4 * 0.75 + 0.2)


def test_tool_arguments_alone_give_correctness():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=None, tool_arguments=0.5, completeness=1.0),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert overall.axes["correctness"] == 0.5


def test_case_passes_at_exactly_the_threshold():
    overall = combine(
        scores(groundedness=1.0, completeness=0.5), {"groundedness": 0.5, "completeness": 0.5}, 0.75
    )
    assert overall.value == 0.75 and overall.passed


def test_case_below_the_threshold_fails():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=0.5, completeness=0.0), DEFAULT_WEIGHTS, 0.7
    )
    assert overall.value == pytest.approx(0.6) and not overall.passed


def test_hard_failure_fails_a_case_whatever_its_score():
    hallucination = Score(
        "hallucination", 0.0, "forbidden", ("answer contains forbidden phrase 'refund'",)
    )
    overall = combine(
        scores(
            groundedness=1.0, tool_correctness=1.0, completeness=1.0, hallucination=hallucination
        ),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert overall.value == 1.0 and not overall.passed
    assert overall.hard_failures == ("answer contains forbidden phrase 'refund'",)


def test_hard_failure_from_a_skipped_scorer_still_fails_the_case():
    crashed = Score("judge", None, "scorer crashed", ("scorer judge crashed: KeyError",))
    overall = combine(
        scores(groundedness=1.0, tool_correctness=1.0, completeness=1.0, judge=crashed),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert not overall.passed


def test_axis_that_cannot_run_is_excluded_and_the_rest_renormalised():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=0.5, completeness=None), DEFAULT_WEIGHTS, 0.7
    )
    assert overall.value == pytest.approx((0.4 * 1.0 + 0.4 * 0.5) / 0.8)
    assert "completeness" not in overall.axes


def test_excluded_axis_is_listed_with_its_reason():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=1.0, completeness=None), DEFAULT_WEIGHTS, 0.7
    )
    assert overall.excluded == {"completeness": "completeness does not apply"}


def test_correctness_is_excluded_with_the_tool_correctness_reason():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=None, completeness=1.0), DEFAULT_WEIGHTS, 0.7
    )
    assert overall.excluded == {"correctness": "tool_correctness does not apply"}


def test_axis_without_any_scorer_is_excluded_visibly():
    overall = combine(scores(groundedness=1.0), {"groundedness": 1.0, "errors": 1.0}, 0.7)
    assert "errors" in overall.excluded and overall.value == 1.0


def test_no_axis_at_all_is_not_passed():
    overall = combine(
        scores(groundedness=None, tool_correctness=None, completeness=None), DEFAULT_WEIGHTS, 0.0
    )
    assert overall.value is None and not overall.passed
    assert set(overall.excluded) == {"groundedness", "correctness", "completeness"}


def test_zero_weight_axis_is_ignored_not_excluded():
    overall = combine(
        scores(groundedness=1.0, completeness=0.0), {"groundedness": 1.0, "completeness": 0.0}, 0.7
    )
    assert overall.value == 1.0 and overall.excluded == {}


def test_unweighted_scorers_do_not_change_the_value():
    overall = combine(
        scores(groundedness=1.0, tool_correctness=1.0, completeness=1.0, value_grounding=0.0),
        DEFAULT_WEIGHTS,
        0.7,
    )
    assert overall.value == 1.0 and overall.passed


def test_reference_free_weights_combine_their_scorers(config):
    assert dict(config.reference_free_weights) == {"value_grounding": 0.7, "errors": 0.3}
    overall = combine(
        scores(value_grounding=0.5, errors=1.0), config.reference_free_weights, config.threshold
    )
    assert overall.value == pytest.approx(0.65) and not overall.passed


def _hallucination(found: int, required: int) -> Score:
    phrases = [f"p{i}" for i in range(required)]
    return Score(
        "hallucination",
        found / required if required else 1.0,
        "scripted",
        details={"required": phrases, "required_missing": phrases[found:]},
    )


def test_10_6_a_missed_must_contain_phrase_fails_under_the_default_weights(config):
    """Issue 10 item 6: hallucination 0.0 on ``missing ['21']`` no longer passes at 1.0."""
    perfect = dict(groundedness=1.0, tool_correctness=1.0, completeness=1.0)
    overall = combine(
        {**scores(**perfect), "hallucination": _hallucination(0, 1)},
        config.weights,
        config.threshold,
    )
    assert overall.axes["hallucination"] == 0.0
    assert overall.value == pytest.approx(1.0 / 1.5) and not overall.passed


def test_10_6_must_not_contain_alone_adds_no_axis(config):
    """A case with only must_not_contain (and no hit) is scored on its other axes, unpadded."""
    overall = combine(
        {**scores(groundedness=0.0, tool_correctness=1.0), "hallucination": _hallucination(0, 0)},
        config.weights,
        config.threshold,
    )
    assert "hallucination" not in overall.axes and "hallucination" not in overall.excluded
    assert overall.value == pytest.approx(0.5)


def test_10_6_the_judge_is_an_axis_even_under_weights_that_do_not_name_it():
    overall = combine(
        scores(groundedness=None, judge=0.9), {"groundedness": 0.5, "correctness": 0.5}, 0.7
    )
    assert overall.axes == {"judge": 0.9} and overall.passed


def test_10_6_a_case_without_rubric_or_must_contain_notes_neither_axis(config):
    overall = combine(
        {**scores(groundedness=1.0), "judge": skipped("judge", "no judge rubric for this case")},
        config.weights,
        config.threshold,
    )
    assert "judge" not in overall.excluded and "hallucination" not in overall.excluded
