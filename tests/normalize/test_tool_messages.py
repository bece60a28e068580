"""Issue 10 item 12: every ``gen_ai.tool.message`` event is paired with its call, by id and
else by order, and an empty JSON list is a result.

Data: the real tau-bench traces recorded by opentelemetry-instrumentation-openai-v2 in its
default mode (datasets/tau-bench-otlp/otel_genai_default, derived from sierra-research/tau-bench,
MIT): content in ``gen_ai.*.message`` log events. Each test changes the events the way another
emitter shapes them and checks the results against the dataset's manifest.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tracegrade.normalize import normalize_all
from tracegrade.normalize.messages import parse_message
from tracegrade.normalize.results import LooseResult, pair_loose_results
from tracegrade.otlp.files import read_paths
from tracegrade.spans import LogRecord, Span
from tracegrade.trace import AgentTrace, ToolCall

ROOT = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp"
TASKS = json.loads(gzip.decompress((ROOT / "manifest.json.gz").read_bytes()))["variants"][
    "otel_genai_default"
]["tasks"]
TOOL_MESSAGE = "gen_ai.tool.message"


@pytest.fixture(scope="module")
def recorded() -> tuple[list[Span], list[LogRecord]]:
    payloads = read_paths([ROOT / "otel_genai_default" / "traces.jsonl.gz"])
    assert payloads.errors == []
    return payloads.spans(), payloads.log_records()


def _normalize(
    recorded: tuple[list[Span], list[LogRecord]], change: Callable[[LogRecord], LogRecord]
) -> list[AgentTrace]:
    """The recorded traces with ``change`` applied to every tool-message event."""
    spans, logs = recorded
    return normalize_all(spans, [change(r) if r.event_name == TOOL_MESSAGE else r for r in logs])


def _task(trace: AgentTrace) -> dict:
    return TASKS[str(trace.root_attributes["tau.task_id"])]


def _results(trace: AgentTrace) -> list[str | None]:
    return [c.result for c in trace.tool_calls]


def _expected(trace: AgentTrace) -> list[str | None]:
    """The manifest's results, except the last transfer that no model ever received."""
    task = _task(trace)
    results = [c["result"] for c in task["tool_calls"]]
    if task["ended_with"] != "assistant_text" and results:
        results[-1] = None
    return results


def test_results_with_ids_that_match_no_call_are_paired_by_order(recorded):
    # Vertex AI's instrumentation numbers ids by part index: they need not match the request's
    def foreign_id(record: LogRecord) -> LogRecord:
        return dataclasses.replace(record, body={**record.body, "id": "fn_0"})

    traces = _normalize(recorded, foreign_id)
    assert len(traces) == len(TASKS)
    for trace in traces:
        assert _results(trace) == _expected(trace), trace.trace_id
    empty_lists = [c for t in traces for c in t.tool_calls if c.result == "[]"]
    assert len(empty_lists) == 2  # search_direct_flight found no flight: a result, not none


def test_a_tool_message_naming_the_user_role_is_still_a_tool_result(recorded):
    def user_role(record: LogRecord) -> LogRecord:
        return dataclasses.replace(record, body={**record.body, "role": "user"})

    for trace in _normalize(recorded, user_role):
        assert list(trace.user_inputs) == _task(trace)["user_messages"]
        assert _results(trace) == _expected(trace)


def test_a_body_that_is_the_content_itself_is_the_result(recorded):
    def bare(record: LogRecord) -> LogRecord:
        return dataclasses.replace(record, body=record.body.get("content", ""))

    for trace in _normalize(recorded, bare):
        assert _results(trace) == _expected(trace)


def test_a_result_logged_on_the_tool_span_is_paired_by_id(recorded):
    spans, logs = recorded
    extra = []
    for span in spans:
        if span.attributes.get("gen_ai.tool.name") == "transfer_to_human_agents":
            body = {"id": span.attributes["gen_ai.tool.call.id"], "content": "Transfer successful"}
            extra.append(
                LogRecord(span.trace_id, span.span_id, span.end_unix_nano, 0, TOOL_MESSAGE, body)
            )
    assert len(extra) == 8
    traces = normalize_all(spans, logs + extra)
    transfers = [c for t in traces for c in t.tool_calls if c.name == "transfer_to_human_agents"]
    assert [c.result for c in transfers] == ["Transfer successful"] * 8
    assert all(t.gap("tool_results") is None for t in traces)


def test_text_content_parts_are_the_result_text():
    message = parse_message(
        {"id": "c1", "content": ({"type": "text", "text": "Transfer successful"},)}, TOOL_MESSAGE
    )
    assert message is not None and message.tool_responses[0].response == "Transfer successful"


def test_an_empty_structured_list_is_the_result_empty_list():
    message = parse_message({"id": "c1", "content": ()}, TOOL_MESSAGE)
    assert message is not None and message.tool_responses[0].response == "[]"


def _call(name: str, llm_call_index: int) -> ToolCall:
    return ToolCall(name, f"id-{name}", {}, None, llm_call_index=llm_call_index)


def test_by_order_a_result_goes_only_to_a_call_requested_before_it_was_sent():
    # the result in LLM call 1's input belongs to the lookup requested by call 0; the
    # transfer requested by call 1 cannot have produced it (it came from an earlier turn)
    calls = [_call("lookup", 0), _call("transfer", 1)]
    filled = pair_loose_results(calls, [LooseResult("fn_0", "found", 1)])
    assert [c.result for c in filled] == ["found", None]
    assert pair_loose_results(calls[1:], [LooseResult("fn_0", "found", 1)])[0].result is None


def test_a_result_with_a_known_id_never_goes_to_another_call():
    calls = [_call("lookup", 0), _call("transfer", 1)]
    filled = pair_loose_results(calls, [LooseResult("id-lookup", "found", None)])
    assert [c.result for c in filled] == ["found", None]
