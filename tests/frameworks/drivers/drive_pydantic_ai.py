"""pydantic-ai driver: an ``Agent`` that traces itself, beside the OpenTelemetry OpenAI
instrumentation on the same ``openai`` client (two spans per model call).

Telemetry: pydantic-ai's own GenAI instrumentation for every agent,
``Agent.instrument_all(InstrumentationSettings(tracer_provider=..., include_content=True))``
(its default ``version``; agent run, chat and ``execute_tool`` spans), PLUS
``opentelemetry-instrumentation-openai-v2``'s ``OpenAIInstrumentor().instrument(...)`` on the
``openai`` package that pydantic-ai's ``OpenAIChatModel`` calls: each model call then has
pydantic-ai's ``chat`` span and, inside it, the instrumentation's ``chat`` span. The
instrumentation runs in its latest-experimental mode with content on spans
(``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``,
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=span_only``, the setup's env).

Tools are plain functions registered with ``tools=[...]``. A scripted tool error is raised
to the model as ``ModelRetry`` (pydantic-ai's documented way to send a tool's error back to
the model; a plain exception would end the run). A conversation's second turn passes the
first turn's ``all_messages()`` as ``message_history`` and both pass
``conversation_id=scenario.conversation_id``. Streaming: ``agent.run_stream(...)`` with
``stream_text()`` consumed to the end.
"""

from __future__ import annotations

import asyncio

import fwtools
from fwtools import (
    MODEL,
    SYSTEM_PROMPT,
    ToolFailure,
    call_tool,
    scenarios,
    setup_otel,
    shutdown,
    turn,
)


def instrument(tracer_provider) -> None:
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
    from pydantic_ai import Agent, InstrumentationSettings

    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    Agent.instrument_all(
        InstrumentationSettings(tracer_provider=tracer_provider, include_content=True)
    )


def build_agent():
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, ModelRetry
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def run(name: str, arguments: dict[str, str]) -> str:
        try:
            return call_tool(name, arguments)
        except ToolFailure as exc:
            raise ModelRetry(str(exc)) from exc

    def get_order(order_id: str) -> str:
        """Look up an order by its id.

        Args:
            order_id: The order id, e.g. A100
        """
        return run("get_order", {"order_id": order_id})

    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id.

        Args:
            tracking_id: The tracking id, e.g. TRK-A100
        """
        return run("track_shipment", {"tracking_id": tracking_id})

    client = AsyncOpenAI(base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    model = OpenAIChatModel(MODEL, provider=OpenAIProvider(openai_client=client))
    return Agent(
        model,
        name="shop_assistant",
        system_prompt=SYSTEM_PROMPT,
        tools=[get_order, track_shipment],
    )


async def run_all() -> None:
    agent = build_agent()
    for scenario in scenarios():
        history = None
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    async with agent.run_stream(
                        spec["user"],
                        message_history=history,
                        conversation_id=scenario.conversation_id,
                    ) as result:
                        async for _ in result.stream_text():
                            pass
                        record.answer = await result.get_output()
                        history = result.all_messages()
                else:
                    result = await agent.run(
                        spec["user"],
                        message_history=history,
                        conversation_id=scenario.conversation_id,
                    )
                    record.answer = result.output
                    history = result.all_messages()


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    asyncio.run(run_all())
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
