"""smolagents CodeAgent driver: a ``CodeAgent`` over ``OpenAIServerModel`` (chat completions):
the model writes its tool calls as Python in a ``<code>`` block, which smolagents runs in its
local interpreter, and ends with ``final_answer(...)`` in code (no ``tool_calls`` on the wire).

Instrumentation: ``openinference-instrumentation-smolagents`` (agent run, step, model and tool
spans); content capture is OpenInference's default. Each turn runs inside
``using_session(conversation_id)`` (OpenInference's documented way to put ``session.id`` on
the spans).

Tools are ``@tool`` functions, called from the model's code; the answer is the code's
``final_answer(...)``. A tool that raises is recorded by
smolagents as the step's error and shown to the model in the next step (its default). The two
turns of a conversation are two ``agent.run(..., reset=False)`` calls on one agent (its
memory keeps the first turn). The streaming scenario uses ``stream_outputs=True`` (the model
is called with ``stream=True``) and ``agent.run(..., stream=True)``, iterating the steps.
"""

from __future__ import annotations

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def instrument(tracer_provider) -> None:
    from openinference.instrumentation.smolagents import SmolagentsInstrumentor

    SmolagentsInstrumentor().instrument(tracer_provider=tracer_provider)


def build_agent(stream: bool):
    from smolagents import CodeAgent, OpenAIServerModel, tool

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

    model = OpenAIServerModel(model_id=MODEL, api_base=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    return CodeAgent(
        tools=[get_order, track_shipment],
        model=model,
        instructions=SYSTEM_PROMPT,
        max_steps=6,
        stream_outputs=stream,
        verbosity_level=0,
    )


def main() -> None:
    from openinference.instrumentation import using_session
    from smolagents.memory import FinalAnswerStep

    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    for scenario in scenarios():
        agent = build_agent(scenario.stream)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, using_session(scenario.conversation_id):
                reset = index == 0
                if scenario.stream:
                    for event in agent.run(spec["user"], stream=True, reset=reset):
                        if isinstance(event, FinalAnswerStep):
                            record.answer = event.output
                else:
                    record.answer = agent.run(spec["user"], reset=reset)
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
