"""Chat transcripts -> GenAI spans -> AgentTrace, on 100 real tau-bench GPT-4o conversations.

Data: datasets/tau-bench/gpt-4o-airline-even-tasks.json (sierra-research/tau-bench, MIT).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tracegrade.errors import TranscriptError
from tracegrade.normalize import normalize_all
from tracegrade.otlp import transcripts
from tracegrade.otlp.codec import spans_from_request
from tracegrade.otlp.files import ReadOptions, read_paths

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
RECORDS = json.loads(TAU.read_text())


def expected_calls(traj: list[dict]) -> list[tuple[str, str, dict, str]]:
    """(name, id, arguments, result) per tool call: tau-bench makes one call per assistant
    message and its result is the tool message right after it."""
    calls = []
    for i, message in enumerate(traj):
        for call in message.get("tool_calls") or []:
            result = traj[i + 1]
            assert result["role"] == "tool"
            calls.append(
                (
                    call["function"]["name"],
                    call["id"],
                    json.loads(call["function"]["arguments"]),
                    result["content"],
                )
            )
    return calls


@pytest.fixture(scope="module")
def traces():
    payloads = read_paths([TAU], ReadOptions(messages_key="traj"))
    assert payloads.errors == []
    return normalize_all(payloads.spans())


def test_one_trace_per_conversation_in_order(traces):
    assert len(traces) == len(RECORDS) == 100
    assert [t.root_attributes["task_id"] for t in traces] == [r["task_id"] for r in RECORDS]


def test_no_tool_call_lost_or_mispaired(traces):
    total = 0
    for record, trace in zip(RECORDS, traces, strict=True):
        want = expected_calls(record["traj"])
        got = [(c.name, c.call_id, c.arguments, c.result) for c in trace.tool_calls]
        assert got == want, record["task_id"]
        total += len(got)
    assert total == sum(1 for r in RECORDS for m in r["traj"] if m["role"] == "tool") == 577


def test_repeated_call_ids_pair_with_the_call_just_before(traces):
    repeated = [t for t in traces if len({c.call_id for c in t.tool_calls}) < len(t.tool_calls)]
    assert repeated, "tau-bench repeats tool-call ids inside conversations"
    for trace in repeated:
        for call in trace.tool_calls:
            assert call.source == "span+message"


def test_user_inputs_final_output_and_fields(traces):
    for record, trace in zip(RECORDS, traces, strict=True):
        assert list(trace.user_inputs) == [
            m["content"] for m in record["traj"] if m["role"] == "user"
        ]
        last = [m for m in record["traj"] if m["role"] in ("assistant", "tool")][-1]
        expected_final = (
            last["content"] if last["role"] == "assistant" and not last.get("tool_calls") else None
        )
        assert trace.final_output == expected_final
        assert trace.root_attributes["reward"] == record["reward"]
        assert json.loads(trace.root_attributes["info"]) == record["info"]
        assert trace.gap("timing") is not None and trace.gap("tokens") is not None


def test_llm_calls_one_per_assistant_message(traces):
    for record, trace in zip(RECORDS, traces, strict=True):
        assistants = [m for m in record["traj"] if m["role"] == "assistant"]
        assert len(trace.llm_calls) == len(assistants)
        assert [c.finish_reason for c in trace.llm_calls] == [
            "tool_calls" if m.get("tool_calls") else "stop" for m in assistants
        ]


def test_spans_are_genai_semconv():
    request = transcripts.to_request(RECORDS[0], messages_key="traj")
    spans = spans_from_request(request)
    ops = [s.attributes["gen_ai.operation.name"] for s in spans]
    assert ops.count("invoke_agent") == 1
    assert ops.count("chat") == sum(1 for m in RECORDS[0]["traj"] if m["role"] == "assistant")
    tool = next(s for s in spans if s.attributes["gen_ai.operation.name"] == "execute_tool")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"user_id": "mia_li_3668"}
    assert tool.name == "execute_tool get_user_details"
    assert {s.trace_id for s in spans} == {spans[0].trace_id}


def test_same_record_same_trace_id():
    a = spans_from_request(transcripts.to_request(RECORDS[0], messages_key="traj"))
    b = spans_from_request(transcripts.to_request(RECORDS[0], messages_key="traj"))
    assert [s.span_id for s in a] == [s.span_id for s in b]


def test_parallel_calls_in_one_message_pair_by_id():
    record = {
        "messages": [
            {"role": "user", "content": "weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "a",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "b",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "b", "content": "sunny"},
            {"role": "tool", "tool_call_id": "a", "content": "rainy"},
            {"role": "assistant", "content": "Paris is rainy, Rome sunny."},
        ],
        "model": "gpt-4o",
    }
    trace = normalize_all(spans_from_request(transcripts.to_request(record)))[0]
    assert [(c.call_id, c.arguments["city"], c.result) for c in trace.tool_calls] == [
        ("b", "Rome", "sunny"),
        ("a", "Paris", "rainy"),
    ]
    assert {c.llm_call_index for c in trace.tool_calls} == {0}
    assert trace.llm_calls[0].model == "gpt-4o"
    assert trace.final_output == "Paris is rainy, Rome sunny."


def test_messages_key_missing_names_the_keys():
    with pytest.raises(
        TranscriptError, match=r"no message list under 'messages' \(list-valued keys: traj\)"
    ):
        transcripts.to_request({"traj": [], "task_id": 1})


def test_message_without_role_is_rejected():
    with pytest.raises(TranscriptError, match="message 2 has no string 'role'"):
        transcripts.to_request({"messages": [{"role": "user", "content": "hi"}, {"content": "?"}]})
