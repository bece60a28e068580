"""AutoGen AgentChat driver: an ``AssistantAgent`` over ``OpenAIChatCompletionClient``.

Telemetry is AutoGen's own OpenTelemetry tracing (autogen-core's GenAI spans: ``create_agent``,
``invoke_agent``, ``execute_tool``), which uses the global tracer provider; nothing else is
instrumented (AutoGen's tracing guide also installs an OpenAI client instrumentation; this
setup records what AutoGen emits by itself). AutoGen has no content-capture switch.

``reflect_on_tool_use=True`` so the model answers after the tools (otherwise AutoGen returns
the tool results as the answer) and ``max_tool_iterations=5`` so the model can call tools in
sequence (the default, 1, stops after one round). A tool that raises becomes an ``is_error``
function result that goes back to the model (AutoGen's default). A conversation's turns are
``run`` calls on the same agent, which keeps its model context; the streaming scenario uses
``run_stream`` with ``model_client_stream=True``.
"""

from __future__ import annotations

import asyncio

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def build_agent(client, stream: bool):
    from autogen_agentchat.agents import AssistantAgent

    async def get_order(order_id: str) -> str:
        """Look up an order by its id."""
        return call_tool("get_order", {"order_id": order_id})

    async def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id."""
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    return AssistantAgent(
        "shop_assistant",
        model_client=client,
        tools=[get_order, track_shipment],
        system_message=SYSTEM_PROMPT,
        reflect_on_tool_use=True,
        max_tool_iterations=5,
        model_client_stream=stream,
    )


async def run() -> None:
    from autogen_agentchat.base import TaskResult
    from autogen_ext.models.openai import OpenAIChatCompletionClient

    client = OpenAIChatCompletionClient(
        model=MODEL, base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY
    )
    for scenario in scenarios():
        agent = build_agent(client, scenario.stream)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    result = None
                    async for item in agent.run_stream(task=spec["user"]):
                        if isinstance(item, TaskResult):
                            result = item
                else:
                    result = await agent.run(task=spec["user"])
                record.answer = result.messages[-1].content if result else None
    await client.close()


def main() -> None:
    tracer_provider, _ = setup_otel()
    asyncio.run(run())
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
