"""The shop's tools: product discovery and order management over the seeded SQLite database.

Tool names and arguments follow the design documents' tool guide (nitin27may/e-commerce-agents,
``prompts/_shared/tool-examples.yaml``), so their golden cases apply unchanged:
``search_products``, ``semantic_search``, ``get_product_details``, ``compare_products``,
``get_trending_products``, ``check_stock``, ``get_price_history``, ``validate_coupon``,
``get_user_orders``, ``get_order_details``, ``get_order_tracking``, ``cancel_order``,
``check_return_eligibility``, ``initiate_return``.

Each tool's arguments are a pydantic model: its JSON Schema is the ``parameters`` the model
sees (:data:`TOOL_DEFINITIONS`), and validating against it turns bad arguments into a clear
:class:`ToolError`. A tool returns JSON-serialisable data; a request the shop refuses (cancel
a shipped order) is a normal result with ``success: false``, while a tool that cannot run
(unknown product or order, bad arguments) raises :class:`ToolError`. Prices are USD.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from examples.ecommerce.seed import RETURN_WINDOW_DAYS, SHOP_DATE


class ToolError(Exception):
    """A tool call that cannot run: unknown tool, invalid arguments, unknown id."""


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")


_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "for",
        "i",
        "in",
        "me",
        "my",
        "of",
        "on",
        "or",
        "some",
        "something",
        "the",
        "to",
        "under",
        "with",
        "maybe",
    ]
)
_WORD = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")


def _stems(text: str) -> set[str]:
    """Lower-case words without a plural ``s`` (``shoes`` -> ``shoe``), stopwords dropped."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") else w for w in _WORD.findall(text.lower())
    } - _STOPWORDS


def _text(row: sqlite3.Row) -> set[str]:
    return _stems(
        " ".join([row["name"], row["brand"], row["category"], row["description"], row["tags"]])
    )


def _listing(row: sqlite3.Row) -> dict[str, Any]:
    return {
        "id": row["id"],
        "name": row["name"],
        "brand": row["brand"],
        "category": row["category"],
        "price": row["price"],
        "rating": row["rating"],
        "on_sale": row["original_price"] > row["price"],
    }


def _product(db: sqlite3.Connection, product_id: str) -> sqlite3.Row:
    row = db.execute("SELECT * FROM products WHERE id = ?", (product_id,)).fetchone()
    if row is None:
        raise ToolError(f"no product with id {product_id!r}")
    return row


# --- product discovery ------------------------------------------------------------------------


class SearchProducts(_Args):
    """Search the catalogue by keywords (every keyword must match) with optional filters."""

    query: str = Field(description="keywords, e.g. 'wireless headphones'")
    category: str | None = Field(None, description="Electronics, Clothing, Home, Sports or Books")
    min_price: float | None = Field(None, ge=0, description="USD")
    max_price: float | None = Field(None, ge=0, description="USD")
    min_rating: float | None = Field(None, ge=1, le=5)
    sort_by: Literal["relevance", "price_asc", "price_desc", "rating"] = "relevance"
    limit: int = Field(5, ge=1, le=20)


def search_products(db: sqlite3.Connection, a: SearchProducts) -> list[dict[str, Any]]:
    words = _stems(a.query)
    rows = [
        r
        for r in db.execute("SELECT * FROM products ORDER BY units_sold_30d DESC")
        if words <= _text(r)
        and (a.category is None or r["category"].lower() == a.category.lower())
        and (a.min_price is None or r["price"] >= a.min_price)
        and (a.max_price is None or r["price"] <= a.max_price)
        and (a.min_rating is None or r["rating"] >= a.min_rating)
    ]
    keys: dict[str, Callable[[sqlite3.Row], Any]] = {
        "price_asc": lambda r: r["price"],
        "price_desc": lambda r: -r["price"],
        "rating": lambda r: -r["rating"],
    }
    if a.sort_by in keys:
        rows.sort(key=keys[a.sort_by])
    return [_listing(r) for r in rows[: a.limit]]


class SemanticSearch(_Args):
    """Search for vague or descriptive requests ('something cozy for winter'): ranks products by
    how many of the query's words their description and tags share."""

    query: str
    limit: int = Field(5, ge=1, le=20)


def semantic_search(db: sqlite3.Connection, a: SemanticSearch) -> list[dict[str, Any]]:
    words = _stems(a.query)
    if not words:
        raise ToolError("the query has no searchable words")
    scored = [
        (len(words & _text(r)) / len(words), r)
        for r in db.execute("SELECT * FROM products ORDER BY units_sold_30d DESC")
    ]
    ranked = sorted((s for s in scored if s[0] > 0), key=lambda s: -s[0])[: a.limit]
    return [{**_listing(r), "similarity": round(score, 2)} for score, r in ranked]


class ProductId(_Args):
    product_id: str


def get_product_details(db: sqlite3.Connection, a: ProductId) -> dict[str, Any]:
    """Full product information with specs."""
    row = _product(db, a.product_id)
    return {
        **_listing(row),
        "description": row["description"],
        "original_price": row["original_price"],
        "review_count": row["review_count"],
        "specs": json.loads(row["specs"]),
    }


class CompareProducts(_Args):
    """Side-by-side comparison of 2-3 products."""

    product_ids: list[str] = Field(min_length=2, max_length=3)


def compare_products(db: sqlite3.Connection, a: CompareProducts) -> list[dict[str, Any]]:
    return [
        {**_listing(row), "review_count": row["review_count"], "specs": json.loads(row["specs"])}
        for row in (_product(db, p) for p in a.product_ids)
    ]


class TrendingProducts(_Args):
    """Products with the most units sold in the last 30 days."""

    category: str | None = None
    limit: int = Field(5, ge=1, le=20)


def get_trending_products(db: sqlite3.Connection, a: TrendingProducts) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT * FROM products WHERE ? IS NULL OR lower(category) = lower(?) "
        "ORDER BY units_sold_30d DESC LIMIT ?",
        (a.category, a.category, a.limit),
    )
    return [{**_listing(r), "units_sold_30d": r["units_sold_30d"]} for r in rows]


def check_stock(db: sqlite3.Connection, a: ProductId) -> dict[str, Any]:
    """Stock levels across the warehouses, and upcoming restocks."""
    row = _product(db, a.product_id)
    stock = [
        {"warehouse": w, "quantity": q}
        for w, q in db.execute(
            "SELECT w.name, i.quantity FROM inventory i JOIN warehouses w ON w.id = i.warehouse_id "
            "WHERE i.product_id = ? ORDER BY w.rowid",
            (a.product_id,),
        )
    ]
    total = sum(s["quantity"] for s in stock)
    result = {
        "product_id": row["id"],
        "name": row["name"],
        "in_stock": total > 0,
        "total_quantity": total,
        "warehouses": stock,
    }
    restocks = [
        {"warehouse": w, "expected_quantity": q, "expected_date": d}
        for w, q, d in db.execute(
            "SELECT w.name, r.expected_quantity, r.expected_date FROM restocks r JOIN warehouses w "
            "ON w.id = r.warehouse_id WHERE r.product_id = ? ORDER BY r.expected_date",
            (a.product_id,),
        )
    ]
    return {**result, "upcoming_restocks": restocks} if restocks else result


def get_price_history(db: sqlite3.Connection, a: ProductId) -> dict[str, Any]:
    """The current price against the last 90 days."""
    row = _product(db, a.product_id)
    current, average, low = row["price"], row["avg_price_90d"], row["min_price_90d"]
    trend = "decreasing" if current < average else "increasing" if current > average else "stable"
    return {
        "product_id": row["id"],
        "name": row["name"],
        "current_price": current,
        "average_price_90d": average,
        "min_price_90d": low,
        "trend": trend,
        "is_good_deal": current <= low,
    }


class ValidateCoupon(_Args):
    """Check a coupon code and, given a cart total, compute the discount."""

    code: str
    cart_total: float | None = Field(None, ge=0, description="USD")
    category: str | None = None


def validate_coupon(db: sqlite3.Connection, a: ValidateCoupon) -> dict[str, Any]:
    row = db.execute("SELECT * FROM coupons WHERE code = ?", (a.code.upper(),)).fetchone()
    if row is None:
        return {"code": a.code, "valid": False, "reason": "unknown coupon code"}
    refusal = (
        f"expired on {row['valid_until']}"
        if row["valid_until"] < SHOP_DATE
        else f"needs a cart total of at least ${row['min_spend']:.2f}"
        if a.cart_total is not None and a.cart_total < row["min_spend"]
        else f"only applies to {row['category']}"
        if row["category"] and a.category and a.category.lower() != row["category"].lower()
        else None
    )
    if refusal:
        return {"code": row["code"], "valid": False, "reason": refusal}
    result = {
        "code": row["code"],
        "valid": True,
        "description": row["description"],
        "valid_until": row["valid_until"],
    }
    if a.cart_total is not None:
        discount = round(a.cart_total * row["percent_off"] / 100, 2)
        discount = min(discount, row["max_discount"]) if row["max_discount"] else discount
        result.update(
            discount_amount=discount, total_after_discount=round(a.cart_total - discount, 2)
        )
    return result


# --- order management -------------------------------------------------------------------------


class UserOrders(_Args):
    """The logged-in customer's orders, newest first."""

    status: (
        Literal[
            "placed",
            "confirmed",
            "shipped",
            "out_for_delivery",
            "delivered",
            "cancelled",
            "returned",
        ]
        | None
    ) = None
    limit: int = Field(10, ge=1, le=50)


def _total(db: sqlite3.Connection, order_id: str) -> float:
    return round(
        db.execute(
            "SELECT sum(quantity * unit_price) FROM order_items WHERE order_id = ?", (order_id,)
        ).fetchone()[0],
        2,
    )


def get_user_orders(db: sqlite3.Connection, a: UserOrders) -> list[dict[str, Any]]:
    rows = db.execute(
        "SELECT o.id, o.status, o.created_at, sum(i.quantity) AS item_count FROM orders o "
        "JOIN order_items i ON i.order_id = o.id WHERE ? IS NULL OR o.status = ? "
        "GROUP BY o.id ORDER BY o.created_at DESC LIMIT ?",
        (a.status, a.status, a.limit),
    )
    return [
        {
            "order_id": r["id"],
            "status": r["status"],
            "total": _total(db, r["id"]),
            "item_count": r["item_count"],
            "created_at": r["created_at"],
        }
        for r in rows
    ]


class OrderId(_Args):
    order_id: str


def _order(db: sqlite3.Connection, order_id: str) -> sqlite3.Row:
    row = db.execute("SELECT * FROM orders WHERE id = ?", (order_id.strip().lower(),)).fetchone()
    if row is None:
        raise ToolError(f"no order with id {order_id!r} for this customer")
    return row


def get_order_details(db: sqlite3.Connection, a: OrderId) -> dict[str, Any]:
    """Items, total, status and shipping of one order."""
    row = _order(db, a.order_id)
    items = [
        {"name": n, "quantity": q, "unit_price": p}
        for n, q, p in db.execute(
            "SELECT p.name, i.quantity, i.unit_price FROM order_items i"
            " JOIN products p ON p.id = i.product_id WHERE i.order_id = ?",
            (row["id"],),
        )
    ]
    return {
        "order_id": row["id"],
        "status": row["status"],
        "created_at": row["created_at"],
        "total": _total(db, row["id"]),
        "items": items,
        "shipping_address": row["shipping_address"],
        "carrier": row["carrier"],
        "tracking_number": row["tracking_number"],
        "delivered_at": row["delivered_at"],
    }


def get_order_tracking(db: sqlite3.Connection, a: OrderId) -> dict[str, Any]:
    """The shipment's carrier, tracking number and status timeline."""
    row = _order(db, a.order_id)
    timeline = [
        {"status": s, "location": loc, "timestamp": t}
        for s, loc, t in db.execute(
            "SELECT status, location, timestamp FROM order_status_history WHERE order_id = ?"
            " ORDER BY timestamp",
            (row["id"],),
        )
    ]
    return {
        "order_id": row["id"],
        "status": row["status"],
        "carrier": row["carrier"],
        "tracking_number": row["tracking_number"],
        "last_location": timeline[-1]["location"],
        "timeline": timeline,
    }


class CancelOrder(_Args):
    """Cancel an order that has not shipped (status placed or confirmed)."""

    order_id: str
    reason: str


def cancel_order(db: sqlite3.Connection, a: CancelOrder) -> dict[str, Any]:
    row = _order(db, a.order_id)
    if row["status"] not in ("placed", "confirmed"):
        return {
            "order_id": row["id"],
            "success": False,
            "status": row["status"],
            "reason": f"cannot cancel: the order is already {row['status']}",
        }
    db.execute("UPDATE orders SET status = 'cancelled' WHERE id = ?", (row["id"],))
    return {
        "order_id": row["id"],
        "success": True,
        "new_status": "cancelled",
        "refund_amount": _total(db, row["id"]),
        "refund_method": "original_payment",
        "refund_timeline": "5-7 business days",
    }


def _eligibility(row: sqlite3.Row) -> dict[str, Any]:
    if row["status"] != "delivered":
        return {
            "order_id": row["id"],
            "return_eligible": False,
            "reason": f"the order is {row['status']}, not delivered",
        }
    deadline = date.fromisoformat(row["delivered_at"]) + timedelta(days=RETURN_WINDOW_DAYS)
    remaining = (deadline - date.fromisoformat(SHOP_DATE)).days
    if remaining < 0:
        return {
            "order_id": row["id"],
            "return_eligible": False,
            "delivered_at": row["delivered_at"],
            "reason": f"the {RETURN_WINDOW_DAYS}-day return window ended on {deadline.isoformat()}",
        }
    return {
        "order_id": row["id"],
        "return_eligible": True,
        "delivered_at": row["delivered_at"],
        "return_window_days": RETURN_WINDOW_DAYS,
        "days_remaining": remaining,
    }


def check_return_eligibility(db: sqlite3.Connection, a: OrderId) -> dict[str, Any]:
    """Whether a delivered order is still within the 30-day return window."""
    return _eligibility(_order(db, a.order_id))


class InitiateReturn(_Args):
    """Start a return for an eligible order; creates the return label."""

    order_id: str
    reason: str
    refund_method: Literal["original_payment", "store_credit"] = "original_payment"


def initiate_return(db: sqlite3.Connection, a: InitiateReturn) -> dict[str, Any]:
    row = _order(db, a.order_id)
    eligibility = _eligibility(row)
    if not eligibility["return_eligible"]:
        return {"order_id": row["id"], "success": False, "reason": eligibility["reason"]}
    return_id = f"RET-{SHOP_DATE.replace('-', '')}-{row['id'][-4:]}"
    timeline = "instant" if a.refund_method == "store_credit" else "5-7 business days"
    return {
        "order_id": row["id"],
        "success": True,
        "return_id": return_id,
        "status": "requested",
        "refund_amount": _total(db, row["id"]),
        "refund_method": a.refund_method,
        "refund_timeline": timeline,
        "return_label_url": f"https://shop.example.com/returns/{return_id}/label.pdf",
    }


# --- registry ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tool:
    """One tool: its argument model, implementation and description."""

    name: str
    arguments: type[_Args]
    run: Callable[[sqlite3.Connection, Any], Any]
    description: str

    def definition(self) -> dict[str, Any]:
        """The Chat Completions ``tools`` entry."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.arguments.model_json_schema(),
            },
        }


def _tool(run: Callable[[sqlite3.Connection, Any], Any], arguments: type[_Args]) -> Tool:
    doc = run.__doc__ if run.__doc__ else arguments.__doc__
    return Tool(run.__name__, arguments, run, " ".join((doc or run.__name__).split()))


TOOLS: dict[str, Tool] = {
    t.name: t
    for t in (
        _tool(search_products, SearchProducts),
        _tool(semantic_search, SemanticSearch),
        _tool(get_product_details, ProductId),
        _tool(compare_products, CompareProducts),
        _tool(get_trending_products, TrendingProducts),
        _tool(check_stock, ProductId),
        _tool(get_price_history, ProductId),
        _tool(validate_coupon, ValidateCoupon),
        _tool(get_user_orders, UserOrders),
        _tool(get_order_details, OrderId),
        _tool(get_order_tracking, OrderId),
        _tool(cancel_order, CancelOrder),
        _tool(check_return_eligibility, OrderId),
        _tool(initiate_return, InitiateReturn),
    )
}
TOOL_DEFINITIONS = [t.definition() for t in TOOLS.values()]


def call_tool(db: sqlite3.Connection, name: str, arguments: str | dict[str, Any]) -> Any:
    """Run tool ``name`` with ``arguments`` (a JSON object, or its text as the model sent it).

    Raises:
        ToolError: unknown tool, arguments that are not a JSON object or fail validation
            (the message names the argument), or an unknown product/order id.
    """
    tool = TOOLS.get(name)
    if tool is None:
        raise ToolError(f"unknown tool {name!r}; tools: {', '.join(TOOLS)}")
    try:
        raw = json.loads(arguments or "{}") if isinstance(arguments, str) else arguments
    except json.JSONDecodeError as exc:
        raise ToolError(f"{name}: arguments are not valid JSON: {exc}") from exc
    if not isinstance(raw, dict):
        raise ToolError(f"{name}: arguments must be a JSON object, got {type(raw).__name__}")
    try:
        parsed = tool.arguments.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(arguments)"
        raise ToolError(f"{name}: argument {where!r}: {first['msg']}") from exc
    return tool.run(db, parsed)
