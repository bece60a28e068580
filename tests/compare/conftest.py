"""Fixtures for the regression gate's tests: the example shop agent (examples/ecommerce) driven by
the scripted model (tests/support/ecommerce_model.py) through ``tracegrade run`` into a store."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.support.ecommerce_model import _key, _text_of, ecommerce_model, respond
from tests.support.openai_server import Reply, ScriptedOpenAI
from tracegrade.cli import cli

REPO = Path(__file__).resolve().parents[2]
GOLDEN = str(REPO / "datasets" / "ecommerce" / "golden.yaml")
AGENT = "examples.ecommerce.agent:answer"
Script = Callable[[dict[str, Any]], Reply]


def alternating_model() -> Script:
    """The good model, except that every second final answer of each case states its prices
    from memory (the ``invented_price`` variant): under ``--repeat 3`` a case with prices
    passes, fails, passes."""
    answers: dict[str, int] = {}
    lock = threading.Lock()

    def script(body: dict[str, Any]) -> Reply:
        reply = respond(body, "good")
        if reply.message is None or reply.message.get("tool_calls"):
            return reply
        first = next(_text_of(m.get("content")) for m in body["messages"] if m["role"] == "user")
        with lock:
            answers[_key(first)] = answers.get(_key(first), 0) + 1
            bad = answers[_key(first)] % 2 == 0
        return respond(body, "invented_price") if bad else reply

    return script


@dataclass
class Invoked:
    exit_code: int
    output: str
    doc: dict[str, Any] | None


def invoke(*args: str) -> Invoked:
    """``tracegrade ARGS`` in process (stdout and stderr together)."""
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return Invoked(result.exit_code, result.output, None)


@pytest.fixture
def shop(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Callable[..., Invoked]]:
    """``shop(model, *args)``: ``tracegrade run`` of the smoke tier against the shop agent with
    ``model`` (a variant name or a script); returns the exit code, output and run document."""
    runs = iter(range(1000))

    def run(model: str | Script, *args: str) -> Invoked:
        script = ecommerce_model(model) if isinstance(model, str) else model  # type: ignore[arg-type]
        with ScriptedOpenAI(script) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            monkeypatch.setenv("OPENAI_API_KEY", "test")
            monkeypatch.setenv("OPENAI_MODEL", "gpt-4o-mini")
            monkeypatch.delenv("TRACEGRADE_JUDGE_MODEL", raising=False)
            out = tmp_path / f"run-{next(runs)}.json"
            ran = invoke("run", GOLDEN, "--agent", AGENT, "--smoke", "--json", str(out), *args)
        ran.doc = json.loads(out.read_text()) if out.exists() else None
        return ran

    yield run
