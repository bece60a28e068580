"""The scripted model for framework recordings: an OpenAI-compatible server (stdlib only).

It plays the model for every framework driver (Python or JavaScript) and decides each reply
from the request alone, so it works whatever extra calls, prompts or retries a framework adds:

1. **Which turn.** The latest message whose text contains one of ``scenarios.json``'s user
   texts anchors the request to that scenario turn (frameworks wrap the text in templates;
   the text itself survives). No anchor: a plain fallback text, logged as unmatched.
2. **Which step.** The number of tool-call rounds after the anchor (assistant messages with
   tool calls, or whose text holds smolagents' ``Calling tools:``, plus smolagents' error notes
   for a failed round it does not replay; consecutive ``function_call`` items in the Responses
   API) is the step: step
   ``k < len(steps)`` answers with the tool calls of ``steps[k]`` (several calls = one message
   with parallel calls), after that with the turn's answer. When the request offers a
   ``final_answer`` tool (smolagents' tool-calling agents) the answer is a call of it.
   A scripted tool that the request offers only under a prefixed name (Semantic Kernel's
   ``ShopPlugin-get_order``) is called by that name; the log keeps the scripted name.
3. **Text ReAct.** A DSPy request (its closing "Respond with the corresponding output
   fields" reminder) is answered in DSPy's field markers, one tool call per reply
   (:func:`dspy_decision`), and a classic ReAct prompt (``Action:`` / ``Action Input:`` /
   ``Final Answer:``, LangChain's ``create_react_agent``) in that format
   (:func:`react_decision`), and a smolagents ``CodeAgent`` request in a ``<code>`` block
   calling the tools, then ``final_answer(...)`` (:func:`code_agent_decision`); the log keeps
   the decision as tool calls.
4. **Usage.** Deterministic: input tokens = request body bytes // 4, output tokens = reply
   bytes // 4 + 1. Streamed chat completions send usage only when the request asks for it
   (``stream_options.include_usage``), as OpenAI does.

Endpoints: ``POST /v1/chat/completions`` (streaming and not), ``POST /v1/responses``
(streaming and not), ``GET /v1/models``; the Anthropic Messages API ``POST /v1/messages``
(``tool_use`` / ``tool_result`` content blocks; ``stream: true`` sends its server-sent events)
and the Gemini API ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse`` (``functionCall`` / ``functionResponse`` parts), each read
into the same messages and decided the same way (:mod:`provider_formats`; their clients
take the server's root, without ``/v1``: ``root_url``). Anthropic streams usage as the API
does (input tokens and ``output_tokens: 1`` in ``message_start``, the output total in
``message_delta``); Gemini sends no function call ids (as the Gemini API's ``generateContent``
does not) and its usage in the last streamed chunk.

Every request is logged as one JSON line (``log`` file): time, path (``chat.completions``,
``responses``, ``anthropic.messages``, ``gemini.generateContent``), scenario, turn, step,
the reply (text or tool calls) and the usage sent; the ground truth (:mod:`truth`) is
computed from this log and the driver's.

    python model_server.py --scenarios scenarios.json --log model.jsonl --port 0
"""

from __future__ import annotations

import argparse
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from provider_formats import (
    anthropic_events,
    anthropic_message,
    anthropic_messages,
    gemini_chunks,
    gemini_messages,
    gemini_response,
    gemini_tools,
)

HERE = Path(__file__).resolve().parent
FALLBACK_TEXT = "I can only help with orders and shipments."
ANSWER_TOOL = "final_answer"
TEXT_TOOL_CALLS = "Calling tools:"  # how smolagents writes past tool calls into its prompt
# smolagents' note after a failed step (see _unreplayed_rounds)
SMOLAGENTS_RETRY = "Now let's retry: take care not to repeat previous errors!"


@dataclass(frozen=True)
class Decision:
    """What the model answers: ``text`` or ``calls`` (``[(id, name, arguments)]``)."""

    scenario: str | None
    turn: int | None
    step: int | None
    text: str | None = None
    calls: tuple[tuple[str, str, dict[str, Any]], ...] = ()
    offered_as: tuple[tuple[str, str], ...] = ()  # (scripted name, the name the request offers)

    @property
    def wire_calls(self) -> tuple[tuple[str, str, dict[str, Any]], ...]:
        """``calls`` with each tool named as the request offers it (see :func:`offered_name`)."""
        names = dict(self.offered_as)
        return tuple((i, names.get(n, n), a) for i, n, a in self.calls)

    def to_log(self) -> dict[str, Any]:
        names = dict(self.offered_as)
        reply: dict[str, Any] = (
            {"text": self.text}
            if self.text is not None
            else {
                "tool_calls": [
                    {"id": i, "name": n, "arguments": a}
                    | ({"offered_as": names[n]} if n in names else {})
                    for i, n, a in self.calls
                ]
            }
        )
        return {"scenario": self.scenario, "turn": self.turn, "step": self.step, "reply": reply}


# --- reading requests ---------------------------------------------------------------------


def _text_of(content: Any) -> str:
    """All text in a message content (a string, content parts, or nested structures)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text_of(item) for item in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output", "input_text"):
            if key in content:
                return _text_of(content[key])
        return json.dumps(content)
    return str(content)


def chat_messages(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """``(role, text, has tool calls)`` per message of a Chat Completions request."""
    out = []
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        role, text = str(message.get("role") or ""), _text_of(message.get("content"))
        calls = bool(message.get("tool_calls") or message.get("function_call"))
        # smolagents replays its earlier tool calls as assistant text "Calling tools:\n[...]"
        calls = calls or (role == "assistant" and TEXT_TOOL_CALLS in text)
        out.append((role, text, calls))
        if role != "assistant":
            out.extend([("assistant", "", True)] * _unreplayed_rounds(text))
    return out


def _unreplayed_rounds(text: str) -> int:
    """Failed smolagents steps whose tool calls the prompt does not replay: error notes (ending
    in ``SMOLAGENTS_RETRY``, merged into the user message) without a ``Call id:`` line."""
    count = 0
    for block in text.split(SMOLAGENTS_RETRY)[:-1]:
        head = block[: block.rfind("Error:\n")] if "Error:\n" in block else block
        count += not head.rstrip("\n").rsplit("\n", 1)[-1].startswith("Call id:")
    return count


def responses_messages(body: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """The same for a Responses API request: consecutive ``function_call`` items are one
    assistant message with tool calls."""
    out: list[tuple[str, str, bool]] = []
    if body.get("instructions"):
        out.append(("system", _text_of(body["instructions"]), False))
    items = body.get("input")
    if isinstance(items, str):
        return [*out, ("user", items, False)]
    for item in items or []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "function_call":
            if not (out and out[-1][0] == "assistant" and out[-1][2]):
                out.append(("assistant", "", True))
        elif kind == "function_call_output":
            out.append(("tool", _text_of(item.get("output")), False))
        else:
            out.append((str(item.get("role") or ""), _text_of(item.get("content")), False))
    return out


def offered_tools(body: dict[str, Any]) -> set[str]:
    """Names of the tools the request offers (Chat Completions or Responses shapes)."""
    names = set()
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            function = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if function.get("name"):
                names.add(str(function["name"]))
    return names


def offered_name(name: str, tools: set[str]) -> str:
    """The name the request offers tool ``name`` under: ``name`` itself, or else the one offered
    name ending in ``name`` after a separator (Semantic Kernel offers ``ShopPlugin-get_order``)."""
    if name in tools:
        return name
    found = [
        t
        for t in tools
        if t.endswith(name) and len(t) > len(name) and not t[-len(name) - 1].isalnum()
    ]
    return found[0] if len(found) == 1 else name


# --- deciding ------------------------------------------------------------------------------


class Script:
    """The scenarios' turns, and the decision for a request (see the module docstring)."""

    def __init__(self, scenarios: dict[str, Any]):
        self.turns = [
            (scenario["id"], index, turn)
            for scenario in scenarios["scenarios"]
            for index, turn in enumerate(scenario["turns"])
        ]

    def _anchor(self, messages: list[tuple[str, str, bool]]) -> tuple[int, tuple] | None:
        """(message index, turn) of the latest message holding a turn's user text; user
        messages first, then any role (some frameworks put the task in a system prompt)."""
        for roles in (("user",), None):
            for index in range(len(messages) - 1, -1, -1):
                role, text, _ = messages[index]
                if roles is not None and role not in roles:
                    continue
                found = [t for t in self.turns if t[2]["user"] in text]
                if found:  # the longest user text wins ("order A100" inside "...A100 or C300")
                    return index, max(found, key=lambda t: len(t[2]["user"]))
        return None

    def decide(self, messages: list[tuple[str, str, bool]], tools: set[str]) -> Decision:
        anchor = self._anchor(messages)
        if anchor is None:
            return Decision(None, None, None, text=FALLBACK_TEXT)
        index, (scenario, turn_index, turn) = anchor
        step = sum(1 for role, _, calls in messages[index + 1 :] if role == "assistant" and calls)
        steps = turn["steps"]
        if step < len(steps):
            calls = tuple(
                (f"call_{scenario}_{turn_index}_{step}_{i}", name, arguments)
                for i, (name, arguments) in enumerate(steps[step])
            )
            offered = {n: offered_name(n, tools) for _, n, _ in calls}
            aliases = tuple((n, o) for n, o in offered.items() if o != n)
            return Decision(scenario, turn_index, step, calls=calls, offered_as=aliases)
        if ANSWER_TOOL in tools:
            call_id = f"call_{scenario}_{turn_index}_{step}_answer"
            return Decision(
                scenario,
                turn_index,
                step,
                calls=((call_id, ANSWER_TOOL, {"answer": turn["answer"]}),),
            )
        return Decision(scenario, turn_index, step, text=turn["answer"])


# --- text ReAct: DSPy's field markers ---------------------------------------------------------

DSPY_ASK = "Respond with the corresponding output fields"
DSPY_FIELD = re.compile(r"\[\[ ## (\w+) ## \]\]")
DSPY_PAST_TOOL = re.compile(r"\[\[ ## tool_name_\d+ ## \]\]")
DSPY_FINISH = "finish"


def dspy_output_fields(messages: list[tuple[str, str, bool]]) -> list[str]:
    """The output fields a DSPy ``ChatAdapter`` request asks for, in order (from its closing
    "Respond with the corresponding output fields, starting with the field `[[ ## a ## ]]`,
    then ..."); empty for any other request."""
    for _, text, _ in reversed(messages):
        if DSPY_ASK in text:
            asked = text[text.rfind(DSPY_ASK) :]
            return [f for f in DSPY_FIELD.findall(asked) if f != "completed"]
    return []


def dspy_decision(
    script: Script, messages: list[tuple[str, str, bool]]
) -> tuple[Decision, Decision] | None:
    """(what the model decided, the text it sends) for a DSPy request, else None.

    The tool calls are written in the reply text, one per request, as ``dspy.ReAct`` reads
    them (``next_thought`` / ``next_tool_name`` / ``next_tool_args``); a scripted step with
    parallel calls becomes consecutive ReAct steps. The step is the number of past tool calls
    in the trajectory of the anchoring message (``[[ ## tool_name_N ## ]]``). After the
    scripted calls the model calls ReAct's ``finish``; a request for other fields (the final
    ``extract``: ``reasoning``, ``answer``) gets the answer in its ``answer`` field.
    """
    fields = dspy_output_fields(messages)
    anchor = script._anchor(messages) if fields else None
    if anchor is None:
        return None
    index, (scenario, turn_index, turn) = anchor
    if "next_tool_name" in fields:
        step = len(DSPY_PAST_TOOL.findall(messages[index][1]))
        calls = [call for round_ in turn["steps"] for call in round_]
        name, arguments = calls[step] if step < len(calls) else (DSPY_FINISH, {})
        call_id = f"call_{scenario}_{turn_index}_{step}_0"
        decided = Decision(scenario, turn_index, step, calls=((call_id, name, arguments),))
        values = {
            "next_thought": f"I will call {name}.",
            "next_tool_name": name,
            "next_tool_args": json.dumps(arguments),
        }
    else:
        step = len(DSPY_PAST_TOOL.findall(messages[index][1]))
        decided = Decision(scenario, turn_index, step, text=turn["answer"])
        values = {"answer": turn["answer"]}
    wire = "".join(
        f"[[ ## {f} ## ]]\n{values.get(f, 'The trajectory holds what is needed.')}\n\n"
        for f in fields
    )
    return decided, Decision(scenario, turn_index, step, text=wire + "[[ ## completed ## ]]")


# --- text ReAct: LangChain's classic ReAct format ----------------------------------------------

REACT_MARKS = ("Action Input:", "Final Answer:", "Observation:")


def react_decision(
    script: Script, messages: list[tuple[str, str, bool]], tools: set[str]
) -> tuple[Decision, Decision] | None:
    """(what the model decided, the text it sends) for a classic ReAct prompt (LangChain's
    ``create_react_agent``: format instructions with ``Action:`` / ``Action Input:`` /
    ``Observation:`` / ``Final Answer:``, no tools offered in the request), else None.

    The turn is the scenario user text that occurs LAST in the prompt (a chat history before
    it holds earlier turns' texts); the step is the number of ``Observation:`` lines after it
    (the agent's scratchpad). A reply is one ``Action:`` with the tool's single argument as
    ``Action Input:`` (parallel calls become consecutive steps), then ``Final Answer:``.
    """
    if tools or not messages:
        return None
    text = messages[-1][1]
    if not all(mark in text for mark in REACT_MARKS):
        return None
    found = [(text.rfind(t[2]["user"]), t) for t in script.turns if t[2]["user"] in text]
    if not found:
        return None
    position, (scenario, turn_index, turn) = max(found, key=lambda f: (f[0], len(f[1][2]["user"])))
    step = text[position:].count("\nObservation:")
    calls = [call for round_ in turn["steps"] for call in round_]
    if step < len(calls):
        name, arguments = calls[step]
        call_id = f"call_{scenario}_{turn_index}_{step}_0"
        decided = Decision(scenario, turn_index, step, calls=((call_id, name, arguments),))
        value = next(iter(arguments.values())) if len(arguments) == 1 else json.dumps(arguments)
        wire = f"Thought: Do I need to use a tool? Yes\nAction: {name}\nAction Input: {value}"
    else:
        decided = Decision(scenario, turn_index, step, text=turn["answer"])
        wire = f"Thought: Do I need to use a tool? No\nFinal Answer: {turn['answer']}"
    return decided, Decision(scenario, turn_index, step, text=wire)


# --- code actions: smolagents' CodeAgent --------------------------------------------------------

CODE_OPEN, CODE_CLOSE = "<code>", "</code>"


def code_agent_decision(
    script: Script, messages: list[tuple[str, str, bool]], tools: set[str]
) -> tuple[Decision, Decision] | None:
    """(what the model decided, the text it sends) for a smolagents ``CodeAgent`` request (no
    tools offered; the system prompt asks for Python in ``<code>`` blocks and ``final_answer``),
    else None. The step is :meth:`Script.decide`'s (smolagents replays each past code action as
    ``Calling tools:``); a step's calls become one code block calling each tool with its
    keyword arguments and printing the results; the answer becomes ``final_answer("...")``.
    """
    system = next((text for role, text, _ in messages if role == "system"), "")
    if tools or CODE_OPEN not in system or ANSWER_TOOL not in system:
        return None
    decided = script.decide(messages, tools)
    if decided.scenario is None:
        return None
    if decided.calls:
        lines = [
            f"r{i} = {name}({', '.join(f'{k}={json.dumps(v)}' for k, v in arguments.items())})"
            for i, (_, name, arguments) in enumerate(decided.calls)
        ]
        lines += [f"print(r{i})" for i in range(len(decided.calls))]
        thought = "Thought: I will look this up with the tools."
    else:
        lines = [f"{ANSWER_TOOL}({json.dumps(decided.text)})"]
        thought = "Thought: I can answer now."
    code = "\n".join(lines)
    wire = f"{thought}\n{CODE_OPEN}\n{code}\n{CODE_CLOSE}"
    return decided, Decision(decided.scenario, decided.turn, decided.step, text=wire)


# --- writing replies -----------------------------------------------------------------------


def _usage_numbers(body_bytes: int, decision: Decision) -> tuple[int, int]:
    reply = json.dumps(decision.to_log()["reply"])
    return max(1, body_bytes // 4), len(reply) // 4 + 1


def chat_completion(decision: Decision, model: str, usage: tuple[int, int]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": decision.text}
    if decision.calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in decision.wire_calls
        ]
    return {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if decision.calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        },
    }


def _pieces(text: str, count: int = 3) -> list[str]:
    size = max(1, -(-len(text) // count))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def chat_chunks(decision: Decision, model: str, usage: tuple[int, int] | None) -> list[dict]:
    """The chunks of a streamed chat completion (usage chunk only when ``usage``)."""
    base = {
        "id": f"chatcmpl-{time.time_ns()}",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    chunks = [chunk({"role": "assistant", "content": "" if decision.text is not None else None})]
    if decision.text is not None:
        chunks += [chunk({"content": piece}) for piece in _pieces(decision.text)]
    for index, (call_id, name, arguments) in enumerate(decision.wire_calls):
        chunks.append(
            chunk(
                {
                    "tool_calls": [
                        {
                            "index": index,
                            "id": call_id,
                            "type": "function",
                            "function": {"name": name, "arguments": ""},
                        }
                    ]
                }
            )
        )
        for piece in _pieces(json.dumps(arguments), 2):
            chunks.append(
                chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            )
    chunks.append(chunk({}, "tool_calls" if decision.calls else "stop"))
    if usage is not None:
        chunks.append(
            {
                **base,
                "choices": [],
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": usage[0] + usage[1],
                },
            }
        )
    return chunks


def response_items(decision: Decision) -> list[dict[str, Any]]:
    """The Responses API output items of a decision."""
    if decision.text is not None:
        return [
            {
                "type": "message",
                "id": f"msg_{time.time_ns()}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": decision.text, "annotations": []}],
            }
        ]
    return [
        {
            "type": "function_call",
            "id": f"fc_{call_id}",
            "call_id": call_id,
            "name": name,
            "arguments": json.dumps(arguments),
            "status": "completed",
        }
        for call_id, name, arguments in decision.wire_calls
    ]


def response_object(
    decision: Decision, model: str, usage: tuple[int, int], status: str = "completed"
) -> dict[str, Any]:
    return {
        "id": f"resp_{time.time_ns()}",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "model": model,
        "error": None,
        "incomplete_details": None,
        "output": response_items(decision) if status == "completed" else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


def response_events(decision: Decision, model: str, usage: tuple[int, int]) -> list[dict]:
    """The server-sent events of a streamed Responses API call."""
    done = response_object(decision, model, usage)
    events: list[dict[str, Any]] = [
        {
            "type": "response.created",
            "response": response_object(decision, model, usage, "in_progress"),
        },
        {
            "type": "response.in_progress",
            "response": response_object(decision, model, usage, "in_progress"),
        },
    ]
    for index, item in enumerate(done["output"]):
        if item["type"] == "message":
            text = item["content"][0]["text"]
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            events.append(
                {
                    "type": "response.content_part.added",
                    "output_index": index,
                    "item_id": item["id"],
                    "content_index": 0,
                    "part": {"type": "output_text", "text": "", "annotations": []},
                }
            )
            for piece in _pieces(text):
                events.append(
                    {
                        "type": "response.output_text.delta",
                        "output_index": index,
                        "item_id": item["id"],
                        "content_index": 0,
                        "delta": piece,
                    }
                )
            events.append(
                {
                    "type": "response.output_text.done",
                    "output_index": index,
                    "item_id": item["id"],
                    "content_index": 0,
                    "text": text,
                }
            )
            events.append(
                {
                    "type": "response.content_part.done",
                    "output_index": index,
                    "item_id": item["id"],
                    "content_index": 0,
                    "part": item["content"][0],
                }
            )
        else:
            events.append(
                {
                    "type": "response.output_item.added",
                    "output_index": index,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            )
            for piece in _pieces(item["arguments"], 2):
                events.append(
                    {
                        "type": "response.function_call_arguments.delta",
                        "output_index": index,
                        "item_id": item["id"],
                        "delta": piece,
                    }
                )
            events.append(
                {
                    "type": "response.function_call_arguments.done",
                    "output_index": index,
                    "item_id": item["id"],
                    "arguments": item["arguments"],
                }
            )
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": done})
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return events


# --- the server ----------------------------------------------------------------------------


class ModelServer:
    """The server on 127.0.0.1 (a daemon thread); ``base_url`` ends in ``/v1``."""

    def __init__(self, scenarios: dict[str, Any], log: Path, port: int = 0):
        self.script = Script(scenarios)
        self.log_path = log
        self._lock = threading.Lock()
        self._log = log.open("a", encoding="utf-8")
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """The server without ``/v1``: what Anthropic's and Gemini's clients take as base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModelServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._log.close()

    def record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self._log.write(json.dumps(entry) + "\n")
            self._log.flush()

    def record_decision(
        self, path: str, stream: bool, decision: Decision, usage: tuple[int, int]
    ) -> None:
        """Log one request of the Anthropic or Gemini formats (usage always sent)."""
        self.record(
            {
                "t_ns": time.time_ns(),
                "path": path,
                "stream": stream,
                **decision.to_log(),
                "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
            }
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def _send_json(self, status: int, data: Any) -> None:
                self._send(status, json.dumps(data).encode(), "application/json")

            def _send_events(self, events: list[tuple[str | None, Any]]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in events:
                    prefix = f"event: {name}\n" if name else ""
                    payload = data if isinstance(data, str) else json.dumps(data)
                    self.wfile.write(f"{prefix}data: {payload}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send_json(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {
                                    "id": "gpt-4o-mini",
                                    "object": "model",
                                    "created": 0,
                                    "owned_by": "scripted",
                                }
                            ],
                        },
                    )
                else:
                    self._send_json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {}
                path = self.path.split("?", 1)[0].rstrip("/")
                if path.endswith("/chat/completions"):
                    self._chat(body, len(raw))
                elif path.endswith("/responses"):
                    self._responses(body, len(raw))
                elif path.endswith("/messages"):
                    self._anthropic(body, len(raw))
                elif path.endswith((":generateContent", ":streamGenerateContent")):
                    self._gemini(path, body, len(raw))
                else:
                    server.record({"t_ns": time.time_ns(), "path": path, "unsupported": True})
                    self._send_json(404, {"error": {"message": f"no route {path}"}})

            def _chat(self, body: dict[str, Any], size: int) -> None:
                messages = chat_messages(body)
                decision = wire = server.script.decide(messages, offered_tools(body))
                decision, wire = (
                    dspy_decision(server.script, messages)
                    or react_decision(server.script, messages, offered_tools(body))
                    or code_agent_decision(server.script, messages, offered_tools(body))
                    or (decision, wire)
                )
                model = str(body.get("model") or "gpt-4o-mini")
                usage = _usage_numbers(size, wire)
                stream = bool(body.get("stream"))
                include = bool((body.get("stream_options") or {}).get("include_usage"))
                sent = usage if (not stream or include) else None
                server.record(
                    {
                        "t_ns": time.time_ns(),
                        "path": "chat.completions",
                        "stream": stream,
                        **decision.to_log(),
                        "usage": None
                        if sent is None
                        else {"input_tokens": sent[0], "output_tokens": sent[1]},
                    }
                )
                if stream:
                    chunks = chat_chunks(wire, model, sent)
                    self._send_events([(None, c) for c in chunks] + [(None, "[DONE]")])
                else:
                    self._send_json(200, chat_completion(wire, model, usage))

            def _responses(self, body: dict[str, Any], size: int) -> None:
                decision = server.script.decide(responses_messages(body), offered_tools(body))
                model = str(body.get("model") or "gpt-4o-mini")
                usage = _usage_numbers(size, decision)
                stream = bool(body.get("stream"))
                server.record(
                    {
                        "t_ns": time.time_ns(),
                        "path": "responses",
                        "stream": stream,
                        **decision.to_log(),
                        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
                    }
                )
                if stream:
                    events = response_events(decision, model, usage)
                    self._send_events([(e["type"], e) for e in events])
                else:
                    self._send_json(200, response_object(decision, model, usage))

            def _anthropic(self, body: dict[str, Any], size: int) -> None:
                decision = server.script.decide(anthropic_messages(body), offered_tools(body))
                model = str(body.get("model") or "claude-sonnet-4-5")
                usage = _usage_numbers(size, decision)
                stream = bool(body.get("stream"))
                server.record_decision("anthropic.messages", stream, decision, usage)
                if stream:
                    self._send_events(anthropic_events(decision, model, usage))
                else:
                    self._send_json(200, anthropic_message(decision, model, usage))

            def _gemini(self, path: str, body: dict[str, Any], size: int) -> None:
                decision = server.script.decide(gemini_messages(body), gemini_tools(body))
                model = path.rsplit("/", 1)[-1].split(":", 1)[0]
                usage = _usage_numbers(size, decision)
                stream = path.endswith(":streamGenerateContent")
                server.record_decision("gemini.generateContent", stream, decision, usage)
                if stream:
                    self._send_events([(None, c) for c in gemini_chunks(decision, model, usage)])
                else:
                    self._send_json(200, gemini_response(decision, model, usage))

        return Handler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=str(HERE / "scenarios.json"))
    parser.add_argument("--log", default="model.jsonl")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    scenarios = json.loads(Path(args.scenarios).read_text())
    server = ModelServer(scenarios, Path(args.log), args.port).start()
    print(server.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
