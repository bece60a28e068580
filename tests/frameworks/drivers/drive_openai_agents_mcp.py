"""OpenAI Agents SDK (Python) driver: the tools served over MCP (the official ``mcp`` SDK).

The agent has no local tools: ``mcp_servers=[MCPServerStdio(...)]`` starts
``mcp_shop_server.py`` (an ``mcp.server.mcpserver.MCPServer``) as a subprocess over stdio
and offers its ``get_order`` / ``track_shipment``. Both sides trace: the agent with
``openinference-instrumentation-openai-agents`` (``OpenAIAgentsInstrumentor().instrument()``,
its default exclusive mode: the SDK's own trace export to OpenAI is replaced), the ``mcp``
SDK with its built-in OpenTelemetry (client ``MCP send tools/call <tool>`` spans that put
the W3C trace context into the request's ``_meta``; the server's ``tools/call <tool>`` spans,
exported by the server process to the same endpoint).

Model: ``OpenAIChatCompletionsModel`` over an ``AsyncOpenAI`` client (chat completions). A
conversation's turns share a ``SQLiteSession(conversation id)`` (in memory) and a
``RunConfig(group_id=conversation id)``. Streaming: ``Runner.run_streamed`` with every event
consumed. A tool error comes back from the server as an MCP error result, which the SDK
gives the model as the tool output.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, scenarios, setup_otel, shutdown, turn

SERVER = Path(__file__).resolve().with_name("mcp_shop_server.py")


def instrument(tracer_provider) -> None:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)


def server_params() -> dict:
    """The MCP server's command; its environment carries the OTLP endpoint and the logs."""
    env = dict(os.environ)
    env["OTEL_SERVICE_NAME"] = env.get("OTEL_SERVICE_NAME", "fw") + "-mcp-server"
    env["PYTHONPATH"] = os.pathsep.join([str(SERVER.parent.parent), env.get("PYTHONPATH", "")])
    return {"command": sys.executable, "args": [str(SERVER)], "env": env}


async def run_all() -> None:
    from agents import Agent, OpenAIChatCompletionsModel, RunConfig, Runner, SQLiteSession
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    async with MCPServerStdio(server_params(), name="shop", cache_tools_list=True) as server:
        agent = Agent(
            name="shop_assistant",
            instructions=SYSTEM_PROMPT,
            model=OpenAIChatCompletionsModel(model=MODEL, openai_client=client),
            mcp_servers=[server],
        )
        for scenario in scenarios():
            session = SQLiteSession(scenario.conversation_id)
            config = RunConfig(group_id=scenario.conversation_id)
            for index, spec in enumerate(scenario.turns):
                with turn(scenario, index) as record:
                    if scenario.stream:
                        result = Runner.run_streamed(
                            agent, spec["user"], session=session, run_config=config
                        )
                        async for _ in result.stream_events():
                            pass
                    else:
                        result = await Runner.run(
                            agent, spec["user"], session=session, run_config=config
                        )
                    record.answer = result.final_output


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    asyncio.run(run_all())
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
