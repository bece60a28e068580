"""Issue 34: a team's convention map for its in-house tracer reads its traces exactly, with no
code; ``inspect --explain`` names the map and attribute behind each field.

The made-up "acme" tracer records spans with the real OpenTelemetry SDK (exported as OTLP
protobuf by the SDK's own encoder), under ``acme.*`` keys no built-in map names: flattened
prompt messages, a JSON reply, token counters, tool spans with their own keys.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.sdk import trace_request
from tracegrade.cli import cli
from tracegrade.normalize.conventions import reset_map_files

QUESTION = "What is the total of order A100?"
ANSWER = "Order A100 totals $42.50."
RESULT = {"order_id": "A100", "total_usd": 42.5}

ACME_MAP = """\
name: acme-tracer
about: Acme's in-house agent tracer (acme.* attributes).
applies:
  key_prefixes: ["acme."]
role:
  - key: acme.kind
    values: {agent: agent, model: llm, tool: tool}
fields:
  conversation_id: [acme.thread]
roles:
  agent:
    agent_name: [acme.agent]
    input_text: [acme.input]
    output_text: [acme.output]
  llm:
    model: [acme.model]
    input_messages: [{flattened: acme.prompt.}]
    input_tokens: [acme.tokens.in]
    output_tokens: [acme.tokens.out]
  tool:
    tool_name: [acme.tool]
    tool_call_id: [acme.call]
    tool_arguments: [acme.args]
    tool_result: [acme.result]
payloads:
  - {key: acme.reply, as: response}
"""


def _prompt(*messages: tuple[str, str]) -> dict[str, str]:
    flat = {}
    for index, (role, content) in enumerate(messages):
        flat[f"acme.prompt.{index}.role"] = role
        flat[f"acme.prompt.{index}.content"] = content
    return flat


def _acme_trace(tracer) -> None:
    reply1 = {
        "role": "assistant",
        "tool_calls": [
            {"id": "c1", "function": {"name": "get_order", "arguments": '{"order_id": "A100"}'}}
        ],
    }
    with tracer.start_as_current_span(
        "run",
        attributes={
            "acme.kind": "agent",
            "acme.agent": "shop",
            "acme.input": QUESTION,
            "acme.output": ANSWER,
            "acme.thread": "t-1",
        },
    ):
        with tracer.start_as_current_span(
            "think",
            attributes={
                "acme.kind": "model",
                "acme.model": "gpt-4o-mini",
                **_prompt(("user", QUESTION)),
                "acme.reply": json.dumps(reply1),
                "acme.tokens.in": 40,
                "acme.tokens.out": 8,
            },
        ):
            pass
        with tracer.start_as_current_span(
            "act",
            attributes={
                "acme.kind": "tool",
                "acme.tool": "get_order",
                "acme.call": "c1",
                "acme.args": '{"order_id": "A100"}',
                "acme.result": json.dumps(RESULT),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "think",
            attributes={
                "acme.kind": "model",
                "acme.model": "gpt-4o-mini",
                **_prompt(("user", QUESTION), ("tool", json.dumps(RESULT))),
                "acme.reply": json.dumps({"role": "assistant", "content": ANSWER}),
                "acme.tokens.in": 70,
                "acme.tokens.out": 9,
            },
        ):
            pass


@pytest.fixture
def acme(tmp_path: Path):
    traces = tmp_path / "acme.binpb"
    traces.write_bytes(trace_request(_acme_trace).SerializeToString())
    conventions = tmp_path / "acme.yaml"
    conventions.write_text(ACME_MAP)
    yield traces, conventions
    reset_map_files()


def _inspect(*args: str) -> dict:
    result = CliRunner().invoke(cli, [*args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[0])


def test_an_in_house_map_reads_its_tracer_exactly(acme, monkeypatch):
    traces, conventions = acme
    monkeypatch.delenv("TRACEGRADE_CONVENTIONS", raising=False)
    trace = _inspect("--conventions", str(conventions), "inspect", "--json", str(traces))
    assert trace["user_inputs"] == [QUESTION]
    assert trace["final_output"] == ANSWER
    assert trace["conversation_id"] == "t-1"
    assert [a["name"] for a in trace["agents"]] == ["shop"]
    assert [
        (c["name"], c["call_id"], c["arguments"], json.loads(c["result"]))
        for c in trace["tool_calls"]
    ] == [("get_order", "c1", {"order_id": "A100"}, RESULT)]
    assert (len(trace["llm_calls"]), trace["input_tokens"], trace["output_tokens"]) == (2, 110, 17)
    assert "acme-tracer" in trace["conventions"]


def test_explain_names_the_map_and_attribute_of_each_field(acme, monkeypatch):
    traces, conventions = acme
    monkeypatch.delenv("TRACEGRADE_CONVENTIONS", raising=False)
    explained = _inspect(
        "--conventions", str(conventions), "inspect", "--explain", "--json", str(traces)
    )
    sources = {f["field"]: f["read_from"] for f in explained["fields"]}
    assert sources["final_output"] == "acme-tracer: acme.output"
    assert sources["tool_calls[0].result"] == "acme-tracer: acme.result"
    assert sources["llm_calls[0].output_messages"] == "acme-tracer: acme.reply"
    assert sources["llm_calls[0].input_messages"] == "acme-tracer: acme.prompt.*"
    roles = {s["span_id"]: (s["role"], s["role_origin"]) for s in explained["spans"]}
    assert ("tool", "acme-tracer: acme.kind=tool") in roles.values()


def test_without_the_map_lint_is_not_ok(acme, monkeypatch):
    """The same trace without its map: what its spans carry in known shapes is still read
    (the replies), what they carry under unknown keys is reported, never "all ok"."""
    traces, _ = acme
    monkeypatch.delenv("TRACEGRADE_CONVENTIONS", raising=False)
    result = CliRunner().invoke(cli, ["lint", "--json", str(traces)], catch_exceptions=False)
    report = json.loads(result.output.strip().splitlines()[0])
    assert report["ok"] is False


def test_a_bad_map_names_the_file_and_field(tmp_path: Path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nfields:\n  modle: [a.b]\n")
    result = CliRunner().invoke(cli, ["--conventions", str(bad), "inspect", str(bad)])
    assert result.exit_code == 2
    assert "bad.yaml" in result.output and "modle" in result.output
    reset_map_files()
