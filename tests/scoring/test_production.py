"""Reference-free production rules: without a golden dataset, invented values and hidden tool
errors fail a trace (the example shop agent's ``invented_price`` regression among them)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.trace import Status, StatusCode

from tests.support.ecommerce_model import shop_models
from tests.support.sdk import trace_request
from tracegrade.cli import cli
from tracegrade.otlp.files import write_jsonl

REPO = Path(__file__).parents[2]
GOLDEN = str(REPO / "datasets" / "ecommerce" / "golden.yaml")


@pytest.fixture
def shop_model(monkeypatch: pytest.MonkeyPatch) -> Iterator:
    with shop_models(monkeypatch) as start:
        yield start


def _score_reference_free(*args: str) -> tuple[int, dict]:
    out = Path(args[-1]).parent / "score.json"
    result = CliRunner().invoke(cli, ["score", *args, "--json", str(out), "--no-save"])
    assert out.exists(), result.output
    return result.exit_code, json.loads(out.read_text())


@pytest.mark.parametrize("variant", ["good", "invented_price"])
def test_shop_agent_invented_prices_fail_reference_free_scoring(shop_model, tmp_path, variant):
    shop_model(variant)
    db = str(tmp_path / "shop.db")
    ran = CliRunner().invoke(
        cli,
        ["run", GOLDEN, "--agent", "examples.ecommerce.agent:answer", "--smoke", "--db", db],
    )
    assert ran.exit_code in (0, 1), ran.output
    code, doc = _score_reference_free("--db", db)
    priced = [
        c
        for c in doc["cases"]
        if "$" in (c["details"]["value_grounding"]["reason"] or "")
        or c["details"]["production_rules"]["details"].get("invented")
    ]
    if variant == "good":
        assert code == 0, [c["reasons"] for c in doc["cases"] if not c["passed"]]
        assert all(c["scores"]["production_rules"] == 1.0 for c in doc["cases"])
    else:
        assert code == 1 and priced
        for case in priced:
            assert not case["passed"]
            assert any("values no tool result or input contains: $" in r for r in case["reasons"])


def _failed_lookup(answer: str, retried: bool = False):
    def build(tracer):
        with tracer.start_as_current_span(
            "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
        ):
            with tracer.start_as_current_span(
                "chat gpt-4o",
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.input.messages": json.dumps(
                        [{"role": "user", "parts": [{"type": "text", "content": "Cancel ORD-1"}]}]
                    ),
                    "gen_ai.output.messages": json.dumps(
                        [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                    ),
                },
            ):
                pass
            for attempt in range(2 if retried else 1):
                with tracer.start_as_current_span(
                    "execute_tool cancel_order",
                    attributes={
                        "gen_ai.operation.name": "execute_tool",
                        "gen_ai.tool.name": "cancel_order",
                        "gen_ai.tool.call.arguments": '{"order_id": "ORD-1"}',
                        "gen_ai.tool.call.result": '{"status": "cancelled"}' if attempt else "",
                    },
                ) as span:
                    if attempt == 0:
                        span.set_status(Status(StatusCode.ERROR, "order service timeout"))
                        span.set_attribute("error.type", "TimeoutError")

    return trace_request(build)


@pytest.mark.parametrize(
    ("answer", "retried", "passes"),
    [
        ("Your order ORD-1 is cancelled.", False, False),
        (
            "Sorry, I could not cancel ORD-1: the order service failed. Please try again.",
            False,
            True,
        ),
        ("Your order ORD-1 is cancelled.", True, True),
    ],
    ids=["hidden", "acknowledged", "recovered-by-retry"],
)
def test_a_tool_error_the_answer_hides_fails(tmp_path, answer, retried, passes):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, [_failed_lookup(answer, retried)])
    code, doc = _score_reference_free(str(path))
    (case,) = doc["cases"]
    hidden = case["details"]["production_rules"]["details"]["hidden_errors"]
    assert case["passed"] is passes and (code == 0) is passes
    assert bool(hidden) is not passes
    if not passes:
        assert hidden == [{"name": "cancel_order", "error": hidden[0]["error"]}]
        assert any("failed and the answer does not say so" in r for r in case["reasons"])


def test_rules_report_but_do_not_fail_a_golden_case_unless_configured(tmp_path):
    path = tmp_path / "traces.jsonl"
    write_jsonl(path, [_failed_lookup("Your order ORD-1 is cancelled.")])
    dataset = tmp_path / "d.yaml"
    dataset.write_text("- {id: c, input: Cancel ORD-1, expected_tools: [cancel_order]}\n")
    _, doc = _score_reference_free(str(path), "--dataset", str(dataset))
    assert doc["cases"][0]["scores"]["production_rules"] == 0.0
    assert not any("does not say so" in h for h in doc["cases"][0]["hard_failures"] or [])
    config = tmp_path / "tracegrade.yaml"
    config.write_text("reference_free: {enforce_with_case: true}\n")
    _, doc = _score_reference_free(str(path), "--dataset", str(dataset), "--config", str(config))
    assert any("does not say so" in r for r in doc["cases"][0]["reasons"])
    assert not doc["cases"][0]["passed"]
