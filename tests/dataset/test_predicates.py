"""Argument predicates (tracegrade.dataset.predicates): parsing at load time and pure checks."""

from __future__ import annotations

import pytest

from tracegrade.dataset.predicates import (
    MISSING,
    PredicateError,
    check_arguments,
    parse_predicate,
    values_equal,
)


def check(spec, actual):
    return parse_predicate(spec).check(actual)[0]


# --- equality -----------------------------------------------------------------------------------


def test_plain_value_means_equals():
    assert check("Paris", "Paris")
    assert not check("Paris", "London")


def test_numbers_compare_by_value():
    assert check(5, 5.0)


def test_bool_is_not_equal_to_the_number_one():
    assert not check(True, 1)


def test_dicts_compare_with_keys_in_any_order():
    assert values_equal({"a": 1, "b": [1, 2]}, {"b": [1, 2], "a": 1})


def test_lists_compare_in_order():
    assert not values_equal([1, 2], [2, 1])


def test_string_comparison_is_case_sensitive_by_default():
    assert not check("NYC", "nyc")


def test_ignore_case_makes_string_comparison_case_insensitive():
    assert check({"equals": "NYC", "ignore_case": True}, "nyc")


def test_eq_is_an_alias_of_equals():
    assert check({"eq": 3}, 3)


# --- one_of / optional --------------------------------------------------------------------------


def test_one_of_accepts_any_listed_value():
    spec = {"one_of": ["SFO", "OAK"]}
    assert check(spec, "OAK")
    assert not check(spec, "SJC")


def test_in_is_an_alias_of_one_of():
    assert check({"in": [1, 2]}, 2)


def test_one_of_with_empty_string_allows_the_argument_to_be_omitted():
    assert check({"one_of": ["USD", ""]}, MISSING)


def test_one_of_with_empty_string_still_checks_a_present_value():
    assert not check({"one_of": ["USD", ""]}, "EUR")


def test_one_of_without_empty_string_requires_the_argument():
    passed, reason = parse_predicate({"one_of": ["USD"]}).check(MISSING)
    assert not passed and reason == "missing"


def test_plain_value_is_required():
    assert not check("Paris", MISSING)


def test_optional_argument_may_be_omitted():
    assert check({"optional": True, "equals": 2}, MISSING)


def test_optional_argument_when_present_must_satisfy_the_other_operators():
    assert not check({"optional": True, "equals": 2}, 3)


def test_any_accepts_any_present_value():
    assert check({"any": True}, {"nested": [1]})
    assert not check({"any": True}, MISSING)


# --- bounds -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "spec, actual, expected",
    [
        ({"lte": 300}, 300, True),
        ({"lte": 300}, 300.01, False),
        ({"<=": 300}, 250, True),
        ({">=": 2}, 1, False),
        ({"gte": 2}, 2, True),
        ({"<": 10}, 10, False),
        ({">": 0}, 0.5, True),
    ],
)
def test_numeric_bounds(spec, actual, expected):
    assert check(spec, actual) is expected


def test_bound_rejects_a_non_number():
    assert not check({"lte": 300}, "250")


def test_bound_rejects_a_bool():
    assert not check({"gte": 0}, True)


def test_bounds_combine_as_a_range():
    spec = {">=": 100, "<=": 300}
    assert check(spec, 200)
    assert not check(spec, 301)


# --- strings and collections ---------------------------------------------------------------------


def test_regex_uses_search():
    assert check({"regex": r"\d{4}-\d{2}"}, "date 2024-05")


def test_regex_rejects_a_non_string():
    assert not check({"regex": r"\d+"}, 12)


def test_regex_honours_ignore_case():
    assert check({"regex": "^abc$", "ignore_case": True}, "ABC")


def test_contains_finds_a_substring():
    assert check({"contains": "head"}, "wireless headphones")
    assert not check({"contains": "ear"}, "headphones")


def test_subset_of_a_list_needs_every_item():
    assert check({"subset": ["a", "b"]}, ["c", "b", "a"])
    assert not check({"subset": ["a", "d"]}, ["a", "b"])


def test_subset_of_an_object_needs_every_pair():
    assert check({"subset": {"city": "Paris"}}, {"city": "Paris", "days": 3})
    assert not check({"subset": {"city": "Paris"}}, {"city": "Rome"})


# --- reasons ------------------------------------------------------------------------------------


def test_failure_reason_names_the_actual_value():
    passed, reason = parse_predicate({"lte": 500}).check(650)
    assert not passed
    assert "650" in reason and "500" in reason


def test_describe_renders_a_bound_with_its_symbol():
    assert parse_predicate({"lte": 500}).describe() == "<= 500"


def test_describe_marks_an_optional_predicate():
    assert "(optional)" in parse_predicate({"one_of": ["a", ""]}).describe()


# --- parsing errors -----------------------------------------------------------------------------


def test_bound_that_is_not_a_number_is_rejected():
    with pytest.raises(PredicateError, match="lte needs a number"):
        parse_predicate({"lte": "cheap"})


def test_one_of_that_is_not_a_list_is_rejected():
    with pytest.raises(PredicateError, match="one_of needs a list"):
        parse_predicate({"one_of": "a"})


def test_invalid_regex_is_rejected():
    with pytest.raises(PredicateError, match="invalid regex"):
        parse_predicate({"regex": "("})


def test_unknown_operator_mixed_with_known_ones_is_rejected_listing_valid_ones():
    with pytest.raises(PredicateError) as info:
        parse_predicate({"lte": 5, "less_than": 3})
    assert "less_than" in str(info.value) and "gte" in str(info.value)


def test_object_without_operators_is_a_plain_value():
    predicate = parse_predicate({"city": "Paris"})
    assert predicate.check({"city": "Paris"})[0]


# --- check_arguments ----------------------------------------------------------------------------


def test_check_arguments_reports_each_argument_with_its_value():
    predicates = {"q": parse_predicate("shoes"), "limit": parse_predicate({"<=": 10})}
    checks = {c.argument: c for c in check_arguments(predicates, {"q": "shoes", "limit": 50})}
    assert checks["q"].passed
    assert not checks["limit"].passed and checks["limit"].actual == 50


def test_check_arguments_reports_a_missing_argument_with_no_value():
    [only] = check_arguments({"q": parse_predicate("shoes")}, {})
    assert not only.passed and only.reason == "missing" and only.actual is None


def test_check_arguments_treats_non_dict_arguments_as_none():
    [only] = check_arguments({"q": parse_predicate("shoes")}, "q=shoes")
    assert not only.passed


def test_extra_arguments_are_allowed_by_default():
    assert all(
        c.passed for c in check_arguments({"q": parse_predicate("x")}, {"q": "x", "page": 2})
    )


def test_extra_arguments_fail_when_not_allowed():
    checks = check_arguments({"q": parse_predicate("x")}, {"q": "x", "page": 2}, allow_extra=False)
    extra = [c for c in checks if c.argument == "page"]
    assert extra and not extra[0].passed and extra[0].reason == "unexpected argument"
