"""LlamaIndex agent driver: a ``FunctionAgent`` (LlamaIndex's workflow agents) with function
tools, instrumented with ``openinference-instrumentation-llama-index``.

``FunctionAgent(tools=[get_order, track_shipment], llm=OpenAI(...), system_prompt=...)`` over
``llama_index.llms.openai.OpenAI`` (chat completions, native tool calls). A conversation's
turns share one workflow ``Context(agent)`` and one ``ChatMemoryBuffer`` passed as
``memory=`` (the Context alone loses the chat: llama-index-workflows 2.26 drops the
unserializable ``memory`` key between runs); each turn runs inside
``using_session(conversation_id)``. ``agent.run(...)`` is
awaited with ``FunctionAgent(streaming=False)``; the streaming scenario uses
``streaming=True`` (the agent's default: the LLM streams) and iterates
``handler.stream_events()`` before awaiting the result. A tool that raises is reported to the
model by the agent (its default: the tool output is marked as an error, its text sent back).
"""

from __future__ import annotations

import asyncio

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def instrument(tracer_provider) -> None:
    from openinference.instrumentation.llama_index import LlamaIndexInstrumentor

    LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)


def build_agent(stream: bool):
    from llama_index.core import Settings
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.llms.openai import OpenAI

    def get_order(order_id: str) -> str:
        """Look up an order by its id (e.g. A100)."""
        return call_tool("get_order", {"order_id": order_id})

    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id (e.g. TRK-A100)."""
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    Settings.tokenizer = str.split  # LlamaIndex's default tokenizer would download tiktoken data
    llm = OpenAI(model=MODEL, api_base=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    return FunctionAgent(
        name="shop_assistant",
        description="Looks up orders and shipments.",
        tools=[get_order, track_shipment],
        llm=llm,
        system_prompt=SYSTEM_PROMPT,
        streaming=stream,
    )


async def run_all() -> None:
    from llama_index.core.memory import ChatMemoryBuffer
    from llama_index.core.workflow import Context
    from openinference.instrumentation import using_session

    for scenario in scenarios():
        agent = build_agent(scenario.stream)
        ctx = Context(agent)
        memory = ChatMemoryBuffer.from_defaults(llm=agent.llm)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, using_session(scenario.conversation_id):
                handler = agent.run(user_msg=spec["user"], ctx=ctx, memory=memory)
                if scenario.stream:
                    async for _ in handler.stream_events():
                        pass
                response = await handler
                record.answer = str(response)


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    asyncio.run(run_all())
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
