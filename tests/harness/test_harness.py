"""Checks of the trace harness itself (not of tracegrade).

* ``expected_from_cassette`` against values read off the cassettes by hand;
* the replay server serves recorded responses in order, decoded, SSE verbatim;
* every supported instrumentation x cassette combination yields an OTLP
  ExportTraceServiceRequest with one LLM span per recorded response, one tool
  span per answered tool call, one agent span, and the replay server saw every
  recorded interaction; unsupported combinations are refused cleanly.
"""

from __future__ import annotations

import gzip
import json
import urllib.error
import urllib.request

import pytest

from tests.harness import support
from tests.harness.replay_server import ReplayServer
from tests.harness.support import (
    FRAMEWORKS,
    HARNESS_CASSETTES,
    INSTRUMENTATIONS,
    UnsupportedCombination,
    cassette_path,
    combination_supported,
    expected_from_cassette,
    load_log_records,
    load_spans,
    span_role,
)

CONTRIB_TOOLS = "opentelemetry-python-contrib/test_chat_completion_tool_calls_with_content.yaml"
CONTRIB_STREAM = (
    "opentelemetry-python-contrib/test_chat_completion_multiple_tools_streaming_with_content.yaml"
)
TL_CHAT_TOOLS = "openllmetry/openai/test_chat_tool_calls.yaml"
TL_PARALLEL = "openllmetry/openai/test_open_ai_function_calls_tools_parallel.yaml"


# ------------------------------------------------------ expected_from_cassette


def test_expected_contrib_tool_calls_by_hand():
    exp = expected_from_cassette(cassette_path(CONTRIB_TOOLS))
    assert exp["tool_calls"] == [
        {
            "name": "get_current_weather",
            "call_id": "call_JpNb8OiAkbIbHzDggfpdDHpi",
            "arguments": {"location": "Seattle, WA"},
            "result": "50 degrees and raining",
        },
        {
            "name": "get_current_weather",
            "call_id": "call_vaFQc3zK6hHTRZKXRI5Eo2cJ",
            "arguments": {"location": "San Francisco, CA"},
            "result": "70 degrees and sunny",
        },
    ]
    assert exp["llm_calls"] == [
        {
            "model": "gpt-4o-mini-2024-07-18",
            "input_tokens": 75,
            "output_tokens": 51,
            "finish_reason": "tool_calls",
        },
        {
            "model": "gpt-4o-mini-2024-07-18",
            "input_tokens": 99,
            "output_tokens": 25,
            "finish_reason": "stop",
        },
    ]
    assert exp["final_output"] == (
        "Today, the weather in Seattle is 50 degrees and raining, while in San Francisco, it's 70 "
        "degrees and sunny."
    )
    assert exp["user_inputs"] == ["What's the weather in Seattle and San Francisco today?"]
    assert exp["history_tool_calls"] == []


def test_expected_streaming_reassembles_deltas_and_usage():
    exp = expected_from_cassette(cassette_path(CONTRIB_STREAM))
    assert exp["llm_calls"] == [
        {
            "model": "gpt-4o-mini-2024-07-18",
            "input_tokens": 75,
            "output_tokens": 51,
            "finish_reason": "tool_calls",
        }
    ]
    assert [(t["call_id"], t["arguments"], t["result"]) for t in exp["tool_calls"]] == [
        ("call_fHCjJqt9Pysde6vcJcvbXGBx", {"location": "Seattle, WA"}, None),
        ("call_3J9foSw3CUb48lrqIXoTky6U", {"location": "San Francisco, CA"}, None),
    ]
    assert exp["final_output"] is None


def test_expected_gzip_cassettes():
    chat = expected_from_cassette(cassette_path(TL_CHAT_TOOLS))
    # three recordings of the same test appended: same request, three final answers
    assert [c["output_tokens"] for c in chat["llm_calls"]] == [12, 13, 13]
    assert chat["tool_calls"] == [] and chat["user_inputs"] == []
    assert chat["final_output"] == "The current weather in San Francisco is 70 degrees and sunny."
    assert chat["history_tool_calls"] == [
        {
            "name": "get_current_weather",
            "call_id": "1",
            "arguments": {"location": "San Francisco"},
            "result": "The weather in San Francisco is 70 degrees and sunny.",
        }
    ]
    par = expected_from_cassette(cassette_path(TL_PARALLEL))
    assert [(t["call_id"], t["arguments"]["location"], t["result"]) for t in par["tool_calls"]] == [
        ("call_3JNWJ9wdfRsmkhKWql4HqJhR", "San Francisco", None),
        ("call_8jQ7TzSBlLV4tzrMRpq5Tg98", "Boston", None),
        ("call_rU416PaA6UFgxje2GemBVAwt", "San Francisco", None),
        ("call_iqCZB6DkOW5TPjHK29vpiAFa", "Boston", None),
    ]
    assert par["final_output"] is None
    assert par["user_inputs"] == ["What's the weather like in San Francisco and Boston?"]


def test_non_chat_completions_cassette_is_rejected(tmp_path):
    bad = tmp_path / "responses.yaml"
    bad.write_text(
        "interactions:\n"
        "- request: {method: POST, uri: 'https://api.openai.com/v1/responses', body: '{}'}\n"
        "  response: {status: {code: 200, message: OK}, headers: {}, body: {string: '{}'}}\n"
        "version: 1\n"
    )
    with pytest.raises(ValueError, match="chat-completions"):
        expected_from_cassette(bad)


# ------------------------------------------------------------- replay server


def _post(url: str, body: dict) -> tuple[int, str, bytes]:
    req = urllib.request.Request(
        url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers["Content-Type"], resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers["Content-Type"], err.read()


def test_replay_server_serves_in_order_and_records_requests():
    path = cassette_path(TL_CHAT_TOOLS)  # gzip !!binary bodies
    with ReplayServer(path) as server:
        url = server.base_url + "/chat/completions"
        got = [_post(url, {"n": i}) for i in range(4)]
    raw = [
        it["response"]["body"]["string"]
        for it in support.cassette_mod.yaml.safe_load(path.read_text())["interactions"]
    ]
    for i in range(3):
        status, ctype, body = got[i]
        assert status == 200 and ctype == "application/json"
        assert body == gzip.decompress(raw[i])  # served decoded, byte for byte
    assert got[3][0] == 410 and b"replay cassette exhausted" in got[3][2]
    assert [r["body"] for r in server.requests] == [{"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}]
    assert [r["status"] for r in server.requests] == [200, 200, 200, 410]


def test_replay_server_streams_sse_verbatim():
    path = cassette_path(CONTRIB_STREAM)
    inter = support.cassette_mod.load_interactions(path)[0]
    with ReplayServer(path) as server:
        status, ctype, body = _post(server.base_url + "/chat/completions", inter.request_body)
    assert status == 200 and ctype.startswith("text/event-stream")
    assert body == inter.body and body.rstrip().endswith(b"data: [DONE]")


# ----------------------------------------------------- instrumented replays

COMBOS = [(i, c) for i in INSTRUMENTATIONS for c in HARNESS_CASSETTES]
SUPPORTED = [
    pytest.param(i, c, id=f"{i}-{c.rsplit('/', 1)[-1][:-5]}")
    for i, c in COMBOS
    if combination_supported(i, c)[0]
]
UNSUPPORTED = [
    pytest.param(i, c, id=f"{i}-{c.rsplit('/', 1)[-1][:-5]}")
    for i, c in COMBOS
    if not combination_supported(i, c)[0]
]


def test_matrix_shape():
    # plain-client instrumentations replay every cassette; frameworks only complete agent loops
    assert len(SUPPORTED) == 4 * 4 + 2 and len(UNSUPPORTED) == 2 * 3
    assert all(p.values[0] in FRAMEWORKS for p in UNSUPPORTED)


@pytest.mark.parametrize("instrumentation,cassette", SUPPORTED)
def test_instrumented_replay(run_instrumented, instrumentation, cassette):
    out = run_instrumented(instrumentation, cassette)
    path = cassette_path(cassette)
    inters = support.cassette_mod.load_interactions(path)
    exp = expected_from_cassette(path)

    spans = load_spans(out)  # parses as ExportTraceServiceRequest
    assert spans, "no spans"
    assert len({s.trace_id for s in spans}) == 1, "one conversation = one trace"
    roles = [span_role(s) for s in spans]
    assert roles.count("llm") == len(exp["llm_calls"]) == len(inters)
    executed = [t for t in exp["tool_calls"] if t["result"] is not None]
    tools = [s for s in spans if span_role(s) == "tool"]
    assert len(tools) == len(executed)
    assert [support.tool_name(s) for s in tools] == [t["name"] for t in executed]
    if instrumentation != "traceloop":  # traceloop @tool spans carry no call id
        assert sorted(support.tool_call_id(s) for s in tools) == sorted(
            t["call_id"] for t in executed
        )
    assert roles.count("agent") == 1
    root = [s for s in spans if not s.parent_span_id]
    assert len(root) == 1 and span_role(root[0]) in ("agent", "workflow")

    requests = json.loads((out / "requests.json").read_text())
    assert len(requests) == len(inters)
    assert all(r["status"] == 200 and r["path"].endswith("/chat/completions") for r in requests)
    if instrumentation not in FRAMEWORKS:  # plain clients re-send the recorded bodies
        assert [r["body"] for r in requests] == [i.request_body for i in inters]
    else:  # a real agent serialises differently, but must send the recorded tool results
        tool_results = support.cassette_mod.tool_results_in
        assert [tool_results(r["body"]) for r in requests] == [
            tool_results(i.request_body) for i in inters
        ]

    logs = load_log_records(out)  # parses as ExportLogsServiceRequest when present
    if instrumentation in ("openai-v2-default", "agent-framework"):
        assert logs and all(r["event_name"].startswith("gen_ai.") for r in logs)
        span_ids = {s.span_id for s in spans}
        assert all(r["span_id"] in span_ids for r in logs)
    else:
        assert logs == []
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["served_requests"] == len(inters)


@pytest.mark.parametrize("instrumentation,cassette", UNSUPPORTED)
def test_unsupported_combination_is_refused(run_instrumented, instrumentation, cassette):
    with pytest.raises(UnsupportedCombination, match="agent loop"):
        run_instrumented(instrumentation, cassette)


@pytest.mark.parametrize(
    "instrumentation,mode,log_events",
    [
        (
            "openai-v2-latest",
            "span_and_event",
            True,
        ),  # + gen_ai.client.inference.operation.details events
        ("traceloop", "events", True),  # content in gen_ai.*.message / gen_ai.choice events
        ("pydantic-ai", "2", False),  # legacy 'agent run' / 'running tool' span names
        ("pydantic-ai", "6", False),
    ],
)
def test_alternative_modes(run_instrumented, instrumentation, mode, log_events):
    out = run_instrumented(instrumentation, CONTRIB_TOOLS, mode=mode)
    roles = [span_role(s) for s in load_spans(out)]
    assert roles.count("llm") == 2 and roles.count("tool") == 2 and roles.count("agent") == 1
    assert bool(load_log_records(out)) is log_events
