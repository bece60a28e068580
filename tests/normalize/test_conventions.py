"""Every convention's example payload, built into a realistic trace, normalised to AgentTrace.

Each section takes one file of ``tests/data/span-examples/`` (see its ``_source``), arranges
its spans into a plausible tree (agent root where the convention has one, chat spans in time
order, tool spans after the chat that asked for them) and checks what the field reference
(``/work/shared/reference/span-conventions.md``, sections 1-7) says the normalised trace must
contain. Expected values are read from the example files and the reference, never from the
code's output.

Where an example leaves a value as a placeholder (pydantic-ai's ``IsStr()`` rendered as
``"<str>"``), a fixed realistic value is substituted consistently across spans. Values an
example does not give but a realistic trace needs (the tool span around a requested call, the
chat that follows it) are marked "derived" in the builder that adds them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format

from tests.support.spanfactory import BASE_NS, TRACE_ID, TraceBuilder
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.codec import any_value, logs_from_request, parse_logs_json
from tracegrade.spans import SpanEvent, TraceData
from tracegrade.trace import AgentTrace

EXAMPLES = Path(__file__).parents[1] / "data" / "span-examples"


def example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / name).read_text(encoding="utf-8"))


def kind_of(raw: dict[str, Any]) -> str:
    """``"CLIENT"`` from ``"CLIENT"`` or the console exporter's ``"SpanKind.CLIENT"``."""
    return str(raw.get("kind") or "INTERNAL").removeprefix("SpanKind.")


def add_example_span(
    b: TraceBuilder,
    raw: dict[str, Any],
    *,
    attributes: dict[str, Any] | None = None,
    parent: str | None = None,
    start_ms: float,
    duration_ms: float,
    **kw: Any,
) -> str:
    """Add one example span (``{name, kind?, attributes, log_events?}``) and its log events."""
    span_id = b.add(
        raw["name"],
        raw["attributes"] if attributes is None else attributes,
        parent=parent,
        start_ms=start_ms,
        duration_ms=duration_ms,
        kind=kind_of(raw),
        **kw,
    )
    for i, event in enumerate(raw.get("log_events", ())):
        b.log(
            event["event_name"],
            event["body"],
            span_id=span_id,
            time_ms=start_ms + duration_ms - 1 + i * 0.01,
        )
    return span_id


def exception_event(exc_type: str, message: str, at_ms: float) -> SpanEvent:
    return SpanEvent(
        "exception",
        BASE_NS + int(at_ms * 1e6),
        {"exception.type": exc_type, "exception.message": message},
    )


def gap_fields(trace: AgentTrace) -> set[str]:
    return {g.field for g in trace.gaps}


def parts_message(
    role: str, *parts: dict[str, Any], finish_reason: str | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "parts": list(parts)}
    if finish_reason:
        message["finish_reason"] = finish_reason
    return message


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def tool_call(call_id: str | None, name: str, arguments: Any) -> dict[str, Any]:
    part = {"type": "tool_call", "name": name, "arguments": arguments}
    if call_id is not None:
        part["id"] = call_id
    return part


def tool_response(call_id: str, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


# =============================================================================================
# otelgenai_semconv-docs_examples-llm-calls_tool-calls.json (OTel GenAI, normative doc)
# chat (asks get_weather) -> execute_tool get_weather -> chat (answers), under an app span.
# =============================================================================================

SEMCONV_DOC = "otelgenai_semconv-docs_examples-llm-calls_tool-calls.json"
SEMCONV_CALL_ID = "call_VSPygqKTWdrhaFErNvMV18Yl"
CONTENT_KEYS = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions")


def semconv_doc_trace(
    *, add_missing_operation_name: bool = True, content_as_json_strings: bool = False
) -> AgentTrace:
    chat1, tool, chat2 = copy.deepcopy(example(SEMCONV_DOC)["spans"])
    if add_missing_operation_name:
        # The doc's second chat span omits the required gen_ai.operation.name (see _source.note);
        # real instrumentations always set it.
        chat2["attributes"]["gen_ai.operation.name"] = "chat"
    if content_as_json_strings:  # how the Python/JS SDKs record them on spans (_source.note)
        for span in (chat1, chat2):
            for key in CONTENT_KEYS:
                if key in span["attributes"]:
                    span["attributes"][key] = json.dumps(
                        span["attributes"][key], ensure_ascii=False
                    )
    b = TraceBuilder()
    root = b.add("POST /weather", {}, kind="SERVER", start_ms=0, duration_ms=2000)
    add_example_span(b, chat1, parent=root, start_ms=10, duration_ms=800)
    add_example_span(b, tool, parent=root, start_ms=820, duration_ms=50)
    add_example_span(b, chat2, parent=root, start_ms=900, duration_ms=1000)
    return b.normalize()


def test_semconv_doc_tool_call_in_output_and_tool_span_counts_once_joined_by_id():
    trace = semconv_doc_trace()
    assert len(trace.tool_calls) == 1
    call = trace.tool_calls[0]
    assert (call.name, call.call_id, call.source) == (
        "get_weather",
        SEMCONV_CALL_ID,
        "span+message",
    )
    assert call.span_id is not None


def test_semconv_doc_arguments_come_from_the_model_tool_call_when_the_span_has_none():
    call = semconv_doc_trace().tool_calls[0]
    assert call.arguments == {"location": "Paris"}
    assert call.arguments_recorded


def test_semconv_doc_result_comes_from_the_next_chat_history():
    call = semconv_doc_trace().tool_calls[0]
    assert call.result == "rainy, 57°F"
    assert call.error is None and call.performed


def test_semconv_doc_tool_call_was_requested_by_the_first_llm_call():
    trace = semconv_doc_trace()
    assert trace.tool_calls[0].llm_call_index == 0
    assert [c.tool_call_ids for c in trace.llm_calls] == [(SEMCONV_CALL_ID,), ()]


def test_semconv_doc_llm_calls_models_providers_and_finish_reasons():
    trace = semconv_doc_trace()
    assert [(c.model, c.provider, c.finish_reason) for c in trace.llm_calls] == [
        ("gpt-4-0613", "openai", "tool_calls"),
        ("gpt-4-0613", "openai", "stop"),
    ]


def test_semconv_doc_tokens_are_summed_over_chat_calls():
    trace = semconv_doc_trace()
    assert [(c.input_tokens, c.output_tokens) for c in trace.llm_calls] == [(47, 17), (97, 52)]
    assert (trace.input_tokens, trace.output_tokens) == (47 + 97, 17 + 52)


def test_semconv_doc_user_input_counted_once_across_histories():
    assert semconv_doc_trace().user_inputs == ("Weather in Paris?",)


def test_semconv_doc_final_output_is_the_last_chat_answer():
    assert (
        semconv_doc_trace().final_output
        == "The weather in Paris is currently rainy with a temperature of 57°F."
    )


def test_semconv_doc_is_genai_with_no_gaps():
    trace = semconv_doc_trace()
    assert trace.conventions == ("genai",)
    assert trace.gaps == ()


def test_semconv_doc_content_as_json_strings_reads_the_same_as_structured():
    assert (
        semconv_doc_trace(content_as_json_strings=True).to_dict() == semconv_doc_trace().to_dict()
    )


def test_semconv_doc_chat_span_missing_operation_name_still_counts_as_llm_call():
    trace = semconv_doc_trace(add_missing_operation_name=False)
    assert len(trace.llm_calls) == 2
    assert (
        trace.final_output == "The weather in Paris is currently rainy with a temperature of 57°F."
    )


# =============================================================================================
# otelgenai-legacy-events_semconv-v1.30_gen-ai-events-tools.json (semconv <= 1.36 log events)
# =============================================================================================

LEGACY_EVENTS = "otelgenai-legacy-events_semconv-v1.30_gen-ai-events-tools.json"


def legacy_events_spans(*, tool_calls_at_body_level: bool = False) -> list[dict[str, Any]]:
    spans = copy.deepcopy(example(LEGACY_EVENTS)["spans"])
    if tool_calls_at_body_level:  # as the spec YAML has it (reference section 1)
        choice = spans[0]["log_events"][1]
        assert choice["event_name"] == "gen_ai.choice"
        choice["body"]["tool_calls"] = choice["body"]["message"].pop("tool_calls")
    return spans


def legacy_events_trace(**kw: Any) -> AgentTrace:
    chat1, chat2 = legacy_events_spans(**kw)
    b = TraceBuilder()
    root = b.add("weather_request", {}, start_ms=0, duration_ms=2000)
    add_example_span(b, chat1, parent=root, start_ms=10, duration_ms=800)
    add_example_span(b, chat2, parent=root, start_ms=900, duration_ms=1000)
    return b.normalize()


def test_legacy_events_tool_call_from_choice_event_with_parsed_arguments():
    trace = legacy_events_trace()
    assert [(c.name, c.call_id, c.arguments, c.source) for c in trace.tool_calls] == [
        ("get_weather", SEMCONV_CALL_ID, {"location": "Paris"}, "message"),
    ]
    assert trace.tool_calls[0].llm_call_index == 0


def test_legacy_events_tool_result_from_tool_message_event():
    call = legacy_events_trace().tool_calls[0]
    assert call.result == "rainy, 57°F"
    assert call.performed


def test_legacy_events_user_message_and_final_choice():
    trace = legacy_events_trace()
    assert trace.user_inputs == ("What's the weather in Paris?",)
    assert (
        trace.final_output
        == "The weather in Paris is rainy and overcast, with temperatures around 57°F"
    )


def test_legacy_events_chat_spans_without_operation_name_are_llm_calls():
    trace = legacy_events_trace()
    assert [(c.model, c.provider, c.finish_reason) for c in trace.llm_calls] == [
        ("gpt-4-0613", "openai", "tool_calls"),
        ("gpt-4-0613", "openai", "stop"),
    ]
    assert (trace.input_tokens, trace.output_tokens) == (47 + 47, 17 + 52)


def test_legacy_events_recognised_with_no_gaps():
    trace = legacy_events_trace()
    assert "genai-events" in trace.conventions
    assert trace.gaps == ()


def test_legacy_choice_with_tool_calls_at_body_level_reads_like_under_message():
    body_level = legacy_events_trace(tool_calls_at_body_level=True)
    under_message = legacy_events_trace()
    assert body_level.tool_calls == under_message.tool_calls
    assert body_level.tool_calls[0].arguments == {"location": "Paris"}


def otlp_log_record(span_id: str, event: dict[str, Any], time_ns: int) -> dict[str, Any]:
    """An OTLP/JSON log record as older SDKs wrote it: no eventName, ``event.name`` attribute."""
    attributes = {"event.name": event["event_name"], **event.get("attributes", {})}
    return {
        "timeUnixNano": str(time_ns),
        "traceId": TRACE_ID,
        "spanId": span_id,
        "attributes": [
            {"key": k, "value": json_format.MessageToDict(any_value(v))}
            for k, v in attributes.items()
        ],
        "body": json_format.MessageToDict(any_value(event["body"])),
    }


def test_legacy_events_with_event_name_attribute_only_are_read_through_otlp_parse():
    chat1, chat2 = legacy_events_spans()
    b = TraceBuilder()
    root = b.add("weather_request", {}, start_ms=0, duration_ms=2000)
    ids = [
        add_example_span(b, {**raw, "log_events": []}, parent=root, start_ms=start, duration_ms=800)
        for raw, start in ((chat1, 10), (chat2, 900))
    ]
    records = [
        otlp_log_record(span_id, event, BASE_NS + int((start + 799) * 1e6) + i)
        for span_id, raw, start in zip(ids, (chat1, chat2), (10, 900), strict=True)
        for i, event in enumerate(raw["log_events"])
    ]
    payload = {
        "resourceLogs": [
            {
                "scopeLogs": [
                    {
                        "scope": {"name": "opentelemetry.instrumentation.openai_v2"},
                        "logRecords": records,
                    }
                ]
            }
        ]
    }
    logs = logs_from_request(parse_logs_json(payload))
    assert all(record.event_name for record in logs)
    trace = normalize_trace(TraceData(TRACE_ID, b.spans, logs))
    assert trace.tool_calls == legacy_events_trace().tool_calls
    assert trace.user_inputs == ("What's the weather in Paris?",)
    assert (
        trace.final_output
        == "The weather in Paris is rainy and overcast, with temperatures around 57°F"
    )


# =============================================================================================
# otelgenai_openinference-genai-fixture_client_span_tool_calls.json (one chat span, JSON strings)
# =============================================================================================

OI_GENAI_CLIENT = "otelgenai_openinference-genai-fixture_client_span_tool_calls.json"
OI_GENAI_ANSWER = "The weather in Paris is currently rainy with a temperature of 57°F."


def genai_client_fixture_trace(*, with_earlier_chat: bool) -> AgentTrace:
    attributes = example(OI_GENAI_CLIENT)["attributes"]
    b = TraceBuilder()
    root = b.add("weather_request", {}, start_ms=0, duration_ms=3000)
    if with_earlier_chat:
        # derived: the call whose answer is the assistant turn in the fixture's history
        b.add(
            "chat gpt-4",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": "openai",
                "gen_ai.request.model": "gpt-4",
                "gen_ai.input.messages": json.dumps(
                    [parts_message("user", text("Weather in Paris?"))]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        parts_message(
                            "assistant",
                            text("Absolutely! Let me check the weather for you."),
                            tool_call("1234", "get_weather", {"location": "Paris"}),
                            finish_reason="tool_call",
                        )
                    ]
                ),
            },
            parent=root,
            kind="CLIENT",
            start_ms=10,
            duration_ms=900,
        )
    b.add("chat gpt-4", attributes, parent=root, kind="CLIENT", start_ms=1500, duration_ms=1200)
    return b.normalize()


def test_genai_client_fixture_reads_json_string_messages_not_the_raw_input_attribute():
    trace = genai_client_fixture_trace(with_earlier_chat=False)
    assert trace.user_inputs == ("Weather in Paris?",)
    assert trace.final_output == OI_GENAI_ANSWER


def test_genai_client_fixture_llm_call_model_tokens_and_finish_reason():
    trace = genai_client_fixture_trace(with_earlier_chat=False)
    assert [
        (c.model, c.provider, c.input_tokens, c.output_tokens, c.finish_reason)
        for c in trace.llm_calls
    ] == [
        ("gpt-4-0613", "openai", 97, 52, "stop"),
    ]
    assert trace.gap("message_content") is None


def test_genai_client_fixture_history_result_joins_the_earlier_request():
    trace = genai_client_fixture_trace(with_earlier_chat=True)
    assert [
        (c.name, c.call_id, c.arguments, c.result, c.llm_call_index) for c in trace.tool_calls
    ] == [
        ("get_weather", "1234", {"location": "Paris"}, "rainy, 57°F", 0),
    ]


def test_genai_client_fixture_final_output_is_not_the_text_before_the_tool_call():
    trace = genai_client_fixture_trace(with_earlier_chat=True)
    assert trace.llm_calls[0].output_text == "Absolutely! Let me check the weather for you."
    assert trace.final_output == OI_GENAI_ANSWER
    assert trace.user_inputs == ("Weather in Paris?",)


# =============================================================================================
# otelgenai_openinference-genai-fixture_tool_execution_span.json (execute_tool, call id 1234)
# =============================================================================================

OI_GENAI_TOOL = "otelgenai_openinference-genai-fixture_tool_execution_span.json"


def tool_execution_fixture_trace(*, with_chats: bool) -> AgentTrace:
    attributes = example(OI_GENAI_TOOL)["attributes"]
    b = TraceBuilder()
    root = b.add(
        "invoke_agent weather_agent",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather_agent"},
        start_ms=0,
        duration_ms=3000,
    )
    request = tool_call("1234", "get_weather", json.loads(attributes["input"]))
    history = [parts_message("user", text("What's the weather in New York?"))]
    if with_chats:  # derived: the chat that asked for the call, and the one that used its result
        b.add(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(history),
                "gen_ai.output.messages": json.dumps(
                    [parts_message("assistant", request, finish_reason="tool_call")]
                ),
            },
            parent=root,
            kind="CLIENT",
            start_ms=10,
            duration_ms=500,
        )
    b.add("execute_tool get_weather", attributes, parent=root, start_ms=600, duration_ms=100)
    if with_chats:
        b.add(
            "chat gpt-4o",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.input.messages": json.dumps(
                    [
                        *history,
                        parts_message("assistant", request),
                        parts_message("tool", tool_response("1234", attributes["output"])),
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        parts_message(
                            "assistant",
                            text("It is sunny in New York, 25°C."),
                            finish_reason="stop",
                        )
                    ]
                ),
            },
            parent=root,
            kind="CLIENT",
            start_ms=800,
            duration_ms=500,
        )
    return b.normalize()


def test_tool_execution_fixture_joins_the_request_by_call_id():
    trace = tool_execution_fixture_trace(with_chats=True)
    assert [(c.name, c.call_id, c.arguments, c.source) for c in trace.tool_calls] == [
        ("get_weather", "1234", {"city": "New York"}, "span+message"),
    ]
    assert trace.tool_calls[0].agent == "weather_agent"


def test_tool_execution_fixture_status_success_result_is_not_an_error():
    call = tool_execution_fixture_trace(with_chats=True).tool_calls[0]
    assert json.loads(call.result) == json.loads(example(OI_GENAI_TOOL)["attributes"]["output"])
    assert call.performed


def test_tool_execution_span_alone_keeps_name_and_id_and_reports_missing_arguments_and_result():
    trace = tool_execution_fixture_trace(with_chats=False)
    assert [
        (c.name, c.call_id, c.source, c.arguments_recorded, c.result) for c in trace.tool_calls
    ] == [
        ("get_weather", "1234", "span", False, None),
    ]
    assert {"llm_calls", "tool_arguments", "tool_results"} <= gap_fields(trace)
    assert "tool_call_ids" not in gap_fields(trace)


# =============================================================================================
# otelgenai-deprecated-prompt-completion_openinference-genai-fixture.json (gen_ai.prompt/completion)
# =============================================================================================

DEPRECATED = "otelgenai-deprecated-prompt-completion_openinference-genai-fixture.json"


def deprecated_prompt_trace() -> AgentTrace:
    b = TraceBuilder()
    b.add(
        "chat gpt-4", example(DEPRECATED)["attributes"], kind="CLIENT", start_ms=0, duration_ms=1200
    )
    return b.normalize()


def test_deprecated_prompt_and_completion_give_user_input_and_answer():
    trace = deprecated_prompt_trace()
    assert trace.user_inputs == ("Weather in Paris?",)
    assert (
        trace.final_output == "The weather in Paris is currently rainy with a temperature of 57°F."
    )


def test_deprecated_prompt_completion_llm_call_and_convention():
    trace = deprecated_prompt_trace()
    assert [
        (c.model, c.input_tokens, c.output_tokens, c.finish_reason) for c in trace.llm_calls
    ] == [
        ("gpt-4-0613", 97, 52, "stop"),
    ]
    assert "genai-legacy" in trace.conventions
    assert trace.gap("message_content") is None


# =============================================================================================
# otelgenai_openai-v2_contrib-test_chat_completion_tool_calls.json (two modes, no tool spans)
# =============================================================================================

OPENAI_V2 = "otelgenai_openai-v2_contrib-test_chat_completion_tool_calls.json"
SEATTLE, SF = "call_JpNb8OiAkbIbHzDggfpdDHpi", "call_vaFQc3zK6hHTRZKXRI5Eo2cJ"
OPENAI_V2_ANSWER = (
    "Today, the weather in Seattle is 50 degrees and raining, while in San Francisco, "
    "it's 70 degrees and sunny."
)


def openai_v2_trace(mode: str, *, strip: bool = False) -> AgentTrace:
    spans = copy.deepcopy(example(OPENAI_V2)[mode]["spans"])
    if strip:
        for raw in spans:
            raw["log_events"] = [
                openai_v2_event_without_content(e) for e in raw.get("log_events", ())
            ]
    b = TraceBuilder(scope="opentelemetry.instrumentation.openai_v2")
    root = b.add("weather_app", {}, scope="app", start_ms=0, duration_ms=3000)
    add_example_span(b, spans[0], parent=root, start_ms=10, duration_ms=1000)
    add_example_span(b, spans[1], parent=root, start_ms=1100, duration_ms=1000)
    return b.normalize()


def openai_v2_event_without_content(event: dict[str, Any]) -> dict[str, Any]:
    """The default mode with capture off: bodies lose content and tool-call arguments, keeping
    tool-call name, id and type (reference section 2)."""
    body = copy.deepcopy(event["body"])
    message = body.get("message", body) if isinstance(body, dict) else {}
    message.pop("content", None)
    for call in message.get("tool_calls", ()):
        call["function"].pop("arguments", None)
    return {**event, "body": body or None}


@pytest.mark.parametrize("mode", ["latest_experimental", "default_legacy"])
def test_openai_v2_parallel_tool_calls_share_the_requesting_llm_call(mode):
    trace = openai_v2_trace(mode)
    assert [(c.name, c.call_id, c.llm_call_index, c.source) for c in trace.tool_calls] == [
        ("get_current_weather", SEATTLE, 0, "message"),
        ("get_current_weather", SF, 0, "message"),
    ]


@pytest.mark.parametrize("mode", ["latest_experimental", "default_legacy"])
def test_openai_v2_tool_arguments_and_results(mode):
    trace = openai_v2_trace(mode)
    assert [(c.arguments, c.result, c.performed) for c in trace.tool_calls] == [
        ({"location": "Seattle, WA"}, "50 degrees and raining", True),
        ({"location": "San Francisco, CA"}, "70 degrees and sunny", True),
    ]


@pytest.mark.parametrize("mode", ["latest_experimental", "default_legacy"])
def test_openai_v2_system_prompt_is_not_a_user_input(mode):
    trace = openai_v2_trace(mode)
    assert trace.user_inputs == ("What's the weather in Seattle and San Francisco today?",)
    assert trace.final_output == OPENAI_V2_ANSWER


@pytest.mark.parametrize("mode", ["latest_experimental", "default_legacy"])
def test_openai_v2_tokens_and_raw_tool_calls_finish_reason(mode):
    trace = openai_v2_trace(mode)
    assert [(c.input_tokens, c.output_tokens, c.finish_reason) for c in trace.llm_calls] == [
        (75, 51, "tool_calls"),
        (99, 25, "stop"),
    ]
    assert (trace.input_tokens, trace.output_tokens) == (75 + 99, 51 + 25)
    assert trace.gaps == ()


def test_openai_v2_latest_mode_models_are_response_models():
    trace = openai_v2_trace("latest_experimental")
    assert [c.model for c in trace.llm_calls] == ["gpt-4o-mini-2024-07-18"] * 2
    assert "genai" in trace.conventions


def test_openai_v2_default_mode_falls_back_to_request_model_and_choice_finish_reason():
    # The second default-mode span has neither gen_ai.response.model nor finish_reasons.
    trace = openai_v2_trace("default_legacy")
    assert [c.model for c in trace.llm_calls] == ["gpt-4o-mini-2024-07-18", "gpt-4o-mini"]
    assert trace.llm_calls[1].finish_reason == "stop"
    assert "genai-events" in trace.conventions


def test_openai_v2_content_off_keeps_tool_names_and_ids_but_arguments_are_a_gap():
    trace = openai_v2_trace("default_legacy", strip=True)
    assert [(c.name, c.call_id) for c in trace.tool_calls] == [
        ("get_current_weather", SEATTLE),
        ("get_current_weather", SF),
    ]
    assert [c.arguments_recorded for c in trace.tool_calls] == [False, False]
    assert trace.gap("tool_arguments") is not None


# =============================================================================================
# otelgenai_openai-agents-v2_contrib-span_processor_unit.json (contrib OpenAI Agents bridge)
# =============================================================================================

AGENTS_V2 = "otelgenai_openai-agents-v2_contrib-span_processor_unit.json"


def agents_v2_trace(*, serialise_tool_values: bool = False) -> tuple[AgentTrace, dict[str, str]]:
    workflow, agent, chat, tool = copy.deepcopy(example(AGENTS_V2)["spans"])
    if serialise_tool_values:  # the real pipeline's _serialize_tool_value (see _source.note)
        for key in ("gen_ai.tool.call.arguments", "gen_ai.tool.call.result"):
            tool["attributes"][key] = json.dumps(tool["attributes"][key])
    b = TraceBuilder(scope="opentelemetry.instrumentation.openai_agents")
    ids = {"workflow": add_example_span(b, workflow, start_ms=0, duration_ms=2000)}
    ids["agent"] = add_example_span(b, agent, parent=ids["workflow"], start_ms=10, duration_ms=1900)
    ids["chat"] = add_example_span(b, chat, parent=ids["agent"], start_ms=20, duration_ms=700)
    ids["tool"] = add_example_span(b, tool, parent=ids["agent"], start_ms=800, duration_ms=50)
    return b.normalize(), ids


def test_agents_v2_workflow_root_and_named_agent():
    trace, ids = agents_v2_trace()
    assert [(a.name, a.span_id, a.parent_agent_span_id) for a in trace.agents] == [
        (None, ids["workflow"], None),
        ("helper", ids["agent"], ids["workflow"]),
    ]


def test_agents_v2_tool_span_with_structured_arguments_and_result():
    trace, ids = agents_v2_trace()
    [call] = trace.tool_calls
    assert (call.name, call.call_id, call.arguments, call.span_id, call.agent) == (
        "lookup_weather",
        "call-42",
        {"city": "seattle"},
        ids["tool"],
        "helper",
    )
    assert json.loads(call.result) == {"temperature": 70}
    assert call.performed


def test_agents_v2_tool_values_serialised_as_strings_read_the_same():
    [call] = agents_v2_trace(serialise_tool_values=True)[0].tool_calls
    assert call.arguments == {"city": "seattle"}
    assert json.loads(call.result) == {"temperature": 70}


def test_agents_v2_llm_call_tokens_and_finish_reason():
    trace, _ = agents_v2_trace()
    assert [
        (c.model, c.input_tokens, c.output_tokens, c.finish_reason, c.agent)
        for c in trace.llm_calls
    ] == [
        ("gpt-4o", 7, 2, "stop", "helper"),
    ]
    assert (trace.input_tokens, trace.output_tokens) == (7, 2)


def test_agents_v2_without_content_reports_message_content_gap_with_genai_env_var():
    trace, _ = agents_v2_trace()
    gap = trace.gap("message_content")
    assert gap is not None and "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT" in gap.reason
    assert {"user_inputs", "final_output"} <= gap_fields(trace)
    assert trace.user_inputs == () and trace.final_output is None


def test_agents_v2_function_span_without_call_id_joins_the_model_tool_call_by_name():
    # Real traces: FunctionSpanData has no call id (see _source.note); with content captured
    # the chat span's tool_call carries it.
    _, agent, _, tool = copy.deepcopy(example(AGENTS_V2)["spans"])
    del tool["attributes"]["gen_ai.tool.call.id"]
    b = TraceBuilder(scope="opentelemetry.instrumentation.openai_agents")
    root = add_example_span(b, agent, start_ms=0, duration_ms=2000)
    b.add(
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.response.model": "gpt-4o",
            "gen_ai.input.messages": json.dumps(
                [parts_message("user", text("Weather in Seattle?"))]
            ),
            "gen_ai.output.messages": json.dumps(
                [
                    parts_message(
                        "assistant",
                        tool_call("call_Ab12", "lookup_weather", '{"city": "seattle"}'),
                        finish_reason="tool_call",
                    )
                ]
            ),
        },
        parent=root,
        kind="CLIENT",
        start_ms=10,
        duration_ms=500,
    )
    add_example_span(b, tool, parent=root, start_ms=600, duration_ms=50)
    trace = b.normalize()
    assert [(c.name, c.call_id, c.source, c.arguments) for c in trace.tool_calls] == [
        ("lookup_weather", "call_Ab12", "span+message", {"city": "seattle"}),
    ]


# =============================================================================================
# openinference_openinference-genai-fixture_llm_span_tool_calls.json (flattened OI LLM span)
# =============================================================================================

OI_LLM = "openinference_openinference-genai-fixture_llm_span_tool_calls.json"
OI_SCOPE = "openinference.instrumentation.openai"


def oi_llm_fixture_trace(*, as_run: bool) -> AgentTrace:
    attributes = example(OI_LLM)["attributes"]
    b = TraceBuilder(scope=OI_SCOPE)
    root = None
    if as_run:  # derived from the fixture's history: the agent, the first LLM call, the tool
        root = b.add(
            "weather_agent",
            {
                "openinference.span.kind": "AGENT",
                "agent.name": "weather_agent",
                "input.value": "Weather in Paris?",
                "output.value": OI_GENAI_ANSWER,
            },
            start_ms=0,
            duration_ms=3000,
        )
        b.add(
            "ChatCompletion",
            {
                "openinference.span.kind": "LLM",
                "llm.model_name": "gpt-4-0613",
                "llm.provider": "openai",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": "Weather in Paris?",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.contents.0.message_content.type": "text",
                "llm.output_messages.0.message.contents.0.message_content.text": (
                    "Absolutely! Let me check the weather for you."
                ),
                "llm.output_messages.0.message.tool_calls.0.tool_call.id": "1234",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "get_weather",
                "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": (
                    '{"location":"Paris"}'
                ),
            },
            parent=root,
            start_ms=10,
            duration_ms=800,
        )
        b.add(
            "get_weather",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "get_weather",
                "input.value": '{"location":"Paris"}',
                "output.value": "rainy, 57°F",
            },
            parent=root,
            start_ms=900,
            duration_ms=50,
        )
    b.add("ChatCompletion", attributes, parent=root, start_ms=1000, duration_ms=1200)
    return b.normalize()


def test_openinference_llm_fixture_user_input_from_messages_not_input_value_json():
    trace = oi_llm_fixture_trace(as_run=False)
    assert trace.user_inputs == ("Weather in Paris?",)
    assert trace.final_output == OI_GENAI_ANSWER


def test_openinference_llm_fixture_model_provider_tokens():
    trace = oi_llm_fixture_trace(as_run=False)
    assert [(c.model, c.provider, c.input_tokens, c.output_tokens) for c in trace.llm_calls] == [
        ("gpt-4-0613", "openai", 97, 52),
    ]
    assert trace.conventions == ("openinference",)
    assert trace.gap("message_content") is None


def test_openinference_tool_span_without_id_joins_request_by_name_and_counts_once():
    trace = oi_llm_fixture_trace(as_run=True)
    assert [
        (c.name, c.call_id, c.arguments, c.result, c.source, c.llm_call_index)
        for c in trace.tool_calls
    ] == [
        ("get_weather", "1234", {"location": "Paris"}, "rainy, 57°F", "span+message", 0),
    ]


def test_openinference_agent_root_gives_agent_input_and_output():
    trace = oi_llm_fixture_trace(as_run=True)
    assert [a.name for a in trace.agents] == ["weather_agent"]
    assert trace.user_inputs == ("Weather in Paris?",)
    assert trace.final_output == OI_GENAI_ANSWER
    assert len(trace.llm_calls) == 2


# =============================================================================================
# openinference_spec-tool_calling_complete-flow.json (spec doc: two LLM spans)
# =============================================================================================

OI_SPEC = "openinference_spec-tool_calling_complete-flow.json"


def oi_spec_trace() -> AgentTrace:
    data = example(OI_SPEC)
    first = data["llm_span_1_attributes"]
    # The doc gives span 2 as a fragment from index 2 on; indexes 0 and 1 are the history
    # span 1 shows (its user input and its tool-call output).
    second = {
        "openinference.span.kind": "LLM",
        "llm.input_messages.0.message.role": "user",
        "llm.input_messages.0.message.content": first["llm.input_messages.0.message.content"],
        **{
            k.replace("llm.output_messages.0.", "llm.input_messages.1."): v
            for k, v in first.items()
            if k.startswith("llm.output_messages.0.")
        },
        **data["llm_span_2_attributes_fragment"],
    }
    b = TraceBuilder(scope=OI_SCOPE)
    root = b.add("weather_app", {}, start_ms=0, duration_ms=3000)
    b.add("ChatCompletion", first, parent=root, start_ms=10, duration_ms=800)
    b.add("ChatCompletion", second, parent=root, start_ms=1000, duration_ms=800)
    return b.normalize()


def test_openinference_spec_tool_call_from_output_messages_with_result_from_tool_message():
    trace = oi_spec_trace()
    assert [
        (c.name, c.call_id, c.arguments, c.source, c.llm_call_index) for c in trace.tool_calls
    ] == [
        ("get_weather", "call_123", {"location": "Boston, MA"}, "message", 0),
    ]
    assert json.loads(trace.tool_calls[0].result) == {"temperature": 65, "condition": "cloudy"}
    assert trace.tool_calls[0].performed


def test_openinference_spec_user_input_and_final_output():
    trace = oi_spec_trace()
    assert trace.user_inputs == ("What's the weather in Boston?",)
    assert trace.final_output == "The current weather in Boston is 65°F and cloudy."


def test_openinference_spec_without_model_or_token_counts_reports_gaps():
    trace = oi_spec_trace()
    assert len(trace.llm_calls) == 2
    assert {"model", "tokens"} <= gap_fields(trace)
    assert trace.input_tokens is None and trace.output_tokens is None


# =============================================================================================
# openinference_openllmetry-converter-test_tool-span.json (Traceloop/LangChain tool span and
# the OpenInference span the converter makes of it)
# =============================================================================================

OI_CONVERTER = "openinference_openllmetry-converter-test_tool-span.json"
CONVERTER_RESULT = '{"city": "Paris", "temp_c": 21, "condition": "sunny"}'


def converter_trace(which: str) -> AgentTrace:
    data = example(OI_CONVERTER)
    b = TraceBuilder()
    if which == "traceloop":
        root = b.add(
            "weather.workflow",
            {"traceloop.span.kind": "workflow", "traceloop.entity.name": "weather"},
            scope="traceloop.sdk",
            start_ms=0,
            duration_ms=500,
        )
        add_example_span(
            b,
            data["traceloop_input_span"],
            parent=root,
            start_ms=10,
            duration_ms=100,
            scope="opentelemetry.instrumentation.langchain",
        )
    else:
        root = b.add("weather", {"openinference.span.kind": "CHAIN"}, start_ms=0, duration_ms=500)
        b.add(
            "get_weather",
            data["openinference_output_asserted"],
            parent=root,
            start_ms=10,
            duration_ms=100,
        )
    return b.normalize()


def test_traceloop_langchain_tool_span_unwraps_inputs_and_output_envelopes():
    [call] = converter_trace("traceloop").tool_calls
    assert (call.name, call.arguments, call.result) == (
        "get_weather",
        {"city": "Paris"},
        CONVERTER_RESULT,
    )
    assert call.performed


def test_openinference_converted_tool_span_reads_input_value_and_output_value():
    [call] = converter_trace("openinference").tool_calls
    assert (call.name, call.arguments, call.result) == (
        "get_weather",
        {"city": "Paris"},
        CONVERTER_RESULT,
    )


def test_traceloop_and_converted_openinference_tool_spans_normalise_alike():
    tl, oi = (
        converter_trace("traceloop").tool_calls[0],
        converter_trace("openinference").tool_calls[0],
    )
    assert (tl.name, tl.call_id, tl.arguments, tl.result) == (
        oi.name,
        oi.call_id,
        oi.arguments,
        oi.result,
    )


def test_converter_tool_span_has_no_call_id_gap():
    trace = converter_trace("traceloop")
    assert trace.tool_calls[0].call_id is None
    assert {"tool_call_ids", "llm_calls"} <= gap_fields(trace)
    assert "traceloop" in trace.conventions


# =============================================================================================
# traceloop_openllmetry-test_functions_tools_legacy.json (legacy flattened openai.chat span)
# =============================================================================================

TL_FUNCTIONS = "traceloop_openllmetry-test_functions_tools_legacy.json"
TL_CALL_ID = "call_b4lU3wKOqwO7Xb2Ksok2XWyB"


def traceloop_functions_trace(
    *, with_tool_span: bool = True, old_usage_keys: bool = False
) -> AgentTrace:
    raw = copy.deepcopy(example(TL_FUNCTIONS)["span"])
    if old_usage_keys:  # before Oct 2025 (see _source.note)
        attrs = raw["attributes"]
        attrs["gen_ai.usage.prompt_tokens"] = attrs.pop("gen_ai.usage.input_tokens")
        attrs["gen_ai.usage.completion_tokens"] = attrs.pop("gen_ai.usage.output_tokens")
    b = TraceBuilder(scope="opentelemetry.instrumentation.openai.v1")
    root = b.add(
        "weather.workflow",
        {
            "traceloop.span.kind": "workflow",
            "traceloop.entity.name": "weather",
            "traceloop.workflow.name": "weather",
            "traceloop.entity.input": json.dumps(
                {"args": ["What's the weather like in Boston?"], "kwargs": {}}
            ),
        },
        scope="traceloop.sdk",
        start_ms=0,
        duration_ms=2000,
    )
    add_example_span(b, raw, parent=root, start_ms=10, duration_ms=900)
    if with_tool_span:  # derived: the @tool-decorated function the app ran for the request
        b.add(
            "get_current_weather.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "get_current_weather",
                "traceloop.workflow.name": "weather",
                "traceloop.entity.input": json.dumps(
                    {"args": [], "kwargs": {"location": "Boston"}}
                ),
                "traceloop.entity.output": json.dumps("72 degrees and sunny"),
            },
            parent=root,
            scope="traceloop.sdk",
            start_ms=1000,
            duration_ms=20,
        )
    return b.normalize()


def test_traceloop_tool_span_joins_completion_tool_call_by_name_and_counts_once():
    trace = traceloop_functions_trace()
    assert [(c.name, c.call_id, c.source, c.result) for c in trace.tool_calls] == [
        ("get_current_weather", TL_CALL_ID, "span+message", "72 degrees and sunny"),
    ]


def test_traceloop_raw_model_arguments_with_newlines_are_parsed():
    [call] = traceloop_functions_trace(with_tool_span=False).tool_calls
    assert (call.name, call.call_id, call.arguments, call.source) == (
        "get_current_weather",
        TL_CALL_ID,
        {"location": "Boston"},
        "message",
    )


def test_traceloop_requested_call_without_tool_span_or_later_call_has_no_result_gap():
    trace = traceloop_functions_trace(with_tool_span=False)
    assert trace.tool_calls[0].result is None
    assert "tool_results" in gap_fields(trace)


def test_traceloop_legacy_llm_call_model_tokens_finish_reason():
    trace = traceloop_functions_trace()
    assert [
        (c.model, c.provider, c.input_tokens, c.output_tokens, c.finish_reason)
        for c in trace.llm_calls
    ] == [
        ("gpt-4-0613", "openai", 82, 16, "tool_calls"),
    ]
    assert "traceloop" in trace.conventions


def test_traceloop_old_usage_keys_give_the_same_tokens():
    trace = traceloop_functions_trace(old_usage_keys=True)
    assert (trace.input_tokens, trace.output_tokens) == (82, 16)


def test_traceloop_run_ending_on_a_tool_call_has_no_final_output_and_no_gap():
    trace = traceloop_functions_trace()
    assert trace.user_inputs == ("What's the weather like in Boston?",)
    assert trace.final_output is None
    assert trace.gap("final_output") is None


# =============================================================================================
# traceloop_openllmetry-test_chat_tool_calls_prompt_legacy.json (tool call + result in prompt)
# =============================================================================================

TL_PROMPT = "traceloop_openllmetry-test_chat_tool_calls_prompt_legacy.json"


def traceloop_prompt_trace() -> AgentTrace:
    data = example(TL_PROMPT)
    span = data["span"]
    attributes = {**span["attributes_asserted"], **span["attributes_implied_by_code"]}
    call = data["request_messages"][0]["tool_calls"][0]
    b = TraceBuilder(scope="opentelemetry.instrumentation.openai.v1")
    root = b.add("app", {}, scope="app", start_ms=0, duration_ms=3000)
    # derived: the earlier call whose completion is the assistant message of the prompt
    b.add(
        "openai.chat",
        {
            "llm.request.type": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-3.5-turbo",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.finish_reason": "tool_calls",
            "gen_ai.completion.0.tool_calls.0.id": call["id"],
            "gen_ai.completion.0.tool_calls.0.name": call["function"]["name"],
            "gen_ai.completion.0.tool_calls.0.arguments": call["function"]["arguments"],
        },
        parent=root,
        kind="CLIENT",
        start_ms=10,
        duration_ms=800,
    )
    b.add(span["name"], attributes, parent=root, kind="CLIENT", start_ms=1000, duration_ms=800)
    return b.normalize()


def test_traceloop_prompt_tool_result_joins_the_call_by_tool_call_id():
    trace = traceloop_prompt_trace()
    assert [(c.name, c.call_id, c.arguments, c.result) for c in trace.tool_calls] == [
        (
            "get_current_weather",
            "1",
            {"location": "San Francisco"},
            "The weather in San Francisco is 70 degrees and sunny.",
        ),
    ]


def test_traceloop_prompt_assistant_and_tool_messages_are_not_user_inputs():
    trace = traceloop_prompt_trace()
    assert trace.user_inputs == ()
    assert len(trace.llm_calls) == 2


# =============================================================================================
# agent-framework_semantic-kernel-docs_observability_invoke_agent_console.json
# =============================================================================================

AF_AGENT = "agent-framework_semantic-kernel-docs_observability_invoke_agent_console.json"
AF_SCOPE = "agent_framework"
JOKE = "Why did the pirate go to school? To improve his arrrticulation!"


def af_agent_trace(*, with_chat: bool = True, chat_usage: bool = True) -> AgentTrace:
    raw = example(AF_AGENT)["span"]
    agent_attrs = raw["attributes"]
    b = TraceBuilder(scope=AF_SCOPE)
    root = add_example_span(b, raw, start_ms=0, duration_ms=8600)
    if with_chat:  # derived: the one chat call the agent made (same response id)
        chat = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
            "gen_ai.response.id": agent_attrs["gen_ai.response.id"],
            "gen_ai.response.finish_reasons": '["stop"]',
            "gen_ai.input.messages": json.dumps(
                [parts_message("user", text("Tell me a joke about a pirate."))]
            ),
            "gen_ai.output.messages": json.dumps(
                [parts_message("assistant", text(JOKE), finish_reason="stop")]
            ),
        }
        if chat_usage:
            chat.update({"gen_ai.usage.input_tokens": 26, "gen_ai.usage.output_tokens": 29})
        b.add("chat gpt-4o-mini", chat, parent=root, start_ms=100, duration_ms=8400)
    return b.normalize()


def test_agent_framework_agent_usage_is_not_added_to_its_chat_usage():
    trace = af_agent_trace()
    assert (trace.input_tokens, trace.output_tokens) == (26, 29)
    assert "llm_call_tokens" not in gap_fields(trace)


def test_agent_framework_agent_usage_is_used_when_chat_spans_have_none():
    trace = af_agent_trace(chat_usage=False)
    assert (trace.input_tokens, trace.output_tokens) == (26, 29)
    assert trace.llm_calls[0].input_tokens is None
    assert "llm_call_tokens" in gap_fields(trace)


def test_agent_framework_finish_reasons_json_string_is_decoded():
    trace = af_agent_trace()
    assert [c.finish_reason for c in trace.llm_calls] == ["stop"]


def test_agent_framework_chat_call_belongs_to_the_invoked_agent():
    trace = af_agent_trace()
    assert [a.name for a in trace.agents] == ["Joker"]
    assert [(c.model, c.agent) for c in trace.llm_calls] == [("gpt-4o-mini-2024-07-18", "Joker")]
    assert "agent-framework" in trace.conventions


def test_agent_framework_user_input_and_answer_from_chat_messages():
    trace = af_agent_trace()
    assert trace.user_inputs == ("Tell me a joke about a pirate.",)
    assert trace.final_output == JOKE


def test_agent_framework_agent_span_alone_has_agent_usage_and_no_llm_calls_gap():
    trace = af_agent_trace(with_chat=False)
    assert [a.name for a in trace.agents] == ["Joker"]
    assert trace.llm_calls == ()
    assert (trace.input_tokens, trace.output_tokens) == (26, 29)
    assert "llm_calls" in gap_fields(trace)


# =============================================================================================
# agent-framework_python-test_observability_execute_tool.json
# =============================================================================================

AF_TOOL = "agent-framework_python-test_observability_execute_tool.json"
GREET_CALL_ID = "call_4UkPq5mHHmFv9pX1"


def af_tool_span(name: str, **overrides: Any) -> dict[str, Any]:
    raw = copy.deepcopy(next(s for s in example(AF_TOOL)["spans"] if s["name"] == name))
    if raw["attributes"].get("agent_framework.function.invocation.duration") == "<float seconds>":
        raw["attributes"]["agent_framework.function.invocation.duration"] = 0.0021
    raw["attributes"].update(overrides)
    return raw


def af_greet_trace(*, with_chats: bool) -> AgentTrace:
    greet = af_tool_span("execute_tool greet")
    arguments = json.loads(greet["attributes"]["gen_ai.tool.call.arguments"])
    result = greet["attributes"]["gen_ai.tool.call.result"]
    b = TraceBuilder(scope=AF_SCOPE)
    root = b.add(
        "invoke_agent Greeter",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "Greeter",
            "gen_ai.provider.name": "openai",
        },
        start_ms=0,
        duration_ms=3000,
    )
    history = [parts_message("user", text("Say hello in Korean"))]
    request = tool_call(GREET_CALL_ID, "greet", arguments)
    if with_chats:  # derived: the chat that asked for greet, the chat that used its result
        b.add(
            "chat gpt-4o-mini",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.finish_reasons": '["tool_calls"]',
                "gen_ai.input.messages": json.dumps(history, ensure_ascii=False),
                "gen_ai.output.messages": json.dumps(
                    [parts_message("assistant", request)], ensure_ascii=False
                ),
            },
            parent=root,
            start_ms=10,
            duration_ms=800,
        )
    add_example_span(b, greet, parent=root, start_ms=900, duration_ms=5)
    if with_chats:
        b.add(
            "chat gpt-4o-mini",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.response.finish_reasons": '["stop"]',
                "gen_ai.input.messages": json.dumps(
                    [
                        *history,
                        parts_message("assistant", request),
                        parts_message("tool", tool_response(GREET_CALL_ID, result)),
                    ],
                    ensure_ascii=False,
                ),
                "gen_ai.output.messages": json.dumps(
                    [parts_message("assistant", text("안녕하세요!"))], ensure_ascii=False
                ),
            },
            parent=root,
            start_ms=1000,
            duration_ms=800,
        )
    return b.normalize()


def test_agent_framework_unknown_call_id_is_not_an_id_and_the_model_id_is_joined():
    trace = af_greet_trace(with_chats=True)
    assert [(c.name, c.call_id, c.source) for c in trace.tool_calls] == [
        ("greet", GREET_CALL_ID, "span+message")
    ]


def test_agent_framework_tool_arguments_and_result_keep_non_ascii_text():
    [call] = af_greet_trace(with_chats=True).tool_calls
    assert call.arguments == {"message": "안녕하세요"}
    assert call.result == "Greeted: 안녕하세요"
    assert call.performed


def test_agent_framework_unknown_call_id_alone_is_reported_as_missing():
    trace = af_greet_trace(with_chats=False)
    assert [c.call_id for c in trace.tool_calls] == [None]
    assert "tool_call_ids" in gap_fields(trace)


def test_agent_framework_arguments_string_none_means_no_arguments():
    b = TraceBuilder(scope=AF_SCOPE)
    add_example_span(
        b,
        af_tool_span("execute_tool greet", **{"gen_ai.tool.call.arguments": "None"}),
        start_ms=0,
        duration_ms=5,
    )
    [call] = b.normalize().tool_calls
    assert call.arguments == {}
    assert call.arguments_recorded


def test_agent_framework_tool_span_without_sensitive_data_keeps_id_and_reports_missing_content():
    b = TraceBuilder(scope=AF_SCOPE)
    add_example_span(b, af_tool_span("execute_tool test_function"), start_ms=0, duration_ms=5)
    trace = b.normalize()
    assert [(c.name, c.call_id, c.arguments_recorded, c.result) for c in trace.tool_calls] == [
        ("test_function", "test_call_123", False, None),
    ]
    assert {"tool_arguments", "tool_results"} <= gap_fields(trace)


def test_agent_framework_tool_exception_is_an_error_and_not_performed():
    b = TraceBuilder(scope=AF_SCOPE)
    add_example_span(
        b,
        af_tool_span("execute_tool greet", **{"error.type": "ValueError"}),
        start_ms=0,
        duration_ms=5,
        error="ValueError('greeting failed')",
        events=(exception_event("ValueError", "greeting failed", 4),),
    )
    [call] = b.normalize().tool_calls
    assert call.error is not None and "greeting failed" in call.error
    assert not call.performed


# =============================================================================================
# pydantic-ai_test_logfire_invoke_agent_chat_execute_tool.json (instrumentation version 5)
# invoke_agent my_agent > chat test, execute_tool my_ret, chat test (see _source.note)
# =============================================================================================

PAI = "pydantic-ai_test_logfire_invoke_agent_chat_execute_tool.json"
PAI_CALL_ID = "pyd_ai_tool_call_id__my_ret"
PAI_CONVERSATION = "0198f3c5-4a10-7a2b-9e11-3c5d2f0b8a77"
PAI_PLACEHOLDERS = {
    "gen_ai.tool.call.id": PAI_CALL_ID,
    "gen_ai.conversation.id": PAI_CONVERSATION,
    "gen_ai.agent.call.id": "0198f3c5-4a11-7c3d-8f22-6a1b9c0d2e44",
}
PAI_MODEL_REQUEST_PARAMETERS = json.dumps(
    {
        "function_tools": [
            {
                "name": "my_ret",
                "parameters_json_schema": {
                    "additionalProperties": False,
                    "properties": {"x": {"type": "integer"}},
                    "required": ["x"],
                    "type": "object",
                },
            }
        ],
        "output_mode": "text",
        "output_tools": [],
        "allow_text_output": True,
    }
)


def pai_attributes(raw: dict[str, Any]) -> dict[str, Any]:
    """The snapshot's attributes with IsStr() placeholders replaced by fixed realistic values."""
    out = {}
    for key, value in raw["attributes"].items():
        if value == "<str>":
            value = PAI_PLACEHOLDERS[key]
        elif isinstance(value, str) and value.startswith("<JSON string"):
            value = PAI_MODEL_REQUEST_PARAMETERS
        elif isinstance(value, str):
            value = value.replace('"<str>"', json.dumps(PAI_CALL_ID))
        out[key] = value
    return out


def pai_trace(*, tool_span: bool = True, chat_usage: bool = True) -> AgentTrace:
    agent_raw, chat_raw = example(PAI)["spans"][:2]
    agent, chat1 = pai_attributes(agent_raw), pai_attributes(chat_raw)
    all_messages = json.loads(agent["pydantic_ai.all_messages"])
    # derived: the second chat (history = all_messages up to the answer;
    # usage = aggregate - first chat)
    chat2 = {
        **chat1,
        "gen_ai.input.messages": json.dumps(all_messages[:3]),
        "gen_ai.output.messages": json.dumps(all_messages[3:]),
        "gen_ai.usage.input_tokens": 103 - 51,
        "gen_ai.usage.output_tokens": 12 - 4,
    }
    if not chat_usage:
        for attrs in (chat1, chat2):
            del attrs["gen_ai.usage.input_tokens"], attrs["gen_ai.usage.output_tokens"]
    b = TraceBuilder(scope="pydantic-ai")
    root = b.add(agent_raw["name"], agent, start_ms=0, duration_ms=300)
    b.add(chat_raw["name"], chat1, parent=root, kind="CLIENT", start_ms=10, duration_ms=100)
    if tool_span:  # derived from the execute_tool snapshot, for the my_ret call of this run
        b.add(
            "execute_tool my_ret",
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "my_ret",
                "gen_ai.tool.call.id": PAI_CALL_ID,
                "gen_ai.tool.call.arguments": '{"x":0}',
                "gen_ai.tool.call.result": "1",
                "logfire.msg": "running tool: my_ret",
                "gen_ai.conversation.id": PAI_CONVERSATION,
                "gen_ai.agent.name": "my_agent",
            },
            parent=root,
            start_ms=120,
            duration_ms=5,
        )
    b.add(chat_raw["name"], chat2, parent=root, kind="CLIENT", start_ms=130, duration_ms=100)
    return b.normalize()


def test_pydantic_ai_tool_call_in_chat_output_and_tool_span_counts_once():
    trace = pai_trace()
    assert [(c.name, c.call_id, c.arguments, c.result, c.source) for c in trace.tool_calls] == [
        ("my_ret", PAI_CALL_ID, {"x": 0}, "1", "span+message"),
    ]


def test_pydantic_ai_tool_result_read_from_result_key_in_user_role_message():
    trace = pai_trace(tool_span=False)
    assert [(c.name, c.call_id, c.result, c.source) for c in trace.tool_calls] == [
        ("my_ret", PAI_CALL_ID, "1", "message"),
    ]


def test_pydantic_ai_tool_results_in_user_messages_are_not_user_inputs():
    assert pai_trace().user_inputs == ("Hello",)


def test_pydantic_ai_final_result_is_the_final_output():
    assert pai_trace().final_output == '{"my_ret":"1"}'


def test_pydantic_ai_aggregated_usage_is_not_added_to_chat_usage():
    trace = pai_trace()
    assert [(c.input_tokens, c.output_tokens) for c in trace.llm_calls] == [(51, 4), (52, 8)]
    assert (trace.input_tokens, trace.output_tokens) == (103, 12)


def test_pydantic_ai_aggregated_usage_is_used_when_no_chat_span_has_usage():
    trace = pai_trace(chat_usage=False)
    assert (trace.input_tokens, trace.output_tokens) == (103, 12)
    assert "llm_call_tokens" in gap_fields(trace)


def test_pydantic_ai_chat_calls_model_provider_and_agent():
    trace = pai_trace()
    assert [a.name for a in trace.agents] == ["my_agent"]
    assert [(c.model, c.provider, c.agent) for c in trace.llm_calls] == [
        ("test", "test", "my_agent")
    ] * 2


def test_pydantic_ai_conversation_id():
    assert pai_trace().conversation_id == PAI_CONVERSATION


def test_pydantic_ai_recognised_with_no_gaps():
    trace = pai_trace()
    assert {"pydantic-ai", "genai"} <= set(trace.conventions)
    assert trace.gaps == ()


def pai_tool_variant_trace(index: int, **kw: Any) -> AgentTrace:
    raw = example(PAI)["spans"][index]
    b = TraceBuilder(scope="pydantic-ai")
    root = b.add(
        "invoke_agent my_agent",
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "my_agent",
            "agent_name": "my_agent",
        },
        start_ms=0,
        duration_ms=100,
    )
    b.add(raw["name"], pai_attributes(raw), parent=root, start_ms=10, duration_ms=5, **kw)
    return b.normalize()


def test_pydantic_ai_execute_tool_span_arguments_and_result():
    [call] = pai_tool_variant_trace(2).tool_calls
    assert (call.name, call.call_id, call.arguments, call.result) == (
        "add_numbers",
        PAI_CALL_ID,
        {"x": 42, "y": 42},
        "84",
    )
    assert call.performed and call.agent == "my_agent"


def test_pydantic_ai_model_retry_tool_is_an_error_with_the_retry_prompt_as_result():
    trace = pai_tool_variant_trace(
        3, error="Tool error", events=(exception_event("ModelRetry", "Tool error", 14),)
    )
    [call] = trace.tool_calls
    assert call.result == "Tool error\n\nFix the errors and try again."
    assert call.error is not None
    assert not call.performed


def test_pydantic_ai_logfire_error_level_alone_marks_the_tool_call_failed():
    [call] = pai_tool_variant_trace(3).tool_calls
    assert call.error is not None
    assert not call.performed


# =============================================================================================
# pydantic-ai_v1-legacy_test_logfire_all_messages_events.json (instrumentation version 1)
# 'agent run' > chat test, running 1 tool > running tool, chat test (upstream snapshot tree)
# =============================================================================================

PAI_V1 = "pydantic-ai_v1-legacy_test_logfire_all_messages_events.json"


def pai_v1_events() -> list[dict[str, Any]]:
    """The example's all_messages_events, placeholders filled, with the final assistant event
    the snapshot has after them (the example elides it)."""
    events = [
        e
        for e in example(PAI_V1)["agent_span_attribute_all_messages_events"]
        if isinstance(e, dict)
    ]
    events = json.loads(json.dumps(events).replace('"<str>"', json.dumps(PAI_CALL_ID)))
    events.append(
        {
            "role": "assistant",
            "content": '{"my_ret":"1"}',
            "gen_ai.message.index": 3,
            "event.name": "gen_ai.assistant.message",
        }
    )
    return events


def pai_v1_trace(*, agent_only: bool = False) -> AgentTrace:
    events = pai_v1_events()
    user, assistant, tool, answer = events
    b = TraceBuilder(scope="pydantic-ai")
    # Upstream snapshot: the v1 agent span carries the run's usage as gen_ai.usage.* (103/12).
    root = b.add(
        "agent run",
        {
            "model_name": "test",
            "agent_name": "my_agent",
            "logfire.msg": "my_agent run",
            "gen_ai.usage.input_tokens": 103,
            "gen_ai.usage.output_tokens": 12,
            "all_messages_events": json.dumps(events),
            "final_result": '{"my_ret":"1"}',
        },
        start_ms=0,
        duration_ms=300,
    )
    if agent_only:
        return b.normalize()
    chat = {
        "gen_ai.operation.name": "chat",
        "gen_ai.system": "test",
        "gen_ai.request.model": "test",
        "gen_ai.response.model": "test",
        "model_request_parameters": PAI_MODEL_REQUEST_PARAMETERS,
    }
    choice_call = {
        "event.name": "gen_ai.choice",
        "index": 0,
        "message": {"role": "assistant", "tool_calls": assistant["tool_calls"]},
    }
    b.add(
        "chat test",
        {
            **chat,
            "gen_ai.usage.input_tokens": 51,
            "gen_ai.usage.output_tokens": 4,
            "events": json.dumps([user, choice_call]),
        },
        parent=root,
        kind="CLIENT",
        start_ms=10,
        duration_ms=100,
    )
    tools = b.add(
        "running 1 tool",
        {"logfire.msg": "running 1 tool"},
        parent=root,
        start_ms=115,
        duration_ms=10,
    )
    b.add(
        "running tool",
        {
            "gen_ai.tool.name": "my_ret",
            "gen_ai.tool.call.id": PAI_CALL_ID,
            "tool_arguments": '{"x":0}',
            "tool_response": "1",
            "logfire.msg": "running tool: my_ret",
        },
        parent=tools,
        start_ms=116,
        duration_ms=5,
    )
    choice_answer = {
        "event.name": "gen_ai.choice",
        "index": 0,
        "message": {"role": "assistant", "content": answer["content"]},
    }
    b.add(
        "chat test",
        {
            **chat,
            "gen_ai.usage.input_tokens": 52,
            "gen_ai.usage.output_tokens": 8,
            "events": json.dumps([user, assistant, tool, choice_answer]),
        },
        parent=root,
        kind="CLIENT",
        start_ms=130,
        duration_ms=100,
    )
    return b.normalize()


def test_pydantic_ai_v1_all_messages_events_tool_message_is_not_a_user_input():
    assert pai_v1_trace(agent_only=True).user_inputs == ("Hello",)


def test_pydantic_ai_v1_running_tool_joins_the_chat_tool_call_once():
    trace = pai_v1_trace()
    assert [(c.name, c.call_id, c.arguments, c.result, c.source) for c in trace.tool_calls] == [
        ("my_ret", PAI_CALL_ID, {"x": 0}, "1", "span+message"),
    ]


def test_pydantic_ai_v1_agent_usage_is_not_added_to_chat_usage():
    trace = pai_v1_trace()
    assert len(trace.llm_calls) == 2
    assert (trace.input_tokens, trace.output_tokens) == (103, 12)


def test_pydantic_ai_v1_user_input_and_final_result():
    trace = pai_v1_trace()
    assert trace.user_inputs == ("Hello",)
    assert trace.final_output == '{"my_ret":"1"}'
    assert {"pydantic-ai", "genai-events"} <= set(trace.conventions)


# =============================================================================================
# logfire_openai-agents_test_responses_handoff_tool.json (Logfire instrument_openai_agents)
# =============================================================================================

LOGFIRE = "logfire_openai-agents_test_responses_handoff_tool.json"
RANDOM_CALL, HANDOFF_CALL = "call_vwqy7HyGGnNht9NNfxMnnouY", "call_oEA0MnUXCwKevx8txteoopNL"


def logfire_trace(*, json_strings: bool = True) -> AgentTrace:
    """The snapshot's spans with their own tree and times. Dict and list attributes are JSON
    strings on the real span (_source.note: parse_json_attributes=True decoded them)."""
    spans = sorted(example(LOGFIRE)["spans"], key=lambda s: s["start_time"])
    b = TraceBuilder(scope="logfire.openai_agents")
    ids: dict[int, str] = {}
    for raw in spans:
        attributes = {
            k: json.dumps(v) if json_strings and isinstance(v, (dict, list)) else v
            for k, v in raw["attributes"].items()
        }
        parent = ids[raw["parent"]["span_id"]] if raw["parent"] else None
        ids[raw["context"]["span_id"]] = b.add(
            raw["name"],
            attributes,
            parent=parent,
            start_ms=raw["start_time"] / 1e6,
            duration_ms=(raw["end_time"] - raw["start_time"]) / 1e6,
        )
    return b.normalize()


def test_logfire_function_span_joins_the_response_tool_call_by_name():
    random_number = next(c for c in logfire_trace().tool_calls if c.name == "random_number")
    assert (
        random_number.call_id,
        random_number.arguments,
        random_number.result,
        random_number.source,
    ) == (RANDOM_CALL, {}, "4", "span+message")
    assert random_number.agent == "agent1" and random_number.performed


def test_logfire_handoff_tool_call_seen_only_in_messages_has_its_result():
    handoff = next(c for c in logfire_trace().tool_calls if c.name == "transfer_to_agent2")
    assert (handoff.call_id, handoff.arguments, handoff.source) == (HANDOFF_CALL, {}, "message")
    assert json.loads(handoff.result) == {"assistant": "agent2"}


def test_logfire_both_tool_calls_were_requested_in_parallel_by_the_first_response():
    trace = logfire_trace()
    assert sorted((c.name, c.llm_call_index) for c in trace.tool_calls) == [
        ("random_number", 0),
        ("transfer_to_agent2", 0),
    ]
    assert trace.llm_calls[0].tool_call_ids == (RANDOM_CALL, HANDOFF_CALL)


def test_logfire_tool_calls_are_in_execution_order():
    assert logfire_trace().tools_called == ("random_number", "transfer_to_agent2")


def test_logfire_turn_and_task_usage_are_not_added_to_response_usage():
    trace = logfire_trace()
    assert [(c.model, c.input_tokens, c.output_tokens, c.agent) for c in trace.llm_calls] == [
        ("gpt-4o-2024-08-06", 0, 0, "agent1"),
        ("gpt-4o-2024-08-06", 89, 18, "agent2"),
    ]
    assert (trace.input_tokens, trace.output_tokens) == (89, 18)


def test_logfire_user_input_and_final_assistant_event():
    trace = logfire_trace()
    assert trace.user_inputs == ("Generate a random number then, hand off to agent2.",)
    assert (
        trace.final_output
        == "The random number generated is 4, and it's been handed off to agent2."
    )


def test_logfire_structured_attributes_read_the_same_as_json_strings():
    assert logfire_trace(json_strings=False).to_dict() == logfire_trace().to_dict()


def test_logfire_agents_conventions_and_no_gaps():
    trace = logfire_trace()
    assert [a.name for a in trace.agents] == ["agent1", "agent2"]
    assert "openai-agents" in trace.conventions
    assert trace.gaps == ()


# =============================================================================================
# Cross-convention rules, on small hand-built traces
# =============================================================================================


def genai_chat(
    b: TraceBuilder,
    *,
    parent: str | None,
    start_ms: float,
    inputs: list,
    outputs: list,
    usage: tuple[int, int] | None = None,
    name: str = "chat gpt-4o",
    **extra: Any,
) -> str:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        **extra,
    }
    if usage:
        attributes.update(
            {"gen_ai.usage.input_tokens": usage[0], "gen_ai.usage.output_tokens": usage[1]}
        )
    return b.add(name, attributes, parent=parent, kind="CLIENT", start_ms=start_ms, duration_ms=100)


def genai_tool(
    b: TraceBuilder,
    name: str,
    *,
    parent: str | None,
    start_ms: float,
    call_id: str | None = None,
    arguments: Any = None,
    result: str | None = None,
    **kw: Any,
) -> str:
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if call_id is not None:
        attributes["gen_ai.tool.call.id"] = call_id
    if arguments is not None:
        attributes["gen_ai.tool.call.arguments"] = json.dumps(arguments)
    if result is not None:
        attributes["gen_ai.tool.call.result"] = result
    return b.add(
        f"execute_tool {name}", attributes, parent=parent, start_ms=start_ms, duration_ms=10, **kw
    )


def test_parallel_calls_executed_out_of_order_join_their_own_request_by_id():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=1000
    )
    genai_chat(
        b,
        parent=root,
        start_ms=10,
        inputs=[parts_message("user", text("Paris and London?"))],
        outputs=[
            parts_message(
                "assistant",
                tool_call("c_paris", "get_weather", {"city": "Paris"}),
                tool_call("c_london", "get_weather", {"city": "London"}),
            )
        ],
    )
    genai_tool(b, "get_weather", parent=root, start_ms=200, call_id="c_london", result="fog")
    genai_tool(b, "get_weather", parent=root, start_ms=210, call_id="c_paris", result="rain")
    trace = b.normalize()
    assert [(c.call_id, c.arguments, c.result, c.source) for c in trace.tool_calls] == [
        ("c_london", {"city": "London"}, "fog", "span+message"),
        ("c_paris", {"city": "Paris"}, "rain", "span+message"),
    ]


def test_tool_spans_without_ids_join_requests_by_name_and_order():
    b = TraceBuilder(scope="traceloop.sdk")
    root = b.add(
        "search.workflow", {"traceloop.span.kind": "workflow"}, start_ms=0, duration_ms=1000
    )
    history = [parts_message("user", text("Find a and then b"))]
    for i, (call_id, query) in enumerate((("s1", "a"), ("s2", "b"))):
        genai_chat(
            b,
            parent=root,
            start_ms=10 + i * 200,
            inputs=history,
            outputs=[parts_message("assistant", tool_call(call_id, "search", {"q": query}))],
        )
        b.add(
            "search.tool",
            {
                "traceloop.span.kind": "tool",
                "traceloop.entity.name": "search",
                "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"q": query}}),
                "traceloop.entity.output": json.dumps(f"results for {query}"),
            },
            parent=root,
            start_ms=150 + i * 200,
            duration_ms=10,
        )
    trace = b.normalize()
    assert [
        (c.call_id, c.arguments, c.result, c.source, c.llm_call_index) for c in trace.tool_calls
    ] == [
        ("s1", {"q": "a"}, "results for a", "span+message", 0),
        ("s2", {"q": "b"}, "results for b", "span+message", 1),
    ]


def test_sequential_tool_calls_have_different_llm_call_indexes():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=1000
    )
    user = parts_message("user", text("Book it"))
    first, second = tool_call("c1", "find", {}), tool_call("c2", "book", {"id": 7})
    genai_chat(
        b, parent=root, start_ms=10, inputs=[user], outputs=[parts_message("assistant", first)]
    )
    genai_tool(b, "find", parent=root, start_ms=120, call_id="c1", result='{"id": 7}')
    genai_chat(
        b,
        parent=root,
        start_ms=200,
        inputs=[user, parts_message("assistant", first)],
        outputs=[parts_message("assistant", second)],
    )
    genai_tool(b, "book", parent=root, start_ms=320, call_id="c2", result="booked")
    genai_chat(
        b,
        parent=root,
        start_ms=400,
        inputs=[user],
        outputs=[parts_message("assistant", text("Done."))],
    )
    trace = b.normalize()
    assert [(c.name, c.llm_call_index) for c in trace.tool_calls] == [("find", 0), ("book", 1)]
    assert trace.final_output == "Done."


def test_tool_span_with_error_status_and_exception_event_is_attempted_not_performed():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=1000
    )
    genai_tool(
        b,
        "cancel_reservation",
        parent=root,
        start_ms=10,
        call_id="c1",
        arguments={"id": "ZFA04Y"},
        error="KeyError('ZFA04Y')",
        events=(exception_event("KeyError", "reservation ZFA04Y not found", 15),),
    )
    trace = b.normalize()
    [call] = trace.tool_calls
    assert call.error is not None and "ZFA04Y" in call.error
    assert not call.performed
    assert trace.to_dict()["tool_calls"][0]["performed"] is False


def test_tool_result_reporting_an_error_is_attempted_not_performed():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=1000
    )
    genai_tool(
        b,
        "get_reservation",
        parent=root,
        start_ms=10,
        call_id="c1",
        arguments={"id": "XXXX"},
        result="Error: reservation not found",
    )
    [call] = b.normalize().tool_calls
    assert call.result == "Error: reservation not found"
    assert call.error is not None
    assert not call.performed


def test_llm_span_wrapping_a_client_llm_span_counts_as_one_call():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a",
        {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "a"},
        start_ms=0,
        duration_ms=1000,
    )
    inputs = [parts_message("user", text("Hi"))]
    outputs = [parts_message("assistant", text("Hello!"), finish_reason="stop")]
    outer = genai_chat(
        b,
        parent=root,
        start_ms=10,
        inputs=inputs,
        outputs=outputs,
        usage=(12, 3),
        model_request_parameters="{}",
    )  # framework span (pydantic-ai)
    b.add(
        "chat gpt-4o",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "openai",
            "gen_ai.request.model": "gpt-4o",
            "gen_ai.response.model": "gpt-4o-2024-08-06",
            "gen_ai.usage.input_tokens": 12,
            "gen_ai.usage.output_tokens": 3,
        },
        parent=outer,
        kind="CLIENT",
        start_ms=12,
        duration_ms=90,
        scope="opentelemetry.instrumentation.openai_v2",
    )
    trace = b.normalize()
    assert len(trace.llm_calls) == 1
    assert (trace.input_tokens, trace.output_tokens) == (12, 3)
    assert trace.final_output == "Hello!"


def test_tool_call_in_both_wrapper_and_client_llm_output_counts_once():
    b = TraceBuilder()
    root = b.add(
        "invoke_agent a", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=1000
    )
    inputs = [parts_message("user", text("Weather?"))]
    outputs = [parts_message("assistant", tool_call("c1", "get_weather", {"city": "Oslo"}))]
    outer = genai_chat(b, parent=root, start_ms=10, inputs=inputs, outputs=outputs)
    genai_chat(b, parent=outer, start_ms=12, inputs=inputs, outputs=outputs, usage=(20, 5))
    genai_tool(b, "get_weather", parent=root, start_ms=200, call_id="c1", result="snow")
    trace = b.normalize()
    assert len(trace.llm_calls) == 1
    assert [(c.call_id, c.result, c.source) for c in trace.tool_calls] == [
        ("c1", "snow", "span+message")
    ]


# --- content not captured: the gap names the setting of the convention that was seen ---------


def _no_content_genai(b: TraceBuilder) -> None:
    attrs = dict(example(OPENAI_V2)["latest_experimental"]["spans"][1]["attributes"])
    del attrs["gen_ai.input.messages"], attrs["gen_ai.output.messages"]
    b.add("chat gpt-4o-mini", attrs, kind="CLIENT", scope="opentelemetry.instrumentation.openai_v2")


def _no_content_openinference(b: TraceBuilder) -> None:
    attrs = {
        k: v
        for k, v in example(OI_LLM)["attributes"].items()
        if not k.startswith(("llm.input_messages.", "llm.output_messages.", "input.", "output."))
    }
    b.add("ChatCompletion", attrs, scope=OI_SCOPE)


def _no_content_traceloop(b: TraceBuilder) -> None:
    attrs = {
        k: v
        for k, v in example(TL_FUNCTIONS)["span"]["attributes"].items()
        if not k.startswith(("gen_ai.prompt.", "gen_ai.completion."))
    }
    b.add("openai.chat", attrs, kind="CLIENT", scope="opentelemetry.instrumentation.openai.v1")


def _no_content_agent_framework(b: TraceBuilder) -> None:
    root = add_example_span(
        b, example(AF_AGENT)["span"], start_ms=0, duration_ms=100, scope=AF_SCOPE
    )
    b.add(
        "chat gpt-4o-mini",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": "gpt-4o-mini",
            "gen_ai.response.finish_reasons": '["stop"]',
            "gen_ai.usage.input_tokens": 26,
            "gen_ai.usage.output_tokens": 29,
        },
        parent=root,
        start_ms=1,
        duration_ms=90,
        scope=AF_SCOPE,
    )


def _no_content_pydantic_ai(b: TraceBuilder) -> None:
    agent_raw, chat_raw = example(PAI)["spans"][:2]
    agent = {
        k: v
        for k, v in pai_attributes(agent_raw).items()
        if k not in ("pydantic_ai.all_messages", "final_result")
    }
    chat = {
        k: v
        for k, v in pai_attributes(chat_raw).items()
        if k not in ("gen_ai.input.messages", "gen_ai.output.messages")
    }
    root = b.add(agent_raw["name"], agent, start_ms=0, duration_ms=100, scope="pydantic-ai")
    b.add(
        chat_raw["name"],
        chat,
        parent=root,
        kind="CLIENT",
        start_ms=1,
        duration_ms=90,
        scope="pydantic-ai",
    )


@pytest.mark.parametrize(
    ("build", "setting"),
    [
        (_no_content_genai, "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"),
        (_no_content_openinference, "OPENINFERENCE_HIDE_INPUTS"),
        (_no_content_traceloop, "TRACELOOP_TRACE_CONTENT"),
        (_no_content_agent_framework, "ENABLE_SENSITIVE_DATA"),
        (_no_content_pydantic_ai, "include_content"),
    ],
    ids=["genai", "openinference", "traceloop", "agent-framework", "pydantic-ai"],
)
def test_llm_spans_without_messages_report_message_content_gap_naming_the_setting(build, setting):
    b = TraceBuilder()
    build(b)
    trace = b.normalize()
    assert trace.llm_calls
    gap = trace.gap("message_content")
    assert gap is not None and setting in gap.reason


# --- every example file is exercised above ---------------------------------------------------

COVERED = {
    SEMCONV_DOC,
    LEGACY_EVENTS,
    OI_GENAI_CLIENT,
    OI_GENAI_TOOL,
    DEPRECATED,
    OPENAI_V2,
    AGENTS_V2,
    OI_LLM,
    OI_SPEC,
    OI_CONVERTER,
    TL_FUNCTIONS,
    TL_PROMPT,
    AF_AGENT,
    AF_TOOL,
    PAI,
    PAI_V1,
    LOGFIRE,
}


def test_every_span_example_file_has_tests():
    assert {p.name for p in EXAMPLES.glob("*.json")} == COVERED
