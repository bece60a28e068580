"""Issue 34: an unfamiliar trace is read from what it carries.

Spans here are named and keyed the way no convention map names them (a framework's own
tracer), or record one operation twice (an SDK tracing itself beside an instrumentation, a
tool served over MCP), or pair results without ids; each test says which rule of the
evidence-first reader (``tracegrade/normalize/reader.py``, ``llmcalls.py``, ``toolcalls.py``,
``sniff.py``) it checks. Payload shapes are the providers' published wire formats.
"""

from __future__ import annotations

import json

from tests.support.spanfactory import TraceBuilder
from tracegrade.normalize.lint import lint

QUESTION = "What is the total of order A100?"
ANSWER = "Order A100 totals $42.50."
RESULT = {"order_id": "A100", "status": "delivered", "total_usd": 42.5}


def _openai_request(*messages: dict) -> str:
    return json.dumps({"model": "gpt-4o-mini", "messages": list(messages)})


def _completion(message: dict, finish: str, tokens: tuple[int, int], rid: str) -> str:
    return json.dumps(
        {
            "id": rid,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": tokens[0], "completion_tokens": tokens[1]},
        }
    )


CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_order", "arguments": '{"order_id": "A100"}'},
}


def test_a_frameworks_own_json_blobs_are_read_by_their_shape():
    """A tracer of its own (``myfw.*``): the request and response objects as JSON under keys
    no map names. The model's transcript gives the tool call, its result and the answer."""
    b = TraceBuilder(scope="myfw")
    root = b.add("myfw.run", {"myfw.kind": "run"}, start_ms=0, duration_ms=100)
    user = {"role": "user", "content": QUESTION}
    b.add(
        "myfw.generate",
        {
            "myfw.request": _openai_request(user),
            "myfw.response": _completion(
                {"role": "assistant", "content": None, "tool_calls": [CALL]},
                "tool_calls",
                (50, 10),
                "r1",
            ),
        },
        parent=root,
        start_ms=1,
        duration_ms=10,
    )
    tool_message = {"role": "tool", "tool_call_id": "call_1", "content": json.dumps(RESULT)}
    assistant = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    b.add(
        "myfw.generate",
        {
            "myfw.request": _openai_request(user, assistant, tool_message),
            "myfw.response": _completion(
                {"role": "assistant", "content": ANSWER}, "stop", (80, 12), "r2"
            ),
        },
        parent=root,
        start_ms=20,
        duration_ms=10,
    )
    trace = b.normalize()
    assert trace.user_inputs == (QUESTION,)
    assert [(c.name, c.arguments, json.loads(c.result or "")) for c in trace.tool_calls] == [
        ("get_order", {"order_id": "A100"}, RESULT)
    ]
    assert trace.final_output == ANSWER
    assert (len(trace.llm_calls), trace.input_tokens, trace.output_tokens) == (2, 130, 22)


def test_a_python_repr_of_the_response_is_read():
    """``str(ChatCompletion(...))`` recorded as the span's output: parsed as Python syntax
    (never evaluated), its calls and keyword arguments read as the object's fields."""
    b = TraceBuilder(scope="fw")
    repr_text = (
        "ChatCompletion(id='r9', choices=[Choice(finish_reason='stop', index=0, "
        f"message=ChatCompletionMessage(content={ANSWER!r}, role='assistant', tool_calls=None))], "
        "created=1, model='gpt-4o-mini', object='chat.completion', "
        "usage=CompletionUsage(completion_tokens=7, prompt_tokens=30, total_tokens=37))"
    )
    b.add(
        "fw.llm",
        {"fw.messages": json.dumps([{"role": "user", "content": QUESTION}]), "fw.out": repr_text},
        start_ms=0,
        duration_ms=5,
    )
    trace = b.normalize()
    assert trace.final_output == ANSWER
    assert (trace.input_tokens, trace.output_tokens) == (30, 7)
    assert trace.user_inputs == (QUESTION,)


def test_anthropic_messages_tool_results_in_user_messages_are_results_not_input():
    """Anthropic Messages: ``tool_use`` blocks, and ``tool_result`` blocks sent back in a
    ``user`` message: a result, never the user's input."""
    b = TraceBuilder(scope="fw")
    first = {"role": "user", "content": QUESTION}
    use = {"type": "tool_use", "id": "toolu_1", "name": "get_order", "input": {"order_id": "A100"}}
    reply1 = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet",
        "content": [use],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 40, "output_tokens": 9},
    }
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": json.dumps(RESULT)}
    reply2 = {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet",
        "content": [{"type": "text", "text": ANSWER}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 70, "output_tokens": 11},
    }
    history = [
        first,
        {"role": "assistant", "content": [use]},
        {"role": "user", "content": [result]},
    ]
    b.add(
        "a",
        {"x.req": json.dumps({"model": "c", "messages": [first]}), "x.res": json.dumps(reply1)},
        start_ms=0,
        duration_ms=5,
    )
    b.add(
        "a",
        {"x.req": json.dumps({"model": "c", "messages": history}), "x.res": json.dumps(reply2)},
        start_ms=10,
        duration_ms=5,
    )
    trace = b.normalize()
    assert trace.user_inputs == (QUESTION,)
    assert [(c.name, c.call_id, json.loads(c.result or "")) for c in trace.tool_calls] == [
        ("get_order", "toolu_1", RESULT)
    ]
    assert trace.final_output == ANSWER
    assert trace.llm_calls[0].finish_reason == "tool_calls"


def test_gemini_function_calls_and_responses():
    """Gemini ``generateContent``: camel-case ``functionCall`` / ``functionResponse`` parts,
    ``usageMetadata`` (the REST API's shape)."""
    b = TraceBuilder(scope="fw")
    user = {"role": "user", "parts": [{"text": QUESTION}]}
    call = {"functionCall": {"name": "get_order", "args": {"order_id": "A100"}}}
    response1 = {
        "candidates": [{"content": {"role": "model", "parts": [call]}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": 5},
        "modelVersion": "gemini-2.5-flash",
    }
    answer = {"functionResponse": {"name": "get_order", "response": RESULT}}
    response2 = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"text": ANSWER}]}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 40, "candidatesTokenCount": 8},
    }
    contents2 = [user, {"role": "model", "parts": [call]}, {"role": "user", "parts": [answer]}]
    b.add(
        "g",
        {"g.request": json.dumps({"contents": [user]}), "g.response": json.dumps(response1)},
        start_ms=0,
        duration_ms=5,
    )
    b.add(
        "g",
        {"g.request": json.dumps({"contents": contents2}), "g.response": json.dumps(response2)},
        start_ms=10,
        duration_ms=5,
    )
    trace = b.normalize()
    assert trace.user_inputs == (QUESTION,)
    assert [(c.name, c.arguments, json.loads(c.result or "")) for c in trace.tool_calls] == [
        ("get_order", {"order_id": "A100"}, RESULT)
    ]
    assert trace.final_output == ANSWER
    assert (trace.input_tokens, trace.output_tokens) == (60, 13)
    assert trace.llm_calls[0].model == "gemini-2.5-flash"


def _genai_chat(b: TraceBuilder, parent: str, *, content: bool, start: float) -> str:
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.id": "chatcmpl-1",
        "gen_ai.usage.input_tokens": 50,
        "gen_ai.usage.output_tokens": 7,
    }
    if content:
        attributes["gen_ai.input.messages"] = json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": QUESTION}]}]
        )
        attributes["gen_ai.output.messages"] = json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [{"type": "text", "content": ANSWER}],
                    "finish_reason": "stop",
                }
            ]
        )
    return b.add("chat gpt-4o-mini", attributes, parent=parent, start_ms=start, duration_ms=8)


def test_an_sdk_tracing_itself_beside_an_instrumentation_is_one_call():
    """Two sibling spans with one ``gen_ai.response.id`` (one without content): one LLM
    call, its tokens counted once, the answer from the span that has content."""
    b = TraceBuilder()
    root = b.add(
        "invoke_agent shop", {"gen_ai.operation.name": "invoke_agent"}, start_ms=0, duration_ms=20
    )
    _genai_chat(b, root, content=False, start=1)
    _genai_chat(b, root, content=True, start=1.2)
    trace = b.normalize()
    assert len(trace.llm_calls) == 1
    assert (trace.input_tokens, trace.output_tokens) == (50, 7)
    assert trace.final_output == ANSWER


def test_an_llm_span_around_several_steps_lends_no_usage():
    """An LLM-kind span wrapping two per-step LLM spans is no call: the steps are, and the
    wrapper's summed usage is not added to either."""
    b = TraceBuilder()
    wrapper = b.add(
        "llm loop",
        {
            "openinference.span.kind": "LLM",
            "llm.token_count.prompt": 999,
            "llm.token_count.completion": 99,
        },
        start_ms=0,
        duration_ms=30,
    )
    for start in (1, 10):
        b.add(
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([{"role": "user", "content": QUESTION}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": ANSWER}]),
            },
            parent=wrapper,
            start_ms=start,
            duration_ms=5,
        )
    trace = b.normalize()
    assert len(trace.llm_calls) == 2
    assert trace.input_tokens is None


def test_a_tool_served_over_mcp_is_one_call():
    """The MCP server's ``execute_tool`` span inside the agent's tool span (same tool, same
    arguments): one call, timed by the outer span, the result from whichever has it."""
    b = TraceBuilder()
    outer = b.add(
        "execute_tool get_order",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_order",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": '{"order_id": "A100"}',
        },
        start_ms=0,
        duration_ms=20,
    )
    b.add(
        "tools/call get_order",
        {
            "gen_ai.operation.name": "execute_tool",
            "mcp.method.name": "tools/call",
            "gen_ai.tool.name": "get_order",
            "gen_ai.tool.call.arguments": '{"order_id": "A100"}',
            "gen_ai.tool.call.result": json.dumps(RESULT),
        },
        parent=outer,
        start_ms=2,
        duration_ms=10,
    )
    trace = b.normalize()
    assert [
        (c.name, c.call_id, json.loads(c.result or ""), c.duration_ms) for c in trace.tool_calls
    ] == [("get_order", "call_1", RESULT, 20.0)]


def test_a_tool_span_under_another_operation_name_is_a_tool_call():
    """``gen_ai.tool.name`` with arguments on a span whose operation name is not
    ``execute_tool``: a tool call, by what it carries."""
    b = TraceBuilder()
    b.add(
        "Tool.invoke",
        {
            "gen_ai.operation.name": "tool_call",
            "gen_ai.tool.name": "get_order",
            "gen_ai.tool.call.arguments": '{"order_id": "A100"}',
        },
        start_ms=0,
        duration_ms=5,
    )
    trace = b.normalize()
    assert [c.name for c in trace.tool_calls] == ["get_order"]


def test_results_without_ids_pair_in_call_order_not_by_recency():
    """Two parallel calls of one tool and their results, none with an id: the first result
    is the first call's (pairing by recency reversed them)."""
    b = TraceBuilder()
    calls = [
        {"type": "tool_call", "name": "get_order", "arguments": {"order_id": "A100"}},
        {"type": "tool_call", "name": "get_order", "arguments": {"order_id": "B200"}},
    ]
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    assistant = {"role": "assistant", "parts": calls}
    results = [
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "A100 result"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "response": "B200 result"}]},
    ]
    b.add(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([user]),
            "gen_ai.output.messages": json.dumps([assistant]),
        },
        start_ms=0,
        duration_ms=5,
    )
    b.add(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([user, assistant, *results]),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
            ),
        },
        start_ms=10,
        duration_ms=5,
    )
    trace = b.normalize()
    assert [(c.arguments["order_id"], c.result) for c in trace.tool_calls] == [
        ("A100", "A100 result"),
        ("B200", "B200 result"),
    ]


def test_content_no_map_reads_is_unread_content_not_content_not_captured():
    """Message content under a key no map names, in a shape no reader knows: lint says
    which attribute holds it and to add a convention map, and the trace is not ok."""
    b = TraceBuilder(scope="fw")
    b.add(
        "fw.agent",
        {
            "fw.conversation": json.dumps(
                {"turns": [{"role": "user", "content": QUESTION, "speaker": 1}]}
            )
        },
        start_ms=0,
        duration_ms=5,
    )
    trace = b.normalize()
    report = lint(trace)
    assert not report.ok
    reasons = " ".join(c.detail for c in report.checks)
    assert "unread content in fw.conversation" in reasons
    assert "not captured" not in reasons


def test_a_placeholder_response_id_on_calls_one_after_the_other_merges_nothing():
    """The OpenAI Agents SDK writes ``__fake_id__`` on streamed responses: two calls in
    sequence with it are two calls (a shared id merges only spans that overlap in time)."""
    b = TraceBuilder()
    for start in (0, 20):
        b.add(
            "chat",
            {
                "gen_ai.operation.name": "chat",
                "gen_ai.response.id": "__fake_id__",
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "content": ANSWER}]),
            },
            start_ms=start,
            duration_ms=5,
        )
    assert len(b.normalize().llm_calls) == 2


def test_a_tool_span_named_after_its_method_with_a_kwargs_envelope():
    """DSPy's TOOL spans: ``get_order.__call__`` with ``{"kwargs": {...}}``: the tool is
    ``get_order``, its arguments the keyword arguments; ReAct's ``finish`` is no tool call."""
    b = TraceBuilder()
    root = b.add("ReAct.forward", {"openinference.span.kind": "CHAIN"}, start_ms=0, duration_ms=50)
    for start, name, arguments in (
        (1, "get_order.__call__", {"kwargs": {"order_id": "A100"}}),
        (10, "finish.__call__", {"kwargs": {}}),
    ):
        b.add(
            name,
            {
                "openinference.span.kind": "TOOL",
                "input.value": json.dumps(arguments),
                "output.value": "ok",
            },
            parent=root,
            start_ms=start,
            duration_ms=2,
        )
    trace = b.normalize()
    assert [(c.name, c.arguments) for c in trace.tool_calls] == [
        ("get_order", {"order_id": "A100"})
    ]


def test_a_text_react_prompt_is_read_back_to_the_input_field_it_renders():
    """A text-ReAct loop renders the agent's input object into each call's user message:
    the user input is the input field every rendering holds, not the rendered prompt."""
    b = TraceBuilder()
    root = b.add(
        "ReAct.forward",
        {
            "openinference.span.kind": "CHAIN",
            "input.value": json.dumps(
                {"input_args": {"question": QUESTION, "history": "messages=[]"}}
            ),
        },
        start_ms=0,
        duration_ms=50,
    )
    for start, trajectory in ((1, ""), (20, "[[ ## thought_0 ## ]]\nlook it up")):
        prompt = (
            f"[[ ## question ## ]]\n{QUESTION}\n\n[[ ## trajectory ## ]]\n{trajectory}\n\nRespond"
        )
        b.add(
            "LM.__call__",
            {
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": prompt,
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "[[ ## answer ## ]]\n" + ANSWER,
            },
            parent=root,
            start_ms=start,
            duration_ms=5,
        )
    assert b.normalize().user_inputs == (QUESTION,)


def test_an_mcp_content_block_result_reads_as_the_text_the_model_was_given():
    """A tool span's result recorded as an MCP content block ``{"type": "text", "text":
    ...}`` while the next call received the text: the result is that text (unwrapped by
    consistency with the transcript)."""
    b = TraceBuilder()
    call = {"type": "tool_call", "id": "c1", "name": "get_order", "arguments": {"order_id": "A100"}}
    user = {"role": "user", "parts": [{"type": "text", "content": QUESTION}]}
    b.add(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps([user]),
            "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [call]}]),
        },
        start_ms=0,
        duration_ms=5,
    )
    b.add(
        "execute_tool get_order",
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_order",
            "gen_ai.tool.call.id": "c1",
            "gen_ai.tool.call.result": json.dumps({"type": "text", "text": json.dumps(RESULT)}),
        },
        start_ms=6,
        duration_ms=2,
    )
    history = [
        user,
        {"role": "assistant", "parts": [call]},
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c1", "response": json.dumps(RESULT)}],
        },
    ]
    b.add(
        "chat",
        {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps(
                [{"role": "assistant", "parts": [{"type": "text", "content": ANSWER}]}]
            ),
        },
        start_ms=10,
        duration_ms=5,
    )
    (call_read,) = b.normalize().tool_calls
    assert json.loads(call_read.result or "") == RESULT


def test_haystack_shapes_a_repr_request_and_a_replies_response():
    """A request recorded as the repr of ``ChatMessage`` objects (holding ``<function ... at
    0x...>`` reprs) and a ``{"replies": [...]}`` response with usage in the reply's meta."""
    request = (
        "{'messages': [ChatMessage(_role=<ChatRole.USER: 'user'>, "
        f"_content=[TextContent(text={QUESTION!r})], _name=None, _meta={{}})], "
        "'tools': [Tool(name='get_order', function=<function make.<locals>.<lambda> at 0x7f00>)]}"
    )
    response = {
        "replies": [
            {
                "role": "assistant",
                "meta": {
                    "model": "gpt-4o-mini",
                    "finish_reason": "stop",
                    "usage": {"prompt_tokens": 30, "completion_tokens": 6},
                },
                "content": [{"text": ANSWER}],
            }
        ]
    }
    b = TraceBuilder(scope="shop")
    b.add(
        "fw.step.llm",
        {"fw.step.llm.input": request, "fw.step.llm.output": json.dumps(response)},
        start_ms=0,
        duration_ms=5,
    )
    trace = b.normalize()
    assert (trace.user_inputs, trace.final_output) == ((QUESTION,), ANSWER)
    assert (trace.input_tokens, trace.output_tokens, trace.llm_calls[0].model) == (
        30,
        6,
        "gpt-4o-mini",
    )


def test_genkit_tool_requests_and_model_responses():
    """Genkit's own tracer: ``genkit:input`` / ``genkit:output`` JSON, parts ``toolRequest``
    / ``toolResponse`` (``ref`` the call id), responses ``{message, finishReason, usage}``."""
    b = TraceBuilder(scope="genkit-tracer")
    user = {"role": "user", "content": [{"text": QUESTION}]}
    request = {"toolRequest": {"name": "get_order", "ref": "c1", "input": {"order_id": "A100"}}}
    response = {"toolResponse": {"name": "get_order", "ref": "c1", "output": json.dumps(RESULT)}}
    for start, messages, reply, tokens in (
        (0, [user], {"role": "model", "content": [request]}, 30),
        (
            10,
            [
                user,
                {"role": "model", "content": [request]},
                {"role": "tool", "content": [response]},
            ],
            {"role": "model", "content": [{"text": ANSWER}]},
            50,
        ),
    ):
        output = {
            "finishReason": "stop",
            "message": reply,
            "usage": {"inputTokens": tokens, "outputTokens": 5},
        }
        b.add(
            "model",
            {
                "genkit:input": json.dumps({"messages": messages}),
                "genkit:output": json.dumps(output),
            },
            start_ms=start,
            duration_ms=5,
        )
    trace = b.normalize()
    assert [(c.name, c.call_id, json.loads(c.result or "")) for c in trace.tool_calls] == [
        ("get_order", "c1", RESULT)
    ]
    assert (trace.final_output, trace.input_tokens) == (ANSWER, 80)


def test_a_code_agents_answer_is_its_answer_tools_argument():
    """A code agent's last reply is the code that calls ``final_answer("...")``: the answer is
    the answer tool's (positional) argument, not that code."""
    b = TraceBuilder()
    b.add(
        "generate",
        {
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": QUESTION,
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": f'<code>\nfinal_answer("{ANSWER}")\n</code>',
        },
        start_ms=0,
        duration_ms=5,
    )
    b.add(
        "FinalAnswerTool",
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "final_answer",
            "input.value": json.dumps({"args": [ANSWER], "kwargs": {}}),
        },
        start_ms=6,
        duration_ms=1,
    )
    assert b.normalize().final_output == ANSWER
