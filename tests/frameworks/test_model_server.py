"""The scripted model speaks the Anthropic Messages API and the Gemini API as it speaks chat
completions: the same scenario turn, step, tool calls and answer from each format's request,
in each format's own reply shapes (streamed and not), logged for the ground truth."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.frameworks import record

SCENARIOS = json.loads((record.HERE / "scenarios.json").read_text())
SYSTEM = SCENARIOS["system_prompt"]
B200 = "When will order B200 arrive?"
PARALLEL = "Which is larger, order A100 or order C300?"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[record.ModelServer]:
    model = record.ModelServer(SCENARIOS, tmp_path / "model.jsonl").start()
    yield model
    model.stop()


def _post(url: str, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Content-Type"], response.read()


def _events(raw: bytes) -> list[tuple[str | None, dict[str, Any]]]:
    """``(event name, data)`` of a server-sent event stream."""
    events = []
    for block in raw.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            events.append((fields.get("event"), json.loads(fields["data"])))
    return events


def _log(server: record.ModelServer) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.log_path.read_text().splitlines()]


# --- Anthropic -------------------------------------------------------------------------------


ANTHROPIC_TOOLS = [
    {"name": name, "description": spec["description"], "input_schema": {"type": "object"}}
    for name, spec in SCENARIOS["tools"].items()
]


def _anthropic(server: record.ModelServer, messages: list[dict], stream: bool = False) -> Any:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": SYSTEM,
        "messages": messages,
        "tools": ANTHROPIC_TOOLS,
        "stream": stream,
    }
    kind, raw = _post(f"{server.root_url}/v1/messages", body)
    return _events(raw) if stream else json.loads(raw)


def test_anthropic_messages_walk_a_scenario_through_tool_use_and_tool_result(server):
    user = {"role": "user", "content": [{"type": "text", "text": B200}]}
    first = _anthropic(server, [user])
    assert first["type"] == "message" and first["stop_reason"] == "tool_use"
    [call] = first["content"]
    assert call["type"] == "tool_use" and call["id"].startswith("toolu_")
    assert (call["name"], call["input"]) == ("get_order", {"order_id": "B200"})
    result = {"type": "tool_result", "tool_use_id": call["id"], "content": '{"status": "x"}'}
    history = [user, {"role": "assistant", "content": first["content"]}]
    history.append({"role": "user", "content": [result]})
    second = _anthropic(server, history)
    assert [(b["name"], b["input"]) for b in second["content"]] == [
        ("track_shipment", {"tracking_id": "TRK-B200"})
    ]
    history += [{"role": "assistant", "content": second["content"]}]
    history.append(
        {"role": "user", "content": [{**result, "tool_use_id": second["content"][0]["id"]}]}
    )
    third = _anthropic(server, history)
    assert third["stop_reason"] == "end_turn"
    assert third["content"] == [
        {"type": "text", "text": "Order B200 ships with DHL and should arrive on 2026-12-03."}
    ]
    log = _log(server)
    assert [(e["path"], e["scenario"], e["step"]) for e in log] == [
        ("anthropic.messages", "sequential", 0),
        ("anthropic.messages", "sequential", 1),
        ("anthropic.messages", "sequential", 2),
    ]
    assert log[2]["usage"] == {
        "input_tokens": third["usage"]["input_tokens"],
        "output_tokens": third["usage"]["output_tokens"],
    }


def test_anthropic_streaming_sends_the_messages_event_sequence(server):
    events = _anthropic(server, [{"role": "user", "content": PARALLEL}], stream=True)
    names = [name for name, _ in events]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert all(name == data["type"] for name, data in events)
    start = events[0][1]["message"]
    assert start["content"] == [] and start["usage"]["output_tokens"] == 1
    blocks: dict[int, dict[str, Any]] = {}
    for name, data in events:
        if name == "content_block_start":
            blocks[data["index"]] = {**data["content_block"], "json": ""}
        elif name == "content_block_delta":
            assert data["delta"]["type"] == "input_json_delta"
            blocks[data["index"]]["json"] += data["delta"]["partial_json"]
    calls = [(b["name"], json.loads(b["json"])) for _, b in sorted(blocks.items())]
    assert calls == [("get_order", {"order_id": "A100"}), ("get_order", {"order_id": "C300"})]
    delta = events[-2][1]
    assert delta["delta"]["stop_reason"] == "tool_use"
    [logged] = _log(server)
    assert logged["stream"] and logged["usage"] == {
        "input_tokens": start["usage"]["input_tokens"],
        "output_tokens": delta["usage"]["output_tokens"],
    }


def test_anthropic_streamed_text_arrives_in_text_deltas(server):
    events = _anthropic(
        server, [{"role": "user", "content": "Hello! What can you help me with?"}], stream=True
    )
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "I can look up your orders and track your shipments."
    assert events[-2][1]["delta"]["stop_reason"] == "end_turn"


# --- Gemini ----------------------------------------------------------------------------------


GEMINI_TOOLS = [
    {
        "functionDeclarations": [
            {"name": name, "description": spec["description"]}
            for name, spec in SCENARIOS["tools"].items()
        ]
    }
]


def _gemini(server: record.ModelServer, contents: list[dict], stream: bool = False) -> Any:
    body = {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": SYSTEM}]},
        "tools": GEMINI_TOOLS,
    }
    method = "streamGenerateContent?alt=sse" if stream else "generateContent"
    url = f"{server.root_url}/v1beta/models/gemini-2.5-flash:{method}"
    kind, raw = _post(url, body)
    return [data for _, data in _events(raw)] if stream else json.loads(raw)


def test_gemini_walks_a_scenario_through_function_call_and_function_response(server):
    user = {"role": "user", "parts": [{"text": PARALLEL}]}
    first = _gemini(server, [user])
    content = first["candidates"][0]["content"]
    assert content["role"] == "model"
    assert [p["functionCall"] for p in content["parts"]] == [
        {"name": "get_order", "args": {"order_id": "A100"}},
        {"name": "get_order", "args": {"order_id": "C300"}},
    ]
    assert first["usageMetadata"]["totalTokenCount"] == (
        first["usageMetadata"]["promptTokenCount"] + first["usageMetadata"]["candidatesTokenCount"]
    )
    responses = {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "get_order", "response": {"result": "{}"}}},
            {"functionResponse": {"name": "get_order", "response": {"result": "{}"}}},
        ],
    }
    second = _gemini(server, [user, content, responses])
    assert second["candidates"][0]["content"]["parts"] == [
        {"text": "Order C300 ($118.00) is larger than order A100 ($42.50)."}
    ]
    assert second["candidates"][0]["finishReason"] == "STOP"
    log = _log(server)
    assert [(e["path"], e["scenario"], e["step"]) for e in log] == [
        ("gemini.generateContent", "parallel", 0),
        ("gemini.generateContent", "parallel", 1),
    ]


def test_gemini_streaming_sends_text_pieces_and_usage_last(server):
    chunks = _gemini(
        server,
        [{"role": "user", "parts": [{"text": "Hello! What can you help me with?"}]}],
        stream=True,
    )
    assert len(chunks) > 1
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == "I can look up your orders and track your shipments."
    assert all("usageMetadata" not in c for c in chunks[:-1])
    usage = chunks[-1]["usageMetadata"]
    [logged] = _log(server)
    assert logged["stream"] and logged["usage"] == {
        "input_tokens": usage["promptTokenCount"],
        "output_tokens": usage["candidatesTokenCount"],
    }
