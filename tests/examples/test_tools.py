"""The example shop's tools and seeded database (no model, no spans)."""

from __future__ import annotations

import json

import pytest

from examples.ecommerce import seed
from examples.ecommerce.tools import TOOL_DEFINITIONS, TOOLS, ToolError, call_tool
from tests.examples.conftest import REPO
from tracegrade.dataset import load_dataset

ORDER = "550e8400-e29b-41d4-a716-44665544000"


@pytest.fixture
def db():
    connection = seed.connect()
    yield connection
    connection.close()


def test_every_tool_the_design_documents_expect_exists():
    expected = {
        name
        for stem in ("product_discovery", "order_management")
        for case in load_dataset(REPO / "datasets" / "e-commerce-agents" / f"{stem}.json").cases
        for name in case.expected_tools
    }
    assert expected <= set(TOOLS)
    assert [d["function"]["name"] for d in TOOL_DEFINITIONS] == list(TOOLS)
    assert all(
        d["function"]["parameters"]["type"] == "object" and d["function"]["description"]
        for d in TOOL_DEFINITIONS
    )


def test_each_connection_is_a_fresh_copy_of_the_same_data(db):
    call_tool(db, "cancel_order", {"order_id": ORDER + "3", "reason": "test"})
    other = seed.connect()
    assert call_tool(other, "get_order_details", {"order_id": ORDER + "3"})["status"] == "placed"
    assert call_tool(db, "get_order_details", {"order_id": ORDER + "3"})["status"] == "cancelled"


def test_search_requires_every_keyword_and_applies_filters(db):
    found = call_tool(
        db,
        "search_products",
        {"query": "wireless headphones", "max_price": 300, "sort_by": "price_asc"},
    )
    assert [(p["name"], p["price"]) for p in found] == [
        ("JBL Tune 520BT", 49.95),
        ("Anker Soundcore Space Q45", 149.99),
        ("Sony WH-1000XM5", 279.99),
    ]
    assert call_tool(db, "search_products", {"query": "headphones", "category": "books"}) == []
    assert {
        p["id"] for p in call_tool(db, "search_products", {"query": "Bose QuietComfort Ultra"})
    } == {"bose-qcu"}


def test_semantic_search_ranks_by_shared_words(db):
    found = call_tool(
        db, "semantic_search", {"query": "something cozy for winter, maybe a blanket"}
    )
    assert found[0]["name"] == "Sherpa Fleece Throw Blanket" and found[0]["similarity"] == 1.0
    assert all(0 < p["similarity"] <= 1 for p in found)


def test_out_of_stock_product_lists_restocks(db):
    stock = call_tool(db, "check_stock", {"product_id": "bose-qcu"})
    assert (stock["in_stock"], stock["total_quantity"]) == (False, 0)
    assert stock["upcoming_restocks"][0] == {
        "warehouse": "East (Richmond VA)",
        "expected_quantity": 40,
        "expected_date": "2026-12-05",
    }


def test_cancel_refuses_a_shipped_order(db):
    result = call_tool(db, "cancel_order", {"order_id": ORDER + "2", "reason": "changed my mind"})
    assert result == {
        "order_id": ORDER + "2",
        "success": False,
        "status": "shipped",
        "reason": "cannot cancel: the order is already shipped",
    }


def test_return_window_is_thirty_days_from_delivery(db):
    assert (
        call_tool(db, "check_return_eligibility", {"order_id": ORDER + "4"})["days_remaining"] == 18
    )
    closed = call_tool(db, "initiate_return", {"order_id": ORDER + "5", "reason": "too thin"})
    assert closed == {
        "order_id": ORDER + "5",
        "success": False,
        "reason": "the 30-day return window ended on 2026-10-10",
    }


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"code": "techsave", "cart_total": 279.99}, {"valid": True, "discount_amount": 42.0}),
        (
            {"code": "TECHSAVE", "cart_total": 900},
            {"valid": True, "discount_amount": 75.0},
        ),  # capped
        (
            {"code": "TECHSAVE", "cart_total": 50},
            {"valid": False, "reason": "needs a cart total of at least $100.00"},
        ),
        ({"code": "FALL5"}, {"valid": False, "reason": "expired on 2026-10-31"}),
        ({"code": "NOPE"}, {"valid": False, "reason": "unknown coupon code"}),
    ],
)
def test_coupons(db, arguments, expected):
    result = call_tool(db, "validate_coupon", arguments)
    assert {k: result[k] for k in expected} == expected


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("delete_account", {}, "unknown tool 'delete_account'; tools: search_products, "),
        ("search_products", "{not json", "search_products: arguments are not valid JSON"),
        ("search_products", "[1]", "search_products: arguments must be a JSON object, got list"),
        (
            "search_products",
            {"query": "x", "max_price": "cheap"},
            "search_products: argument 'max_price': ",
        ),
        (
            "search_products",
            {"query": "x", "colour": "red"},
            "search_products: argument 'colour': Extra inputs",
        ),
        (
            "compare_products",
            {"product_ids": ["abc-123"]},
            "compare_products: argument 'product_ids': ",
        ),
        ("get_product_details", {"product_id": "zzz"}, "no product with id 'zzz'"),
        ("get_order_tracking", {"order_id": "123"}, "no order with id '123' for this customer"),
    ],
)
def test_bad_calls_raise_tool_errors_naming_the_problem(db, name, arguments, error):
    with pytest.raises(ToolError) as raised:
        call_tool(db, name, arguments)
    assert str(raised.value).startswith(error)


def test_results_are_json(db):
    result = call_tool(db, "get_order_details", json.dumps({"order_id": ORDER + "1"}))
    assert json.loads(json.dumps(result))["items"] == [
        {"name": "Kindle Paperwhite", "quantity": 1, "unit_price": 159.99},
        {"name": "Smartwool Merino Beanie", "quantity": 1, "unit_price": 32.0},
    ]
    assert result["total"] == 191.99
