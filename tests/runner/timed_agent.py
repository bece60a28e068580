"""An agent whose own work (its ``invoke_agent`` root span) is short and whose call does
per-request work before that span starts (a client built, a cache warmed): what a production
trace of it shows and what ``tracegrade run`` wraps in its case span differ by that work.
``TIMED_AGENT_WORK_S`` sets the time spent inside the agent's span."""

from __future__ import annotations

import json
import os
import time

from opentelemetry import trace
from opentelemetry.trace import Tracer

SETUP_S = 1.2
"""Per-request work before the agent's root span starts (s)."""
PRICE = "$349.00"


def turn(tracer: Tracer, question: str) -> str:
    """The agent's own spans: invoke_agent > execute_tool, chat; ``TIMED_AGENT_WORK_S``
    (default 0.02 s) inside."""
    answer = f"The Sony WH-1000XM5 costs {PRICE}."
    with tracer.start_as_current_span(
        "invoke_agent shop",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "shop"},
    ):
        with tracer.start_as_current_span(
            "execute_tool get_price",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "get_price",
                "gen_ai.tool.call.id": "call_1",
                "gen_ai.tool.call.arguments": json.dumps({"product": "Sony WH-1000XM5"}),
                "gen_ai.tool.call.result": json.dumps({"price": PRICE}),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "gpt-4o",
                "gen_ai.usage.input_tokens": 40,
                "gen_ai.usage.output_tokens": 12,
                **_content(question, answer),
            },
        ):
            time.sleep(float(os.environ.get("TIMED_AGENT_WORK_S", "0.02")))
    return answer


def _content(question: str, answer: str) -> dict[str, str]:
    """The messages, unless ``TIMED_AGENT_NO_CONTENT`` is set (an instrumentation's default:
    content not captured)."""
    if os.environ.get("TIMED_AGENT_NO_CONTENT"):
        return {}
    return {
        "gen_ai.input.messages": json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": question}]}]
        ),
        "gen_ai.output.messages": json.dumps(
            [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
        ),
    }


def answer(question: str) -> str:
    """``tracegrade run --agent tests.runner.timed_agent:answer``."""
    time.sleep(SETUP_S)
    return turn(trace.get_tracer(__name__), question)
