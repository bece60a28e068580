"""Answer tools: frameworks that deliver the final answer as a tool call.

smolagents' agents answer by calling ``final_answer(answer)``; agents run through
mozilla-ai/any-agent (e.g. Google ADK, LlamaIndex) answer by calling ``final_output(answer)``,
and any-agent's TinyAgent by ``final_answer``; a ReAct loop ends by calling ``finish``
(DSPy's ``dspy.ReAct``, whose answer then comes from its extract step). Such a call is not
work the agent did with a tool: it is the answer. So an answer call's argument is the trace's
final output (when no agent span records one and no LLM text follows it), and the call is not
one of the agent's tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.trace import ToolCall

ANSWER_TOOLS = frozenset({"final_answer", "final_output", "finish"})
"""Tool names whose call is the agent's answer, or its end (smolagents, any-agent; ``finish``:
ReAct's completion step, DSPy's ``dspy.ReAct``)."""

_ANSWER_KEYS = ("answer", "final_answer", "output", "result")


def is_answer_tool(name: str | None) -> bool:
    """True when a tool of this name delivers the final answer."""
    return name in ANSWER_TOOLS


def answer_text(arguments: Any) -> str | None:
    """The answer an answer-tool call carries: its ``answer`` argument (or its only argument),
    as text; JSON for a structured answer; ``None`` when the arguments hold none."""
    if isinstance(arguments, Mapping):
        key = next((k for k in _ANSWER_KEYS if k in arguments), None)
        if key is None and len(arguments) == 1:
            key = next(iter(arguments))
        if key is None:
            return None
        arguments = arguments[key]
    if arguments is None or arguments == "":
        return None
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def split_answer_calls(calls: Sequence[ToolCall]) -> tuple[list[ToolCall], list[ToolCall]]:
    """``(tool calls, answer calls)``: the answer-tool calls taken out, order kept."""
    tools = [c for c in calls if not is_answer_tool(c.name)]
    answers = [c for c in calls if is_answer_tool(c.name)]
    return tools, answers


def answer_of(answers: Sequence[ToolCall]) -> str | None:
    """The final answer from the last answer call that carries one."""
    for call in reversed(answers):
        text = answer_text(call.arguments)
        if text is not None:
            return text
    return None
