"""Fixtures for the runner's tests: a scripted model for :mod:`tests.runner.shop_agent`, its
golden dataset, and a helper that runs ``tracegrade run`` in process."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from tests.runner.shop_agent import CATALOGUE
from tests.support.openai_server import Reply, ScriptedOpenAI, text, tool_calls
from tracegrade.cli import cli

HERE = Path(__file__).parent
REPO = HERE.parent.parent

CASES: list[dict[str, Any]] = [
    {
        "id": "sony-price",
        "input": "How much is the Sony WH-1000XM5?",
        "tier": "smoke",
        "tags": ["price"],
        "expected_tool_calls": [
            {"name": "get_price", "arguments": {"product": {"regex": "(?i)sony"}}}
        ],
        "expected_fields": ["price"],
        "criteria": {"grounded": True},
    },
    {
        "id": "bose-price",
        "input": "How much is the Bose QC Ultra?",
        "tags": ["price"],
        "expected_tool_calls": [
            {"name": "get_price", "arguments": {"product": {"regex": "(?i)bose"}}}
        ],
        "expected_fields": ["price"],
        "criteria": {"grounded": True},
    },
]


def _product(text_: str) -> str | None:
    return next((key for key in CATALOGUE if key in text_.lower()), None)


@dataclass
class ShopModel:
    """The scripted model. ``mode``: ``good`` (look the price up, answer from the tool);
    ``regression`` (skip the tool, invent a price). Inputs containing ``flaky`` regress on
    every second conversation; ``headphones`` without a model name gets a clarifying question."""

    mode: str = "good"
    flaky_calls: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    requests: list[list[dict[str, Any]]] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> Reply:
        messages = body["messages"]
        with self.lock:
            self.requests.append(messages)
        last = messages[-1]
        if last["role"] == "tool":
            item = json.loads(last["content"])
            return text(
                f"The price of the {item['product']} is ${item['price']:.2f}; {item['stock']} in "
                "stock."
            )
        asked = last["content"]
        key = _product(asked)
        if key is None:
            return text("Which headphones do you mean: the Sony WH-1000XM5 or the Bose QC Ultra?")
        if self._regress(messages):
            return text(f"The price of the {CATALOGUE[key]['product']} is $199.00.")
        return tool_calls(("get_price", {"product": CATALOGUE[key]["product"]}))

    def _regress(self, messages: list[dict[str, Any]]) -> bool:
        if self.mode == "regression":
            return True
        if "flaky" in messages[0]["content"].lower() and len(messages) == 1:
            with self.lock:
                self.flaky_calls += 1
                return self.flaky_calls % 2 == 0
        return False


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> Iterator[ShopModel]:
    script = ShopModel()
    with ScriptedOpenAI(script) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.delenv("TRACEGRADE_JUDGE_MODEL", raising=False)
        yield script


def write_dataset(path: Path, cases: list[dict[str, Any]] = CASES) -> str:
    path.write_text(yaml.safe_dump({"name": "shop", "cases": cases}, sort_keys=False))
    return str(path)


@pytest.fixture
def dataset(tmp_path: Path) -> str:
    return write_dataset(tmp_path / "shop.yaml")


@dataclass
class Ran:
    exit_code: int
    stdout: str
    stderr: str
    doc: dict[str, Any] | None

    def case(self, case_id: str) -> dict[str, Any]:
        assert self.doc is not None, self.stderr
        return next(c for c in self.doc["cases"] if c["case_id"] == case_id)


def run_cli(tmp_path: Path, *args: str) -> Ran:
    """``tracegrade run ARGS --json tmp/run.json`` in process."""
    out = tmp_path / "run.json"
    result = CliRunner().invoke(cli, ["run", *args, "--json", str(out)], catch_exceptions=False)
    doc = json.loads(out.read_text()) if out.exists() else None
    return Ran(result.exit_code, result.stdout, result.stderr, doc)


def agent_command(python: str) -> str:
    """The shell-script wrapped agent command (nothing in it says Python)."""
    return f"TRACEGRADE_TEST_PYTHON={python} sh {HERE / 'shop_agent.sh'}"
