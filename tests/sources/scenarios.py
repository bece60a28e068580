"""The pulls the recorded-answer tests make of Langfuse, Jaeger and Tempo (a first pull by time
range, paged; a second that resumes where it ended; one by trace ids), shared by the recorder
(``make_recordings.py``, which answers them from a model of each API) and the tests (which
replay the recordings), and the Langfuse traces recorded.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import httpx
import yaml

from tracegrade.pipeline.pull import Pulled, PullOptions, pull
from tracegrade.sources import open_source
from tracegrade.sources.http import ApiClient

ROOT = Path(__file__).resolve().parents[2]
WEATHER = (
    ROOT
    / "tests/data/cassettes/opentelemetry-python-contrib"
    / "test_chat_completion_tool_calls_with_content.yaml"
)
LANGFUSE_ENV = {"LANGFUSE_PUBLIC_KEY": "pk-lf-test", "LANGFUSE_SECRET_KEY": "sk-lf-secret-test"}

PULLS: dict[str, list[PullOptions]] = {
    "jaeger": [
        PullOptions(
            "jaeger",
            project="strands-agent",
            since="2026-11-26T23:35:18Z",
            until="2026-11-26T23:35:19.500Z",
            page_size=2,
        ),
        PullOptions("jaeger", project="strands-agent", until="2026-11-27T00:00:00Z", page_size=2),
        PullOptions("jaeger", trace_ids=("a1dff493d5162afce746cdcfcd2c4518", "0" * 31 + "1")),
    ],
    "tempo": [
        PullOptions(
            "tempo",
            project="langgraph-agent",
            since="2026-11-26T23:23:20Z",
            until="2026-11-26T23:24:26Z",
            page_size=6,
        ),
        PullOptions("tempo", project="langgraph-agent", until="2026-11-26T23:25:00Z", page_size=6),
    ],
    "langfuse": [
        PullOptions(
            "langfuse", since="2026-11-01T00:00:00Z", until="2026-11-02T00:00:00Z", page_size=1
        ),
        PullOptions("langfuse", until="2026-11-02T00:00:00Z", page_size=2),
        PullOptions("langfuse", trace_ids=("lf-legacy-7d3c2a10",)),
    ],
}
"""Per backend, the pulls made in order into one store."""


def source_with(name: str, transport: httpx.BaseTransport, waits: list[float]) -> Any:
    """The backend's client with its HTTP on ``transport`` (waits before retries recorded)."""
    source = open_source(name, "http://backend.invalid")
    source.client = ApiClient(
        source.client.name, source.settings, transport=transport, sleep=waits.append
    )
    return source


def run(
    name: str, transport: httpx.BaseTransport, db: str | None = None
) -> tuple[list[Pulled], list[float]]:
    """Make the pulls of ``name`` into the store ``db`` (a temporary one if None); what each
    pull did, and the waits before retries."""
    waits: list[float] = []
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        db = db or str(Path(tmp) / "store.db")
        for options in PULLS[name]:
            options = PullOptions(**{**options.__dict__, "db": db})
            results.append(pull(options, source=source_with(name, transport, waits)))
    return results, waits


# --- Langfuse: the weather conversation, as Langfuse's OpenAI integration records it --------


def _weather_calls() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(request, response) of each recorded chat completion of the weather cassette."""
    interactions = yaml.safe_load(WEATHER.read_text())["interactions"]
    return [
        (json.loads(i["request"]["body"]), json.loads(i["response"]["body"]["string"]))
        for i in interactions
    ]


def _generation(
    trace: str, index: int, at: str, ends: str, request: Any, response: Any
) -> dict[str, Any]:
    usage = response["usage"]
    return {
        "id": f"{trace[:8]}0000000{index}"[:16] if trace[0] != "l" else f"obs-gen-{index}",
        "traceId": trace,
        "type": "GENERATION",
        "name": "OpenAI-generation",
        "startTime": at,
        "endTime": ends,
        "completionStartTime": ends,
        "model": response["model"],
        "modelParameters": {"tool_choice": request.get("tool_choice", "auto")}
        if "tool_choice" in request
        else {},
        "input": request["messages"],
        "output": response["choices"][0]["message"],
        "metadata": {"finish_reason": response["choices"][0]["finish_reason"]},
        "usage": {
            "input": usage["prompt_tokens"],
            "output": usage["completion_tokens"],
            "total": usage["total_tokens"],
            "unit": "TOKENS",
        },
        "usageDetails": {
            "input": usage["prompt_tokens"],
            "output": usage["completion_tokens"],
            "total": usage["total_tokens"],
        },
        "costDetails": {},
        "level": "DEFAULT",
        "statusMessage": None,
        "parentObservationId": None,
        "promptId": None,
        "version": None,
        "environment": "default",
    }


def _tool(trace: str, index: int, at: str, call: dict[str, Any], result: str) -> dict[str, Any]:
    return {
        "id": f"{trace[:8]}1000000{index}"[:16] if trace[0] != "l" else f"obs-tool-{index}",
        "traceId": trace,
        "type": "TOOL",
        "name": call["function"]["name"],
        "startTime": at,
        "endTime": at,
        "input": json.loads(call["function"]["arguments"]),
        "output": result,
        "metadata": {"tool_call_id": call["id"]},
        "level": "DEFAULT",
        "statusMessage": None,
        "parentObservationId": None,
        "environment": "default",
    }


def _trace(trace_id: str, day: str, session: str, hour: str = "10") -> dict[str, Any]:
    (first_request, first), (second_request, second) = _weather_calls()
    calls = first["choices"][0]["message"]["tool_calls"]
    results = {
        m["tool_call_id"]: m["content"] for m in second_request["messages"] if m["role"] == "tool"
    }
    observations = [
        _generation(
            trace_id,
            1,
            f"{day}T{hour}:00:00.100Z",
            f"{day}T{hour}:00:00.900Z",
            first_request,
            first,
        ),
        *(
            _tool(trace_id, n, f"{day}T{hour}:00:01.{n}00Z", call, results[call["id"]])
            for n, call in enumerate(calls, 1)
        ),
        _generation(
            trace_id,
            2,
            f"{day}T{hour}:00:01.500Z",
            f"{day}T{hour}:00:02.200Z",
            second_request,
            second,
        ),
    ]
    return {
        "id": trace_id,
        "timestamp": f"{day}T{hour}:00:00.000Z",
        "name": "weather-agent",
        "input": first_request["messages"][-1]["content"],
        "output": second["choices"][0]["message"]["content"],
        "sessionId": session,
        "release": None,
        "version": None,
        "userId": "user-42",
        "metadata": {},
        "tags": ["weather"],
        "public": False,
        "environment": "default",
        "htmlPath": f"/project/demo/traces/{trace_id}",
        "latency": 2.2,
        "totalCost": 0.0001,
        "observations": observations,
        "scores": [],
    }


def langfuse_traces() -> list[dict[str, Any]]:
    """Three traces of the weather conversation: two with OpenTelemetry (hex) ids, a legacy
    one with Langfuse's own ids; the last on another day."""
    return [
        _trace("7f3e9c2a41b85d06e1c4a9b2d7f08e35", "2026-11-01", "session-1"),
        _trace("c41d0e8b9a2f4c67b3e15d9f08a7c622", "2026-11-01", "session-2", "11"),
        _trace("lf-legacy-7d3c2a10", "2026-11-02", "session-3"),
    ]
