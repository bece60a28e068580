"""CrewAI driver: one ``Crew`` with one ``Agent`` and one ``Task`` per user turn.

The task's description is the template ``{question}``, filled by ``crew.kickoff(inputs=...)``
with the user's text (CrewAI's documented way to parametrise a crew).

Instrumentation (``FW_MODE``): ``openinference`` (default): ``openinference-instrumentation-
crewai`` (crew, task, agent and tool spans) plus ``openinference-instrumentation-openai`` for
the LLM calls (CrewAI 1.x calls OpenAI models through its native provider, the ``openai``
client, not LiteLLM); content capture is OpenInference's default; each turn runs inside
``using_session(conversation_id)`` (OpenInference's documented way to put ``session.id`` on
the spans). ``openllmetry``: OpenLLMetry's ``opentelemetry-instrumentation-crewai`` plus
``opentelemetry-instrumentation-openai`` (Traceloop's), content on by default
(``TRACELOOP_TRACE_CONTENT`` unset); OpenLLMetry has no session context without the
traceloop SDK, so no session id.

Tools are ``@tool`` functions; a tool that raises is reported back to the agent by CrewAI
itself (the error text becomes the tool result). The second turn of a conversation carries
the first through ``Task(context=[first_task])``: CrewAI puts the earlier task's output in
the new task's prompt. The streaming scenario uses ``LLM(stream=True)`` with
``Crew(stream=True)``, iterating the kickoff's chunks.
"""

from __future__ import annotations

import contextlib

import fwtools
from fwtools import MODE, MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def instrument(tracer_provider) -> None:
    if MODE == "openllmetry":
        from opentelemetry.instrumentation.crewai import CrewAIInstrumentor as OpenLLMetryCrewAI
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor as OpenLLMetryOpenAI

        OpenLLMetryCrewAI().instrument(tracer_provider=tracer_provider)
        OpenLLMetryOpenAI().instrument(tracer_provider=tracer_provider)
        return
    from openinference.instrumentation.crewai import CrewAIInstrumentor
    from openinference.instrumentation.openai import OpenAIInstrumentor

    CrewAIInstrumentor().instrument(tracer_provider=tracer_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)


def make_tools():
    from crewai.tools import tool

    @tool("get_order")
    def get_order(order_id: str) -> str:
        """Look up an order by its id."""
        return call_tool("get_order", {"order_id": order_id})

    @tool("track_shipment")
    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id."""
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    return [get_order, track_shipment]


def make_crew(stream: bool, context: list):
    from crewai import LLM, Agent, Crew, Process, Task

    llm = LLM(
        model=f"openai/{MODEL}",
        base_url=fwtools.BASE_URL,
        api_key=fwtools.API_KEY,
        stream=stream,
    )
    agent = Agent(
        role="Shop assistant",
        goal="Answer the customer's question about their orders and shipments.",
        backstory=SYSTEM_PROMPT,
        tools=make_tools(),
        llm=llm,
        allow_delegation=False,
        max_iter=6,
    )
    task = Task(
        description="{question}",
        expected_output="A short answer to the customer.",
        agent=agent,
        context=context or None,
    )
    crew = Crew(agents=[agent], tasks=[task], process=Process.sequential, stream=stream)
    return crew, task


def session(conversation_id: str):
    """OpenInference's session context (no-op with OpenLLMetry)."""
    if MODE == "openllmetry":
        return contextlib.nullcontext()
    from openinference.instrumentation import using_session

    return using_session(conversation_id)


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    for scenario in scenarios():
        earlier: list = []  # the conversation's earlier tasks, passed as context
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, session(scenario.conversation_id):
                crew, task = make_crew(scenario.stream, list(earlier))
                inputs = {"question": spec["user"]}
                if scenario.stream:
                    streaming = crew.kickoff(inputs=inputs)
                    for _chunk in streaming:
                        pass
                    result = streaming.result
                else:
                    result = crew.kickoff(inputs=inputs)
                record.answer = result.raw
                earlier.append(task)
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
