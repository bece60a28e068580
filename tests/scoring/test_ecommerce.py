"""The design documents' golden datasets (datasets/e-commerce-agents, loaded unchanged) scored
against traces of a scripted shop agent exported with the real OpenTelemetry SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.ecommerce_agent import ShopAgent
from tracegrade.cli import cli
from tracegrade.dataset import load_dataset

DATASETS = Path(__file__).parents[2] / "datasets" / "e-commerce-agents"
SEEDS = [DATASETS / "order_management.json", DATASETS / "product_discovery.json"]


def score(tmp_path: Path, behaviour: str, dataset: Path, *extra: str) -> tuple[int, dict]:
    agent = ShopAgent(behaviour)
    for case in load_dataset(dataset).cases:
        agent.ask(case.input)
    traces = agent.export(tmp_path / f"{behaviour}.binpb")
    report = tmp_path / f"{behaviour}-{dataset.stem}.json"
    result = CliRunner().invoke(
        cli, ["score", str(traces), "--dataset", str(dataset), "--json", str(report), *extra]
    )
    return result.exit_code, json.loads(report.read_text())


@pytest.mark.parametrize("dataset", SEEDS, ids=lambda p: p.stem)
def test_good_agent_passes_every_case(tmp_path, dataset):
    code, doc = score(tmp_path, "good", dataset)
    assert code == 0, [c["reasons"] for c in doc["cases"] if not c["passed"]]
    assert doc["summary"]["passed"] == 5 and doc["summary"]["score"] == 1.0
    assert doc["summary"]["axes"] == {"completeness": 1.0, "correctness": 1.0, "groundedness": 1.0}
    assert doc["summary"]["hallucination_rate"] == 0.0
    assert doc["run"]["agent_version"] == "1.4.2" and doc["run"]["models"] == [
        "gpt-4o-mini-2024-07-18"
    ]


@pytest.mark.parametrize("dataset", SEEDS, ids=lambda p: p.stem)
def test_agent_that_stops_calling_tools_fails_every_case(tmp_path, dataset):
    code, doc = score(tmp_path, "no_tool", dataset)
    assert code == 1 and doc["summary"]["passed"] == 0
    for case in doc["cases"]:
        assert case["scores"]["groundedness"] == 0.0 and case["scores"]["tool_correctness"] == 0.0
        assert any("expected a tool call before answering" in r for r in case["reasons"])


def test_wrong_tool_selection_is_caught(tmp_path):
    code, doc = score(tmp_path, "wrong_tool", DATASETS / "order_management.json")
    assert code == 1
    assert all(c["scores"]["tool_correctness"] == 0.0 and not c["passed"] for c in doc["cases"])
    assert "missing ['get_user_orders']" in doc["cases"][0]["details"]["tool_correctness"]["reason"]


def test_invented_price_is_an_ungrounded_value(tmp_path):
    code, doc = score(tmp_path, "invented_price", DATASETS / "product_discovery.json")
    assert doc["summary"]["hallucination_rate"] == 1.0
    for case in doc["cases"]:
        ungrounded = case["details"]["value_grounding"]["details"]["ungrounded"]
        assert ungrounded == [{"kind": "price", "text": "$199.00"}]


def test_terse_answers_lose_completeness(tmp_path):
    code, doc = score(tmp_path, "terse", DATASETS / "order_management.json")
    assert all(c["scores"]["completeness"] == 0.0 for c in doc["cases"])
    # completeness weighs 0.2: the cases still pass the default 0.7 threshold ...
    assert code == 0 and doc["summary"]["score"] == pytest.approx(0.8)
    # ... and fail a stricter one
    code, doc = score(tmp_path, "terse", DATASETS / "order_management.json", "--threshold", "0.9")
    assert code == 1 and doc["summary"]["passed"] == 0


def test_fields_stated_by_value_count_as_present(tmp_path):
    _, doc = score(tmp_path, "good", DATASETS / "product_discovery.json")
    found = doc["cases"][0]["details"]["completeness"]["details"]["found"]
    assert found == {"name": "value 'Sony WH-1000XM5'", "price": "alias 'price'"}


def test_cost_tokens_and_latency_are_reported(tmp_path):
    _, doc = score(tmp_path, "good", DATASETS / "order_management.json")
    summary = doc["summary"]
    per_case = [c["usage"] for c in doc["cases"]]
    assert summary["input_tokens"] == sum(u["input_tokens"] for u in per_case)
    # gpt-4o-mini: $0.15 in / $0.60 out per 1M tokens (config/pricing.yaml)
    expected = sum(u["input_tokens"] * 0.15 + u["output_tokens"] * 0.60 for u in per_case) / 1e6
    assert summary["cost_usd"] == pytest.approx(expected)
    assert (
        summary["latency_p50_ms"] is not None
        and summary["latency_p95_ms"] >= summary["latency_p50_ms"]
    )
