"""Strands Agents driver: an ``Agent`` with two ``@tool`` functions over ``OpenAIModel``.

Telemetry is Strands' own (``StrandsTelemetry().setup_otlp_exporter()``), which records message
content by default. Modes (``FW_MODE``): ``default`` (the span events ``gen_ai.user.message``,
``gen_ai.choice``, ...) or ``latest`` (run with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``: content in
``gen_ai.client.inference.operation.details`` span events); the mode only labels the setup,
Strands reads the environment variable itself.

A conversation's turns go to the same ``Agent`` object (its conversation manager keeps the
history); ``trace_attributes={"session.id": ...}`` tags its spans with the conversation id, as
Strands' tracing documentation shows. A raising tool is turned into an error tool result for
the model by Strands itself. The streaming scenario uses ``Agent.stream_async``.
"""

from __future__ import annotations

import asyncio

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, shutdown, turn


def build_agent(conversation_id: str):
    from strands import Agent, tool
    from strands.models.openai import OpenAIModel

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order by its id.

        Args:
            order_id: The order id, e.g. A100
        """
        return call_tool("get_order", {"order_id": order_id})

    @tool
    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id.

        Args:
            tracking_id: The tracking id, e.g. TRK-A100
        """
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    model = OpenAIModel(
        client_args={"base_url": fwtools.BASE_URL, "api_key": fwtools.API_KEY},
        model_id=MODEL,
    )
    return Agent(
        model=model,
        tools=[get_order, track_shipment],
        system_prompt=SYSTEM_PROMPT,
        callback_handler=None,
        trace_attributes={"session.id": conversation_id},
    )


async def stream_turn(agent, prompt: str) -> str:
    result = None
    async for event in agent.stream_async(prompt):
        if "result" in event:
            result = event["result"]
    return str(result).strip()


def main() -> None:
    from strands.telemetry import StrandsTelemetry

    telemetry = StrandsTelemetry()
    telemetry.setup_otlp_exporter()
    for scenario in scenarios():
        agent = build_agent(scenario.conversation_id)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    record.answer = asyncio.run(stream_turn(agent, spec["user"]))
                else:
                    record.answer = str(agent(spec["user"])).strip()
    shutdown(telemetry.tracer_provider)


if __name__ == "__main__":
    main()
