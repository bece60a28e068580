"""Real instrumentation, real SDK export, tracegrade normalisation: the normalised tool calls,
arguments, results, tokens, user input and final answer must equal what the cassette holds.

Each instrumentation runs the official ``openai`` client (or a real pydantic-ai /
agent-framework agent) against recorded OpenAI responses (tests/data/cassettes) in its own
virtualenv; the spans and log records are exported with the SDK's own OTLP encoder.
"""

from __future__ import annotations

import pytest

from tests.harness.support import (
    HARNESS_CASSETTES,
    INSTRUMENTATIONS,
    MODES,
    cassette_path,
    combination_supported,
    expected_from_cassette,
)
from tracegrade.normalize import normalize_all
from tracegrade.otlp.files import read_paths

COMBOS = [
    pytest.param(i, c, id=f"{i}-{c.rsplit('/', 1)[-1][:-5]}")
    for i in INSTRUMENTATIONS
    for c in HARNESS_CASSETTES
    if combination_supported(i, c)[0]
]
ALT_MODES = [pytest.param(i, m, id=f"{i}-{m}") for i, modes in MODES.items() for m in modes[1:]]
CONTRIB = "opentelemetry-python-contrib/test_chat_completion_tool_calls_with_content.yaml"


def normalized(run_instrumented, instrumentation, cassette, mode=None):
    out = run_instrumented(instrumentation, cassette, mode)
    payloads = read_paths([out / "traces.binpb"])
    assert payloads.errors == []
    traces = normalize_all(payloads.spans(), payloads.log_records())
    assert len(traces) == 1, [t.root_span_name for t in traces]
    return traces[0]


def _check(trace, expected):
    assert [
        (c.model, c.input_tokens, c.output_tokens, c.finish_reason) for c in trace.llm_calls
    ] == [
        (c["model"], c["input_tokens"], c["output_tokens"], c["finish_reason"])
        for c in expected["llm_calls"]
    ]
    assert [(c.name, c.call_id, c.arguments) for c in trace.tool_calls] == [
        (c["name"], c["call_id"], c["arguments"]) for c in expected["tool_calls"]
    ]
    for got, want in zip(trace.tool_calls, expected["tool_calls"], strict=True):
        if want["result"] is None:  # the cassette never sends this call's result to a model
            assert got.result is None and trace.gap("tool_results") is not None
        else:
            assert got.result == want["result"]
    assert list(trace.user_inputs) == expected["user_inputs"]
    assert trace.final_output == expected["final_output"]
    assert trace.input_tokens == sum(c["input_tokens"] for c in expected["llm_calls"])
    assert trace.output_tokens == sum(c["output_tokens"] for c in expected["llm_calls"])


@pytest.mark.parametrize(("instrumentation", "cassette"), COMBOS)
def test_normalised_trace_equals_the_cassette(run_instrumented, instrumentation, cassette):
    trace = normalized(run_instrumented, instrumentation, cassette)
    _check(trace, expected_from_cassette(cassette_path(cassette)))


@pytest.mark.parametrize(("instrumentation", "mode"), ALT_MODES)
def test_other_capture_modes_normalise_the_same(run_instrumented, instrumentation, mode):
    trace = normalized(run_instrumented, instrumentation, CONTRIB, mode)
    _check(trace, expected_from_cassette(cassette_path(CONTRIB)))


@pytest.mark.parametrize("instrumentation", INSTRUMENTATIONS)
def test_parallel_calls_share_their_llm_turn(run_instrumented, instrumentation):
    trace = normalized(run_instrumented, instrumentation, CONTRIB)
    assert [c.llm_call_index for c in trace.tool_calls] == [0, 0]
    assert all(c.performed for c in trace.tool_calls)


def test_conventions_are_recognised(run_instrumented):
    seen = {i: set(normalized(run_instrumented, i, CONTRIB).conventions) for i in INSTRUMENTATIONS}
    assert "genai-events" in seen["openai-v2-default"]
    assert "genai" in seen["openai-v2-latest"]
    assert "openinference" in seen["openinference"]
    assert "traceloop" in seen["traceloop"]
    assert "pydantic-ai" in seen["pydantic-ai"]
    assert "agent-framework" in seen["agent-framework"]
