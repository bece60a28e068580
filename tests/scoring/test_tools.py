"""Tool correctness (names, multiset, order, forbidden) and tool arguments (predicates)."""

from __future__ import annotations

import pytest

from tests.support.traces import gap, make_case, make_trace, tool
from tracegrade.scoring.tools import ToolArguments, ToolCorrectness, lcs_length


def correctness(expected=(), actual=(), **case_fields):
    case = make_case(expected_tools=list(expected), **case_fields)
    trace = make_trace(
        tool_calls=[c if not isinstance(c, str) else tool(c, result="ok") for c in actual]
    )
    return ToolCorrectness()(trace, case)


def arguments(expected_calls, calls, counting="performed", **case_fields):
    case = make_case(expected_tool_calls=expected_calls, **case_fields)
    return ToolArguments(counting=counting)(make_trace(tool_calls=calls), case)


# --- tool correctness -----------------------------------------------------------------------------


def test_all_expected_tools_called_scores_one():
    assert (
        correctness(
            ["check_return_eligibility", "initiate_return"],
            ["check_return_eligibility", "initiate_return"],
        ).value
        == 1.0
    )


def test_partial_credit_over_expected_tools():
    score = correctness(
        ["check_return_eligibility", "initiate_return"], ["check_return_eligibility"]
    )
    assert score.value == 0.5
    assert score.details["missing"] == ["initiate_return"]


def test_no_expected_tool_called_scores_zero():
    assert correctness(["get_order_details"], []).value == 0.0


def test_extra_calls_are_not_penalised():
    assert (
        correctness(
            ["get_order_details"], ["get_user_orders", "get_order_details", "get_order_tracking"]
        ).value
        == 1.0
    )


def test_extra_calls_are_reported_in_details():
    assert correctness(["a"], ["a", "b"]).details["extra"] == ["b"]


def test_one_call_does_not_satisfy_two_expected_calls():
    score = correctness(["search_products", "search_products"], ["search_products"])
    assert score.value == 0.5
    assert score.details["missing"] == ["search_products"]


def test_order_any_ignores_order():
    assert correctness(["a", "b"], ["b", "a"]).value == 1.0


def test_order_in_order_credits_the_longest_common_subsequence():
    assert correctness(["a", "b", "c"], ["c", "a", "b"], order="in_order").value == pytest.approx(
        2 / 3
    )


def test_order_in_order_does_not_penalise_interleaved_extras():
    assert correctness(["a", "b"], ["a", "x", "b", "y"], order="in_order").value == 1.0


def test_order_exact_scores_one_for_the_identical_sequence():
    assert correctness(["a", "b"], ["a", "b"], order="exact").value == 1.0


def test_order_exact_makes_extra_calls_cost():
    assert correctness(["a", "b"], ["a", "b", "c"], order="exact").value == pytest.approx(2 / 3)


def test_order_exact_penalises_wrong_order():
    assert correctness(["a", "b"], ["b", "a"], order="exact").value == 0.5


def test_failed_call_does_not_count_as_made():
    score = correctness(
        ["get_order_details"], [tool("get_order_details", result="Error: not found")]
    )
    assert score.value == 0.0


def test_failed_call_counts_when_counting_attempted_calls():
    case = make_case(expected_tools=["get_order_details"])
    trace = make_trace(tool_calls=[tool("get_order_details", result="Error: not found")])
    assert ToolCorrectness(counting="attempted")(trace, case).value == 1.0


def test_forbidden_tool_call_is_a_hard_failure():
    score = correctness(
        ["get_order_details"],
        ["get_order_details", "cancel_order"],
        forbidden_tools=["cancel_order"],
    )
    assert score.hard_failures == ("called forbidden tool 'cancel_order'",)


def test_forbidden_tool_does_not_lower_the_credit_value():
    score = correctness(
        ["get_order_details"],
        ["get_order_details", "cancel_order"],
        forbidden_tools=["cancel_order"],
    )
    assert score.value == 1.0


def test_failed_call_to_a_forbidden_tool_is_still_a_hard_failure():
    score = correctness(
        [], [tool("cancel_order", error="denied")], forbidden_tools=["cancel_order"]
    )
    assert score.hard_failures


def test_forbidden_only_case_scores_one_when_the_tool_is_avoided():
    score = correctness([], ["get_order_details"], forbidden_tools=["cancel_order"])
    assert score.value == 1.0 and not score.hard_failures


def test_forbidden_only_case_scores_zero_when_the_tool_is_called():
    assert correctness([], ["cancel_order"], forbidden_tools=["cancel_order"]).value == 0.0


def test_expected_tool_call_names_count_as_expected_tools():
    case = make_case(expected_tool_calls=[{"name": "get_order_details"}])
    assert ToolCorrectness()(make_trace(tool_calls=[]), case).value == 0.0


def test_tool_correctness_is_skipped_when_the_case_expects_no_tools():
    assert correctness([], ["a"]).value is None


def test_tool_correctness_is_skipped_without_a_case():
    assert ToolCorrectness()(make_trace(), None).value is None


def test_tool_correctness_is_skipped_when_tool_calls_are_not_recorded():
    case = make_case(expected_tools=["a"])
    assert ToolCorrectness()(make_trace(gaps=[gap("tool_calls")]), case).value is None


def test_lcs_length():
    assert lcs_length(["a", "b", "c", "d"], ["b", "x", "d", "a"]) == 2


# --- tool arguments -------------------------------------------------------------------------------


def test_call_satisfying_every_predicate_scores_one():
    score = arguments(
        [
            {
                "name": "search_products",
                "arguments": {"query": "headphones", "max_price": {"<=": 300}},
            }
        ],
        [tool("search_products", {"query": "headphones", "max_price": 300})],
    )
    assert score.value == 1.0


def test_credit_is_the_fraction_of_predicates_satisfied():
    score = arguments(
        [
            {
                "name": "search_products",
                "arguments": {"query": "headphones", "max_price": {"<=": 300}},
            }
        ],
        [tool("search_products", {"query": "headphones", "max_price": 450})],
    )
    assert score.value == 0.5


def test_failed_argument_is_named_with_its_value():
    score = arguments(
        [{"name": "search_products", "arguments": {"max_price": {"<=": 300}}}],
        [tool("search_products", {"max_price": 450})],
    )
    [failure] = score.details["calls"][0]["failures"]
    assert "'max_price'" in failure and "450" in failure
    assert failure in score.reason


def test_best_matching_call_is_chosen_among_calls_of_the_same_name():
    score = arguments(
        [{"name": "search_products", "arguments": {"query": "headphones"}}],
        [
            tool("search_products", {"query": "speakers"}),
            tool("search_products", {"query": "headphones"}),
        ],
    )
    assert score.value == 1.0


def test_each_expected_call_gets_a_distinct_actual_call():
    expected = [
        {"name": "get_order_details", "arguments": {"order_id": "A1"}},
        {"name": "get_order_details", "arguments": {"order_id": "A1"}},
    ]
    score = arguments(expected, [tool("get_order_details", {"order_id": "A1"})])
    assert score.value == 0.5


def test_expected_calls_match_actual_calls_in_any_order():
    expected = [
        {"name": "get_order_details", "arguments": {"order_id": "A1"}},
        {"name": "get_order_details", "arguments": {"order_id": "B2"}},
    ]
    calls = [
        tool("get_order_details", {"order_id": "B2"}),
        tool("get_order_details", {"order_id": "A1"}),
    ]
    assert arguments(expected, calls).value == 1.0


def test_full_matches_are_preferred_over_a_greedy_first_pairing():
    # Call 0 satisfies both expectations, call 1 only the first: the only perfect pairing is
    # expected 0 -> call 1, expected 1 -> call 0.
    expected = [
        {"name": "refund", "arguments": {"amount": {"<=": 100}}},
        {"name": "refund", "arguments": {"amount": {"<=": 100}, "order_id": "A"}},
    ]
    calls = [
        tool("refund", {"amount": 50, "order_id": "A"}),
        tool("refund", {"amount": 80, "order_id": "B"}),
    ]
    assert arguments(expected, calls).value == 1.0


def test_expected_call_with_no_call_of_that_name_scores_zero():
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}}], [tool("get_order_details", {})]
    )
    assert score.value == 0.0
    assert "cancel_order: no matching call" in score.reason


def test_one_of_accepts_any_listed_value_bfcl_style():
    score = arguments(
        [{"name": "book", "arguments": {"cabin": {"one_of": ["economy", "basic_economy"]}}}],
        [tool("book", {"cabin": "basic_economy"})],
    )
    assert score.value == 1.0


def test_one_of_with_empty_string_lets_the_argument_be_omitted():
    score = arguments(
        [{"name": "book", "arguments": {"insurance": {"one_of": ["no", ""]}}}], [tool("book", {})]
    )
    assert score.value == 1.0


def test_optional_argument_may_be_omitted():
    score = arguments(
        [{"name": "search", "arguments": {"page": {"optional": True, "equals": 1}}}],
        [tool("search", {"q": "x"})],
    )
    assert score.value == 1.0


def test_regex_predicate_on_an_argument():
    score = arguments(
        [{"name": "get_order_details", "arguments": {"order_id": {"regex": "^550e8400-"}}}],
        [tool("get_order_details", {"order_id": "550e8400-e29b-41d4-a716-446655440001"})],
    )
    assert score.value == 1.0


def test_subset_predicate_on_an_argument():
    score = arguments(
        [{"name": "update", "arguments": {"items": {"subset": ["laptop"]}}}],
        [tool("update", {"items": ["mouse", "laptop"]})],
    )
    assert score.value == 1.0


def test_missing_required_argument_is_reported_as_missing():
    score = arguments(
        [{"name": "get_order_details", "arguments": {"order_id": "A1"}}],
        [tool("get_order_details", {})],
    )
    assert score.value == 0.0
    assert "argument 'order_id' missing" in score.reason


def test_extra_arguments_fail_when_the_expected_call_disallows_them():
    score = arguments(
        [{"name": "search", "arguments": {"q": "x"}, "allow_extra_arguments": False}],
        [tool("search", {"q": "x", "page": 2})],
    )
    assert score.value == 0.5


def test_required_call_not_made_as_expected_is_a_hard_failure():
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}, "required": True}],
        [tool("cancel_order", {"order_id": "B2"})],
    )
    assert score.hard_failures == (
        'wrong-argument call cancel_order({"order_id": "B2"}): argument \'order_id\' expected'
        ' "A1", got "B2"',
    )


def test_required_call_made_as_expected_is_not_a_hard_failure():
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}, "required": True}],
        [tool("cancel_order", {"order_id": "A1"})],
    )
    assert score.value == 1.0 and score.hard_failures == ()


def test_wrong_arguments_without_required_are_not_a_hard_failure():
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}}],
        [tool("cancel_order", {"order_id": "B2"})],
    )
    assert score.hard_failures == ()


def test_failed_call_is_not_used_to_satisfy_an_expected_call():
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}}],
        [tool("cancel_order", {"order_id": "A1"}, result="Error: order already shipped")],
    )
    assert score.value == 0.0


def test_unrecorded_arguments_are_not_scored_and_say_why():
    """A call made whose arguments the trace does not carry (content capture off) cannot be
    checked: not scored, not zero, and no hard failure even when required (issue 35)."""
    score = arguments(
        [{"name": "search", "arguments": {"q": "x"}, "required": True}],
        [tool("search", None, arguments_recorded=False)],
    )
    assert score.value is None and score.hard_failures == ()
    assert "arguments of search not recorded" in score.reason


def test_recorded_arguments_are_scored_beside_unrecorded_ones():
    score = arguments(
        [
            {"name": "search", "arguments": {"q": "x"}},
            {"name": "cancel_order", "arguments": {"order_id": "A1"}},
        ],
        [tool("search", None, arguments_recorded=False), tool("cancel_order", {"order_id": "B2"})],
    )
    assert score.value == 0.0
    assert "not checked: arguments of search not recorded" in score.reason


def test_strict_tool_extra_performed_call_is_a_hard_failure():
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}],
        [tool("refund", {"order_id": "A1"}), tool("refund", {"order_id": "A1"})],
        strict_tools=["refund"],
    )
    assert len(score.hard_failures) == 1 and "unexpected call refund" in score.hard_failures[0]


def test_strict_tool_call_with_different_arguments_is_a_hard_failure():
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}],
        [tool("refund", {"order_id": "B2"})],
        strict_tools=["refund"],
    )
    (hard,) = score.hard_failures
    assert hard.startswith('wrong-argument call refund({"order_id": "B2"}): argument \'order_id\'')


def test_a_wrong_argument_call_is_reported_once_not_as_unexpected_and_not_made():
    """Issue 27, defect 8: a required call of a strict tool made with a wrong argument was
    two hard failures ("unexpected call" and "required call not made") for one call."""
    score = arguments(
        [{"name": "cancel_order", "arguments": {"order_id": "A1"}, "required": True}],
        [tool("cancel_order", {"order_id": "B2"})],
        strict_tools=["cancel_order"],
    )
    assert score.hard_failures == (
        'wrong-argument call cancel_order({"order_id": "B2"}): argument \'order_id\' expected'
        ' "A1", got "B2"',
    )


def test_a_second_strict_call_beside_a_wrong_argument_one_is_still_unexpected():
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}, "required": True}],
        [tool("refund", {"order_id": "B2"}), tool("refund", {"order_id": "C3"})],
        strict_tools=["refund"],
    )
    assert len(score.hard_failures) == 2
    assert score.hard_failures[0].startswith("unexpected call refund")
    assert score.hard_failures[1].startswith("wrong-argument call refund")


def test_strict_tool_failed_call_is_not_a_hard_failure():
    calls = [
        tool("refund", {"order_id": "B2"}, error="rate limited"),
        tool("refund", {"order_id": "A1"}),
    ]
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}], calls, strict_tools=["refund"]
    )
    assert score.hard_failures == ()


def test_strict_tool_failed_call_is_not_a_hard_failure_when_counting_attempted_calls():
    calls = [
        tool("refund", {"order_id": "B2"}, error="rate limited"),
        tool("refund", {"order_id": "A1"}),
    ]
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}],
        calls,
        counting="attempted",
        strict_tools=["refund"],
    )
    assert score.hard_failures == ()


def test_strict_tool_matching_calls_are_fine():
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}],
        [tool("refund", {"order_id": "A1"})],
        strict_tools=["refund"],
    )
    assert score.hard_failures == () and score.value == 1.0


def test_calls_of_non_strict_tools_are_never_unexpected():
    score = arguments(
        [{"name": "refund", "arguments": {"order_id": "A1"}}],
        [tool("refund", {"order_id": "A1"}), tool("get_order_details", {"order_id": "Z9"})],
        strict_tools=["refund"],
    )
    assert score.hard_failures == ()


def test_strict_tools_without_expected_calls_forbid_every_performed_call():
    case = make_case(strict_tools=["refund"])
    score = ToolArguments()(make_trace(tool_calls=[tool("refund", {"order_id": "A1"})]), case)
    assert score.value == 0.0 and score.hard_failures


def test_tool_arguments_is_skipped_when_the_case_gives_no_arguments():
    score = ToolArguments()(make_trace(), make_case(expected_tools=["a"]))
    assert score.value is None


def test_tool_arguments_is_skipped_when_tool_calls_are_not_recorded():
    case = make_case(expected_tool_calls=[{"name": "a", "arguments": {"x": 1}}])
    assert ToolArguments()(make_trace(gaps=[gap("tool_calls")]), case).value is None
