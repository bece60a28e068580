"""Microsoft Agent Framework driver: an ``Agent`` with function tools, traced by the
framework's own OpenTelemetry instrumentation (no third-party instrumentation).

Telemetry: ``fwtools.setup_otel()`` sets the global providers, then
``agent_framework.observability.enable_instrumentation(enable_sensitive_data=True)`` (the
switch that puts messages, tool arguments and results on the spans). Model:
``OpenAIChatCompletionClient`` (chat completions; the framework's ``OpenAIChatClient`` speaks
the Responses API). Tools are ``@tool`` functions; a tool that raises is returned to the model
as an error result with its message (``include_detailed_errors=True`` in the client's
function invocation configuration; the default hides the text). A conversation's turns share
one ``AgentSession`` (``agent.create_session(session_id=conversation id)``). Streaming:
``agent.run(..., stream=True)`` iterated, then ``get_final_response()``.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def build_agent():
    from agent_framework import Agent, tool
    from agent_framework.openai import OpenAIChatCompletionClient

    @tool(description="Look up an order by its id.")
    def get_order(order_id: Annotated[str, "The order id, e.g. A100"]) -> str:
        return call_tool("get_order", {"order_id": order_id})

    @tool(description="Track a shipment by its tracking id.")
    def track_shipment(tracking_id: Annotated[str, "The tracking id, e.g. TRK-A100"]) -> str:
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    client = OpenAIChatCompletionClient(
        MODEL,
        api_key=fwtools.API_KEY,
        base_url=fwtools.BASE_URL,
        function_invocation_configuration={"include_detailed_errors": True},
    )
    return Agent(
        client,
        SYSTEM_PROMPT,
        name="shop_assistant",
        tools=[get_order, track_shipment],
    )


async def run_all() -> None:
    agent = build_agent()
    for scenario in scenarios():
        session = agent.create_session(session_id=scenario.conversation_id)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    stream = agent.run(spec["user"], stream=True, session=session)
                    async for _ in stream:
                        pass
                    response = await stream.get_final_response()
                else:
                    response = await agent.run(spec["user"], session=session)
                record.answer = response.text


def main() -> None:
    tracer_provider, logger_provider = setup_otel(logs=True)
    from agent_framework.observability import enable_instrumentation

    enable_instrumentation(enable_sensitive_data=True)
    asyncio.run(run_all())
    shutdown(tracer_provider, logger_provider)


if __name__ == "__main__":
    main()
