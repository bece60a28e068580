"""Fixtures for the judge tests: real tau-bench traces (recorded by the openai-v2
instrumentation, span-only content) and judge settings pointing at a scripted server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.openai_server import ScriptedOpenAI
from tracegrade.judge.settings import JudgeSettings
from tracegrade.pipeline import reading
from tracegrade.trace import AgentTrace

TAU_TRACES = (
    Path(__file__).parents[2]
    / "datasets"
    / "tau-bench-otlp"
    / "otel_genai_latest_span_only"
    / "traces.jsonl.gz"
)
CONTRADICTION = "657fb4f2053fd12b7fd9dce16b304212"
"""tau-bench airline task 22 (reward 0): the answer says the flight is now economy class and
$114 was charged, while ``calculate`` returned -114.0 (a refund) and
``update_reservation_flights`` returned ``"cabin": "basic_economy"``."""


def settings_for(server: ScriptedOpenAI, **overrides) -> JudgeSettings:
    values = {
        "base_url": server.base_url,
        "api_key": "test-key",
        "max_retries": 2,
        "timeout_s": 5.0,
        **overrides,
    }
    return JudgeSettings(**values)


@pytest.fixture(scope="session")
def _shared_server():
    with ScriptedOpenAI([]) as server:
        yield server


@pytest.fixture
def judge_server(_shared_server):
    """``judge_server(script)``: the session's scripted server, re-scripted with its request
    log cleared (one server for all tests: stopping one takes 0.5 s)."""

    def script(replies) -> ScriptedOpenAI:
        _shared_server.script = replies
        _shared_server.requests.clear()
        return _shared_server

    yield script
    script([])


@pytest.fixture(scope="session")
def tau_traces() -> dict[str, AgentTrace]:
    loaded = reading.from_files([TAU_TRACES])
    assert not loaded.errors
    return {t.trace_id: t for t in loaded.traces}


@pytest.fixture
def contradiction(tau_traces) -> AgentTrace:
    return tau_traces[CONTRADICTION]


def fenced(prompt: str, tag: str) -> Any:
    """The JSON document between ``<tag>`` and ``</tag>`` in a recorded prompt (each tag
    exactly once, so nothing closed the fence early)."""
    assert prompt.count(f"<{tag}>") == 1 and prompt.count(f"</{tag}>") == 1, prompt
    body = prompt.split(f"<{tag}>\n", 1)[1].split(f"\n</{tag}>", 1)[0]
    return json.loads(body)
