"""Completeness: expected fields mentioned in the final answer, via aliases on word boundaries."""

from __future__ import annotations

from tests.support.traces import gap, make_case, make_dataset, make_trace, tool
from tracegrade.scoring import config_for
from tracegrade.scoring.completeness import Completeness, field_phrases
from tracegrade.scoring.registry import builtins


def completeness(answer, fields, aliases):
    return Completeness(aliases)(make_trace(final_output=answer), make_case(expected_fields=fields))


def test_every_expected_field_mentioned_scores_one(config):
    answer = "Order number 550e8400 (status: shipped) totals $120.50, placed on 2024-05-02."
    assert (
        completeness(
            answer, ["order_id", "status", "total", "created_at"], config.field_aliases
        ).value
        == 1.0
    )


def test_fraction_of_fields_found(config):
    score = completeness(
        "Your order has shipped.", ["status", "tracking_number"], config.field_aliases
    )
    assert score.value == 0.5
    assert list(score.details["found"]) == ["status"] and score.details["missing"] == [
        "tracking_number"
    ]


def test_missing_fields_are_named_in_the_reason(config):
    assert (
        "tracking_number"
        in completeness("It shipped.", ["status", "tracking_number"], config.field_aliases).reason
    )


def test_profit_margin_never_counts_as_price(config):
    assert (
        completeness(
            "The profit margin on this model is high.", ["price"], config.field_aliases
        ).value
        == 0.0
    )


def test_priced_does_not_count_as_the_word_price():
    assert (
        completeness("It is competitively priced.", ["price"], {"price": ("price",)}).value == 0.0
    )


def test_dollar_alias_matches_a_dollar_amount(config):
    assert completeness("Only $199 this week.", ["price"], config.field_aliases).value == 1.0


def test_field_name_with_underscores_matches_as_words():
    assert completeness("Your tracking number is 1Z999.", ["tracking_number"], {}).value == 1.0


def test_field_name_matches_itself_without_any_alias():
    assert completeness("The brand is Sony.", ["brand"], {}).value == 1.0


def test_alias_matches_case_insensitively(config):
    assert completeness("DELIVERED yesterday.", ["status"], config.field_aliases).value == 1.0


def test_alias_does_not_match_inside_a_longer_word(config):
    # "stars" is an alias of rating; "starship" must not count.
    assert completeness("Meet the Starship speaker.", ["rating"], config.field_aliases).value == 0.0


def test_order_hash_alias_matches_an_order_number(config):
    # config/aliases.yaml lists 'order "#"' as an alias of order_id, i.e. the phrase "order #".
    score = completeness("Order #A1001 is on its way.", ["order_id"], config.field_aliases)
    assert score.value == 1.0


def test_field_phrases_are_own_name_spaced_name_and_aliases_without_duplicates():
    assert field_phrases("order_id", {"order_id": ("order id", "order number")}) == [
        "order_id",
        "order id",
        "order number",
    ]


def test_dataset_field_aliases_override_the_config(config):
    dataset = make_dataset(make_case(expected_fields=["price"]), field_aliases={"price": ["fee"]})
    aliases = config_for(config, dataset).field_aliases
    assert aliases["price"] == ("fee",)
    assert completeness("The fee is 20 euros.", ["price"], aliases).value == 1.0
    assert completeness("Only $199.", ["price"], aliases).value == 0.0


def test_dataset_field_aliases_add_new_fields_and_keep_the_others(config):
    dataset = make_dataset(make_case(), field_aliases={"warranty": ["guarantee"]})
    aliases = config_for(config, dataset).field_aliases
    assert (
        aliases["warranty"] == ("guarantee",)
        and aliases["status"] == config.field_aliases["status"]
    )


def test_config_for_without_dataset_aliases_is_the_config(config):
    assert config_for(config, make_dataset(make_case())) is config


def test_registered_completeness_uses_the_config_aliases(config):
    [scorer] = builtins(config, ["completeness"])
    trace = make_trace(final_output="Only $199.")
    assert scorer(trace, make_case(expected_fields=["price"])).value == 1.0


def test_no_final_answer_scores_zero():
    score = Completeness({})(make_trace(final_output=None), make_case(expected_fields=["status"]))
    assert score.value == 0.0 and score.details["missing"] == ["status"]


def test_no_final_answer_because_content_is_not_captured_is_skipped():
    trace = make_trace(final_output=None, gaps=[gap("final_output", "content capture is off")])
    score = Completeness({})(trace, make_case(expected_fields=["status"]))
    assert score.value is None and score.reason == "content capture is off"


def test_case_without_expected_fields_is_skipped():
    assert Completeness({})(make_trace(), make_case()).value is None


def test_no_case_is_skipped():
    assert Completeness({})(make_trace(), None).value is None


# --- fields stated by value ---------------------------------------------------------------------


def by_value(answer, fields, results):
    trace = make_trace(final_output=answer, tool_calls=[tool("lookup", result=r) for r in results])
    return Completeness({})(trace, make_case(expected_fields=fields))


def test_numeric_field_is_present_when_its_tool_value_is_stated():
    assert (
        by_value("Those are $279.99.", ["price"], ['{"name": "Aria", "price": 279.99}']).value
        == 1.0
    )


def test_string_field_is_present_when_its_tool_value_is_stated():
    assert (
        by_value(
            "You will get the Sony WH-1000XM5.", ["name"], ['[{"name": "Sony WH-1000XM5"}]']
        ).value
        == 1.0
    )


def test_field_whose_tool_value_is_not_stated_is_missing():
    assert by_value("Those are $199.", ["price"], ['{"price": 279.99}']).value == 0.0


def test_details_say_how_a_field_was_found():
    score = by_value("Status: shipped, $279.99.", ["status", "price"], ['{"price": 279.99}'])
    assert set(score.details["found"]) == {"status", "price"}
