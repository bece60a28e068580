"""LangGraph driver: a prebuilt ReAct agent (``create_react_agent``) over ``ChatOpenAI``.

Modes (``FW_MODE``): ``openinference`` (openinference-instrumentation-langchain) or
``openllmetry`` (opentelemetry-instrumentation-langchain, Traceloop's). Multi-turn
conversations keep their state in a ``MemorySaver`` checkpointer under a ``thread_id``; tool
errors are handed back to the model (``ToolNode(handle_tool_errors=True)``); the streaming
scenario uses ``graph.stream(stream_mode="messages")`` with a streaming model.
"""

from __future__ import annotations

import fwtools
from fwtools import MODE, MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn


def instrument(tracer_provider) -> None:
    if MODE == "openinference":
        from openinference.instrumentation.langchain import LangChainInstrumentor

        LangChainInstrumentor().instrument(tracer_provider=tracer_provider)
    elif MODE == "openllmetry":
        from opentelemetry.instrumentation.langchain import LangchainInstrumentor

        LangchainInstrumentor().instrument(tracer_provider=tracer_provider)
    else:
        raise SystemExit(f"unknown FW_MODE {MODE!r}")


def build_agent(stream: bool):
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.checkpoint.memory import MemorySaver
    from langgraph.prebuilt import ToolNode, create_react_agent

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order by its id."""
        return call_tool("get_order", {"order_id": order_id})

    @tool
    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id."""
        return call_tool("track_shipment", {"tracking_id": tracking_id})

    model = ChatOpenAI(
        model=MODEL,
        base_url=fwtools.BASE_URL,
        api_key=fwtools.API_KEY,
        streaming=stream,
        stream_usage=True,
    )
    tools = ToolNode([get_order, track_shipment], handle_tool_errors=True)
    return create_react_agent(model, tools, prompt=SYSTEM_PROMPT, checkpointer=MemorySaver())


def main() -> None:
    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    for scenario in scenarios():
        agent = build_agent(scenario.stream)
        config = {"configurable": {"thread_id": scenario.conversation_id}}
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                inputs = {"messages": [{"role": "user", "content": spec["user"]}]}
                if scenario.stream:
                    for _chunk in agent.stream(inputs, config, stream_mode="messages"):
                        pass
                    state = agent.get_state(config).values
                else:
                    state = agent.invoke(inputs, config)
                record.answer = state["messages"][-1].content
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
