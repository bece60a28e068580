"""Issue 10 item 14: an answer tool's argument is the final output, the call is not a tool
call, and a trace without a final output says why in ``gaps`` and ``lint``.

Data: datasets/any-agent (mozilla-ai/any-agent tests/assets, Apache-2.0): real runs in which
LlamaIndex answers through any-agent's ``final_output`` tool and TinyAgent through
``final_answer``. Both runs then make one more LLM call (any-agent's structured-output step);
a run without an output type (e.g. Google ADK through any-agent) ends at the answer tool, which
the tests reproduce by cutting the real trace there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.spanfactory import TraceBuilder
from tracegrade.normalize import normalize_all
from tracegrade.normalize.answers import answer_text
from tracegrade.normalize.lint import lint
from tracegrade.otlp.files import read_file
from tracegrade.trace import AgentTrace

ROOT = Path(__file__).parents[2] / "datasets" / "any-agent"
ANSWERS = {"LLAMA_INDEX": "final_output", "TINYAGENT": "final_answer"}


def _raw(framework: str) -> dict:
    return json.loads((ROOT / f"{framework}_trace.json").read_text())


def _tool_span(raw: dict, name: str) -> dict:
    return next(s for s in raw["spans"] if s["attributes"].get("gen_ai.tool.name") == name)


def _cut_after(raw: dict, span: dict, tmp_path: Path) -> AgentTrace:
    """The run ended with ``span``: later spans dropped (the root keeps its times)."""
    kept = [s for s in raw["spans"] if s["start_time"] <= span["start_time"]]
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({**raw, "spans": kept}))
    (trace,) = normalize_all(read_file(path).spans())
    return trace


@pytest.mark.parametrize("framework", sorted(ANSWERS))
def test_a_run_ending_on_its_answer_tool_has_that_answer(framework, tmp_path):
    raw = _raw(framework)
    answer = _tool_span(raw, ANSWERS[framework])
    trace = _cut_after(raw, answer, tmp_path)
    expected = json.loads(answer["attributes"]["gen_ai.tool.args"])["answer"]
    assert trace.final_output == expected
    assert trace.tools_called == ("get_current_time", "write_file")
    assert trace.gap("final_output") is None
    check = next(c for c in lint(trace).checks if c.input == "final_output")
    assert f"{len(expected)} characters" in check.detail
    if expected.lstrip().startswith("{"):  # a JSON answer: structured output, or an envelope?
        assert check.status == "partial" and "structured output" in check.detail
    else:
        assert check.status == "ok"


@pytest.mark.parametrize("framework", sorted(ANSWERS))
def test_the_answer_tool_is_not_counted_in_a_full_run(framework):
    (trace,) = normalize_all(read_file(ROOT / f"{framework}_trace.json").spans())
    assert ANSWERS[framework] not in trace.tools_called
    assert trace.final_output is not None and trace.gap("final_output") is None


def test_an_answer_tool_without_its_argument_says_why(tmp_path):
    raw = _raw("TINYAGENT")
    answer = _tool_span(raw, "final_answer")
    del answer["attributes"]["gen_ai.tool.args"]
    for span in raw["spans"]:  # the model's request for it lost its arguments too
        if '"final_answer"' in str(span["attributes"].get("gen_ai.output")):
            span["attributes"]["gen_ai.output"] = json.dumps([{"tool.name": "final_answer"}])
    trace = _cut_after(raw, answer, tmp_path)
    assert trace.final_output is None
    gap = trace.gap("final_output")
    assert gap is not None and "answer tool final_answer" in gap.reason
    check = next(c for c in lint(trace).checks if c.input == "final_output")
    assert check.status == "missing" and check.detail == gap.reason


def test_a_run_ending_on_an_ordinary_tool_says_so_in_lint(tmp_path):
    raw = _raw("TINYAGENT")
    trace = _cut_after(raw, _tool_span(raw, "write_file"), tmp_path)
    assert trace.final_output is None
    check = next(c for c in lint(trace).checks if c.input == "final_output")
    assert check.detail == "none: the run ended on a tool call (write_file), not an answer"


def test_a_failed_last_llm_call_is_the_reason_there_is_no_answer():
    b = TraceBuilder()
    root = b.add("invoke_agent shop", {"gen_ai.operation.name": "invoke_agent"}, duration_ms=50)
    b.add(
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
            ),
            "error.type": "RateLimitError",
        },
        parent=root,
        start_ms=1,
        error="429 Too Many Requests",
    )
    gap = b.normalize().gap("final_output")
    assert gap is not None and "the last LLM call failed (429 Too Many Requests)" in gap.reason


@pytest.mark.parametrize(
    ("arguments", "answer"),
    [
        ({"answer": "42"}, "42"),
        ({"final_answer": {"steps": 2}}, '{"steps": 2}'),
        ({"text": "only argument"}, "only argument"),
        ("plain", "plain"),
        ({"a": 1, "b": 2}, None),
        ({}, None),
        (None, None),
    ],
)
def test_answer_text(arguments, answer):
    assert answer_text(arguments) == answer
