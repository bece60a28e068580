"""Semantic Kernel driver: a ``ChatCompletionAgent`` over ``OpenAIChatCompletion``.

Telemetry is Semantic Kernel's own GenAI diagnostics, switched on with sensitive content by
``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true`` (setup env; SK
reads it when its modules are imported). SK writes the chat messages as Python ``logging``
records (``event.name`` = ``gen_ai.{role}.message`` / ``gen_ai.choice``), which reach OTLP
through the OpenTelemetry ``LoggingHandler`` filtered to the ``semantic_kernel`` loggers, as
SK's telemetry samples set it up. The two tools are ``@kernel_function``s of one plugin
(``ShopPlugin``); function choice behaviour is ``Auto`` (automatic invocation, so a tool error
goes back to the model as the function result). A conversation's turns share one
``ChatHistoryAgentThread`` (``thread_id`` = the conversation id); the streaming scenario uses
``agent.invoke_stream``.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Annotated

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def setup_logging() -> None:
    """Route SK's log records (its GenAI message events) to the global LoggerProvider."""
    from opentelemetry.sdk._logs import LoggingHandler

    handler = LoggingHandler()
    handler.addFilter(logging.Filter("semantic_kernel"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)


def build_agent():
    from openai import AsyncOpenAI
    from semantic_kernel.agents import ChatCompletionAgent
    from semantic_kernel.connectors.ai import FunctionChoiceBehavior
    from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
    from semantic_kernel.functions import kernel_function

    class ShopPlugin:
        """Orders and shipments."""

        @kernel_function(name="get_order", description="Look up an order by its id.")
        def get_order(self, order_id: Annotated[str, "The order id, e.g. A100"]) -> str:
            return call_tool("get_order", {"order_id": order_id})

        @kernel_function(name="track_shipment", description="Track a shipment by its tracking id.")
        def track_shipment(
            self, tracking_id: Annotated[str, "The tracking id, e.g. TRK-A100"]
        ) -> str:
            return call_tool("track_shipment", {"tracking_id": tracking_id})

    client = AsyncOpenAI(base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    service = OpenAIChatCompletion(ai_model_id=MODEL, async_client=client)
    return ChatCompletionAgent(
        service=service,
        name="ShopAssistant",
        instructions=SYSTEM_PROMPT,
        plugins=[ShopPlugin()],
        function_choice_behavior=FunctionChoiceBehavior.Auto(),
    )


async def run() -> None:
    from semantic_kernel.agents import ChatHistoryAgentThread

    for scenario in scenarios():
        agent = build_agent()
        thread = ChatHistoryAgentThread(thread_id=scenario.conversation_id)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    parts = []
                    async for chunk in agent.invoke_stream(messages=spec["user"], thread=thread):
                        parts.append(str(chunk.content or ""))
                        thread = chunk.thread
                    record.answer = "".join(parts)
                else:
                    response = await agent.get_response(messages=spec["user"], thread=thread)
                    thread = response.thread
                    record.answer = str(response.content)


def main() -> None:
    tracer_provider, logger_provider = setup_otel(logs=True)
    setup_logging()
    asyncio.run(run())
    shutdown(tracer_provider, logger_provider)


if __name__ == "__main__":
    main()
