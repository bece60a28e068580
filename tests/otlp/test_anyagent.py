"""any-agent trace files (real runs of five frameworks, not OTLP layout) normalise.

Data: datasets/any-agent (mozilla-ai/any-agent tests/assets, Apache-2.0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracegrade.normalize import normalize_all
from tracegrade.normalize.answers import ANSWER_TOOLS
from tracegrade.otlp.files import read_file

ROOT = Path(__file__).parents[2] / "datasets" / "any-agent"
FILES = sorted(ROOT.glob("*_trace.json"))


def _raw(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_tool_calls_tokens_durations(path):
    raw = _raw(path)
    payloads = read_file(path)
    assert payloads.errors == [] and payloads.formats == {str(path): "any-agent"}
    (trace,) = normalize_all(payloads.spans())
    tool_spans = [  # an answer tool (final_output, final_answer) is the answer, not a tool call
        s
        for s in raw["spans"]
        if s["attributes"].get("gen_ai.operation.name") == "execute_tool"
        and s["attributes"].get("gen_ai.tool.name") not in ANSWER_TOOLS
    ]
    llm_spans = [
        s for s in raw["spans"] if s["attributes"].get("gen_ai.operation.name") == "call_llm"
    ]
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [
        (s["attributes"]["gen_ai.tool.name"], json.loads(s["attributes"]["gen_ai.tool.args"]))
        for s in tool_spans
    ]
    assert [c.result for c in trace.tool_calls] == [
        s["attributes"].get("gen_ai.output") for s in tool_spans
    ]
    assert [c.duration_ms for c in trace.tool_calls] == [
        (s["end_time"] - s["start_time"]) / 1e6 for s in tool_spans
    ]
    assert len(trace.llm_calls) == len(llm_spans)
    assert trace.input_tokens == sum(
        s["attributes"]["gen_ai.usage.input_tokens"] for s in llm_spans
    )
    assert trace.output_tokens == sum(
        s["attributes"]["gen_ai.usage.output_tokens"] for s in llm_spans
    )
    root = next(s for s in raw["spans"] if not (s["parent"] or {}).get("span_id"))
    assert trace.duration_ms == (root["end_time"] - root["start_time"]) / 1e6
    assert trace.user_inputs[0].startswith("Find what year it is in the America/New_York timezone")
    assert "any-agent" in trace.conventions


def test_llm_tool_requests_join_tool_spans_by_name_and_order():
    (trace,) = normalize_all(read_file(ROOT / "OPENAI_trace.json").spans())
    assert [(c.source, c.llm_call_index) for c in trace.tool_calls] == [
        ("span+message", 0),
        ("span+message", 1),
    ]
