"""Extraction of concrete values and their canonical forms (scoring.values)."""

from __future__ import annotations

from tracegrade.scoring.values import EvidenceValues, extract


def kinds(text):
    return [(v.kind, v.canonical) for v in extract(text)]


def supported(answer, *evidence):
    ev = EvidenceValues.of(list(evidence))
    return [ev.supports(v) for v in extract(answer)]


# --- extraction ----------------------------------------------------------------------------------


def test_price_with_separator_and_cents_is_canonicalised():
    assert kinds("It costs $1,250.00.") == [("price", "1250")]


def test_price_in_euros_is_a_price():
    assert kinds("Only €49.90 today") == [("price", "49.9")]


def test_percentage_is_extracted():
    assert kinds("a 15% discount") == [("percent", "15")]


def test_multi_digit_number_is_extracted():
    assert kinds("You have 42 orders") == [("number", "42")]


def test_single_digit_number_is_not_extracted():
    assert extract("You have 3 orders") == []


def test_single_digit_decimal_is_extracted():
    assert kinds("rated 4.5 stars") == [("number", "4.5")]


def test_list_markers_are_not_extracted():
    assert kinds("1. Headphones\n2. Speakers\n10. Cables costing 25") == [("number", "25")]


def test_bulleted_numbered_list_marker_is_not_extracted():
    assert extract("- 11) first\n- 12) second") == []


def test_month_name_date_with_year_is_iso():
    assert kinds("Delivered on May 20, 2024.") == [("date", "2024-05-20")]


def test_day_month_date_is_iso():
    assert kinds("arrives 3rd of June 2025") == [("date", "2025-06-03")]


def test_iso_date_is_extracted_and_its_parts_are_not_numbers():
    assert kinds("placed 2024-05-20") == [("date", "2024-05-20")]


def test_date_without_year_has_a_yearless_canonical_form():
    assert kinds("arrives Jan 5") == [("date", "--01-05")]


def test_twelve_hour_time_is_canonicalised_to_24h():
    assert kinds("departs at 07:00 PM") == [("time", "19:00")]


def test_midnight_am_time_is_hour_zero():
    assert kinds("at 12:30 am") == [("time", "00:30")]


def test_uuid_is_an_id():
    uid = "550e8400-e29b-41d4-a716-446655440001"
    assert kinds(f"order {uid} shipped") == [("id", uid)]


def test_alphanumeric_code_is_an_id():
    assert kinds("Your reservation ZFA04Y is confirmed") == [("id", "zfa04y")]


def test_plain_words_are_not_values():
    assert extract("Your order has shipped and will arrive soon.") == []


def test_values_come_back_left_to_right():
    assert [v.kind for v in extract("On May 20, 2024 order ORD-1234 cost $99.50")] == [
        "date",
        "id",
        "price",
    ]


def test_number_before_a_word_starting_with_a_month_abbreviation_is_not_a_date():
    assert kinds("We found 12 separate orders") == [("number", "12")]


# --- evidence -----------------------------------------------------------------------------------


def test_price_is_supported_by_a_bare_number_in_a_tool_result():
    assert supported("Total: $1,250.00", '{"total": 1250}') == [True]


def test_price_is_supported_by_a_float_in_json():
    assert supported("It is $19.99", '{"price": 19.990}') == [True]


def test_month_name_date_is_supported_by_an_iso_date():
    assert supported("It arrives May 20, 2024.", '{"eta": "2024-05-20"}') == [True]


def test_yearless_date_is_supported_by_an_iso_date():
    assert supported("It arrives May 20.", '{"eta": "2024-05-20T10:00:00Z"}') == [True]


def test_twelve_hour_time_is_supported_by_a_24h_timestamp():
    assert supported("Departure at 07:00 PM", '{"departs": "2024-05-20T19:00:00"}') == [True]


def test_id_is_supported_case_insensitively():
    assert supported("Order ORD-1234 shipped", '{"order_id": "ord-1234"}') == [True]


def test_id_is_not_supported_by_a_longer_id_containing_it():
    assert supported("Order ORD-1234 shipped", '{"order_id": "ORD-12345"}') == [False]


def test_invented_price_is_not_supported():
    assert supported("It costs $1,299.00", '{"price": 1250.0}') == [False]


def test_wrong_date_is_not_supported():
    assert supported("It arrives May 21, 2024", '{"eta": "2024-05-20"}') == [False]
