"""Agno driver: an ``Agent`` over ``OpenAIChat``, instrumented with OpenInference.

Telemetry is ``openinference-instrumentation-agno`` (``AgnoInstrumentor().instrument()`` on the
global tracer provider, as its README shows); OpenInference records message content unless
told to hide it (``OPENINFERENCE_HIDE_*``), so nothing is switched on. The tools are plain
Python functions (Agno builds their schemas from signature and docstring); a tool that raises
is reported back to the model as the tool result (Agno's default). A conversation's turns share
one session (``session_id`` = the conversation id) stored in an ``InMemoryDb``, with
``add_history_to_context=True``; the streaming scenario uses ``agent.run(..., stream=True)``.
"""

from __future__ import annotations

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def get_order(order_id: str) -> str:
    """Look up an order by its id.

    Args:
        order_id: The order id, e.g. A100
    """
    return call_tool("get_order", {"order_id": order_id})


def track_shipment(tracking_id: str) -> str:
    """Track a shipment by its tracking id.

    Args:
        tracking_id: The tracking id, e.g. TRK-A100
    """
    return call_tool("track_shipment", {"tracking_id": tracking_id})


def build_agent():
    from agno.agent import Agent
    from agno.db.in_memory import InMemoryDb
    from agno.models.openai import OpenAIChat

    return Agent(
        name="shop_assistant",
        model=OpenAIChat(id=MODEL, base_url=fwtools.BASE_URL, api_key=fwtools.API_KEY),
        tools=[get_order, track_shipment],
        instructions=SYSTEM_PROMPT,
        db=InMemoryDb(),
        add_history_to_context=True,
    )


def main() -> None:
    tracer_provider, _ = setup_otel()
    from openinference.instrumentation.agno import AgnoInstrumentor

    AgnoInstrumentor().instrument(tracer_provider=tracer_provider)
    for scenario in scenarios():
        agent = build_agent()
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                if scenario.stream:
                    for _event in agent.run(
                        spec["user"], session_id=scenario.conversation_id, stream=True
                    ):
                        pass
                    output = agent.get_last_run_output(session_id=scenario.conversation_id)
                else:
                    output = agent.run(spec["user"], session_id=scenario.conversation_id)
                record.answer = output.content if output else None
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
