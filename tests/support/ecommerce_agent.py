"""A scripted e-commerce agent instrumented with the real OpenTelemetry SDK (GenAI semconv).

It answers the questions of the design documents' golden datasets
(datasets/e-commerce-agents): each question has a plan of tool calls against a small
in-memory shop, and the answer is written from the tool results. ``behaviour`` injects the
regressions the datasets exist to catch: no tool call, a wrong tool, an invented price, a
missing field. Spans go through a real ``TracerProvider`` and ``InMemorySpanExporter`` and are
encoded with the OTLP exporter's own encoder, as an instrumented agent's would be.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode

ORDERS = {
    "550e8400-e29b-41d4-a716-446655440001": {
        "status": "shipped",
        "total": 149.99,
        "created_at": "2026-10-02",
        "items": [{"name": "USB-C Hub", "qty": 1}],
    },
    "550e8400-e29b-41d4-a716-446655440002": {
        "status": "in transit",
        "total": 59.0,
        "created_at": "2026-10-11",
        "items": [{"name": "Desk Lamp", "qty": 2}],
        "tracking_number": "1Z999AA10123456784",
    },
    "550e8400-e29b-41d4-a716-446655440003": {
        "status": "processing",
        "total": 89.5,
        "created_at": "2026-11-01",
        "items": [{"name": "Mouse", "qty": 1}],
    },
    "550e8400-e29b-41d4-a716-446655440004": {
        "status": "delivered",
        "total": 1299.0,
        "created_at": "2026-10-20",
        "items": [{"name": "Laptop", "qty": 1}],
    },
}
PRODUCTS = {
    "abc-123": {
        "name": "Sony WH-1000XM5",
        "price": 279.99,
        "rating": 4.7,
        "category": "electronics",
        "description": "Wireless noise-cancelling headphones",
        "specs": {"battery": "30 h", "weight": "250 g"},
    },
    "def-456": {
        "name": "Bose QuietComfort Ultra",
        "price": 299.0,
        "rating": 4.6,
        "category": "electronics",
        "description": "Wireless headphones with spatial audio",
        "specs": {"battery": "24 h"},
    },
    "ghi-789": {
        "name": "Sherpa Fleece Blanket",
        "price": 39.95,
        "rating": 4.8,
        "category": "home",
        "description": "Warm blanket",
        "specs": {"size": "150x200 cm"},
    },
}


def _order(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, **ORDERS[order_id]}


def _product(product_id: str) -> dict[str, Any]:
    return {"product_id": product_id, **PRODUCTS[product_id]}


TOOLS: dict[str, Callable[..., Any]] = {
    "get_user_orders": lambda: [_order(o) for o in list(ORDERS)[:2]],
    "get_order_details": _order,
    "get_order_tracking": lambda order_id: {
        "order_id": order_id,
        "status": ORDERS[order_id]["status"],
        "tracking_number": ORDERS[order_id]["tracking_number"],
    },
    "cancel_order": lambda order_id, reason: {
        "order_id": order_id,
        "new_status": "cancelled",
        "refund_amount": ORDERS[order_id]["total"],
    },
    "check_return_eligibility": lambda order_id: {
        "order_id": order_id,
        "return_eligible": True,
        "window_days": 30,
    },
    "initiate_return": lambda order_id, reason: {
        "order_id": order_id,
        "return_id": "RET-7781",
        "status": "initiated",
    },
    "search_products": lambda query, max_price=None: [
        _product(p)
        for p in ("abc-123", "def-456")
        if max_price is None or PRODUCTS[p]["price"] <= max_price
    ],
    "get_product_details": _product,
    "compare_products": lambda product_ids: [_product(p) for p in product_ids],
    "semantic_search": lambda query: [_product("ghi-789")],
    "get_trending_products": lambda category: [_product("abc-123"), _product("def-456")],
}


def _answer_orders(results: list[Any]) -> str:
    result = results[-1]
    orders = result if isinstance(result, list) else [result]
    lines = []
    for o in orders:
        parts = [f"Order ID {o['order_id']}"]
        for key, label in (
            ("status", "status"),
            ("new_status", "new status"),
            ("total", "total"),
            ("refund_amount", "refund amount"),
            ("created_at", "created"),
            ("tracking_number", "tracking number"),
        ):
            if key in o:
                value = f"${o[key]:.2f}" if key in ("total", "refund_amount") else o[key]
                parts.append(f"{label}: {value}")
        if "items" in o:
            parts.append("items: " + ", ".join(f"{i['qty']} x {i['name']}" for i in o["items"]))
        lines.append("; ".join(parts))
    if len(results) == 2 and results[0].get("return_eligible"):
        lines.insert(
            0,
            f"Order ID {results[0]['order_id']} is eligible for return (return window "
            f"{results[0]['window_days']} days).",
        )
    return "\n".join(lines)


def _answer_products(results: list[Any]) -> str:
    result = results[-1]
    products = result if isinstance(result, list) else [result]
    lines = []
    for p in products:
        line = (
            f"{p['name']} — price ${p['price']:.2f}, rating {p['rating']}/5, "
            f"category {p['category']}"
        )
        if len(products) == 1:
            specs = ", ".join(f"{k} {v}" for k, v in p["specs"].items())
            line += f". Description: {p['description']}. Specs: {specs}"
        lines.append(line)
    return "\n".join(lines)


PLANS: dict[str, tuple[list[tuple[str, dict[str, Any]]], Callable[[list[Any]], str]]] = {
    "Show me my recent orders": ([("get_user_orders", {})], _answer_orders),
    "What is the status of order 550e8400-e29b-41d4-a716-446655440001?": (
        [("get_order_details", {"order_id": "550e8400-e29b-41d4-a716-446655440001"})],
        _answer_orders,
    ),
    "Where is my package for order 550e8400-e29b-41d4-a716-446655440002? I want tracking info.": (
        [("get_order_tracking", {"order_id": "550e8400-e29b-41d4-a716-446655440002"})],
        _answer_orders,
    ),
    "Cancel my order 550e8400-e29b-41d4-a716-446655440003, I found a better deal elsewhere": (
        [
            (
                "cancel_order",
                {
                    "order_id": "550e8400-e29b-41d4-a716-446655440003",
                    "reason": "found a better deal",
                },
            )
        ],
        _answer_orders,
    ),
    (
        "I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004, "
        "it has a defective screen"
    ): (
        [
            ("check_return_eligibility", {"order_id": "550e8400-e29b-41d4-a716-446655440004"}),
            (
                "initiate_return",
                {"order_id": "550e8400-e29b-41d4-a716-446655440004", "reason": "defective screen"},
            ),
        ],
        _answer_orders,
    ),
    "Find me wireless headphones under $300": (
        [("search_products", {"query": "wireless headphones", "max_price": 300})],
        _answer_products,
    ),
    "Show me the details for product abc-123": (
        [("get_product_details", {"product_id": "abc-123"})],
        _answer_products,
    ),
    "Compare the Sony WH-1000XM5 and the Bose QuietComfort Ultra": (
        [
            ("search_products", {"query": "Sony WH-1000XM5 Bose QuietComfort Ultra"}),
            ("compare_products", {"product_ids": ["abc-123", "def-456"]}),
        ],
        _answer_products,
    ),
    "I need something cozy for winter, maybe a blanket or warm jacket": (
        [("semantic_search", {"query": "cozy winter blanket or warm jacket"})],
        _answer_products,
    ),
    "What are the trending electronics this month?": (
        [("get_trending_products", {"category": "electronics"})],
        _answer_products,
    ),
}

Behaviour = str
"""``good``, ``no_tool`` (answers from memory), ``wrong_tool`` (search instead of the planned
tool), ``invented_price`` (adds a price no tool returned), ``terse`` (drops every field but one)."""


class ShopAgent:
    """Runs questions through the scripted plans, emitting GenAI-semconv spans."""

    def __init__(self, behaviour: Behaviour = "good", model: str = "gpt-4o-mini"):
        self.behaviour = behaviour
        self.model = model
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": "shop-agent", "service.version": "1.4.2"})
        )
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracer = self.provider.get_tracer("shop_agent", "1.4.2")

    def _chat(
        self,
        messages: list[dict[str, Any]],
        output: dict[str, Any],
        finish: str,
        tokens: tuple[int, int],
    ) -> None:
        with self.tracer.start_as_current_span(f"chat {self.model}", kind=SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": self.model,
                    "gen_ai.response.model": f"{self.model}-2024-07-18",
                    "gen_ai.usage.input_tokens": tokens[0],
                    "gen_ai.usage.output_tokens": tokens[1],
                    "gen_ai.response.finish_reasons": [finish],
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps([output]),
                }
            )

    def _tool(self, call_id: str, name: str, arguments: dict[str, Any]) -> Any:
        with self.tracer.start_as_current_span(f"execute_tool {name}") as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "execute_tool",
                    "gen_ai.tool.name": name,
                    "gen_ai.tool.call.id": call_id,
                    "gen_ai.tool.type": "function",
                    "gen_ai.tool.call.arguments": json.dumps(arguments),
                }
            )
            try:
                result = TOOLS[name](**arguments)
            except Exception as exc:
                span.record_exception(exc)
                span.set_status(Status(StatusCode.ERROR, str(exc)))
                span.set_attribute("error.type", type(exc).__qualname__)
                return {"error": str(exc)}
            span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
            return result

    def _plan(
        self, question: str
    ) -> tuple[list[tuple[str, dict[str, Any]]], Callable[[list[Any]], str]]:
        plan, answer = PLANS[question]
        if self.behaviour == "no_tool":
            return [], lambda _: "I believe your order is on its way and everything looks fine."
        if self.behaviour == "wrong_tool":
            return [("search_products", {"query": question})], _answer_products
        if self.behaviour == "invented_price":
            return plan, lambda results: answer(results) + "\nMembers pay only $199.00 this week."
        if self.behaviour == "terse":
            return plan, lambda results: "Done."
        return plan, answer

    def ask(self, question: str, case_id: str | None = None) -> None:
        plan, answer = self._plan(question)
        user = {"role": "user", "parts": [{"type": "text", "content": question}]}
        with self.tracer.start_as_current_span("invoke_agent shop-agent") as root:
            root.set_attributes(
                {
                    "gen_ai.operation.name": "invoke_agent",
                    "gen_ai.agent.name": "shop-agent",
                    "gen_ai.input.messages": json.dumps([user]),
                }
            )
            if case_id:
                root.set_attribute("tracegrade.case_id", case_id)
            history: list[dict[str, Any]] = [user]
            results = []
            for i, (name, arguments) in enumerate(plan):
                call = {
                    "type": "tool_call",
                    "id": f"call_{i}",
                    "name": name,
                    "arguments": arguments,
                }
                self._chat(
                    history,
                    {"role": "assistant", "parts": [call]},
                    "tool_calls",
                    (120 + 40 * i, 18),
                )
                result = self._tool(f"call_{i}", name, arguments)
                results.append(result)
                history += [
                    {"role": "assistant", "parts": [call]},
                    {
                        "role": "tool",
                        "parts": [
                            {
                                "type": "tool_call_response",
                                "id": f"call_{i}",
                                "response": json.dumps(result),
                            }
                        ],
                    },
                ]
            text = answer(results)
            final = {
                "role": "assistant",
                "parts": [{"type": "text", "content": text}],
                "finish_reason": "stop",
            }
            self._chat(history, final, "stop", (200 + 60 * len(plan), 45))
            root.set_attribute("gen_ai.output.messages", json.dumps([final]))

    def export(self, path: Path) -> Path:
        """Write the finished spans as one binary ``ExportTraceServiceRequest`` (OTLP protobuf)."""
        self.provider.force_flush()
        path.write_bytes(encode_spans(self.exporter.get_finished_spans()).SerializeToString())
        return path
