"""LangChain classic ReAct driver: ``create_react_agent`` + ``AgentExecutor`` (langchain-classic),
a text-ReAct agent: the model writes ``Action:`` / ``Action Input:`` / ``Final Answer:`` in its
reply text (no tools are sent to the API, no ``tool_calls``).

The prompt is the ReAct chat prompt LangChain's docs pull from the hub (``hwchase17/react-chat``,
reproduced here: no network), with the system prompt in front; a conversation's turns share
an ``AgentExecutor`` with ``ConversationBufferMemory(memory_key="chat_history")``. Tools are
``@tool`` functions taking their single argument as the action input; a scripted error is
raised as ``ToolException`` and the tools have ``handle_tool_error=True`` (the error text
becomes the observation). Instrumentation: ``openinference-instrumentation-langchain``; each
turn runs inside ``using_session(conversation_id)``. Streaming: ``ChatOpenAI(streaming=True,
stream_usage=True)`` and ``executor.stream(...)`` consumed to its output.
"""

from __future__ import annotations

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

REACT_CHAT = (
    SYSTEM_PROMPT
    + """

TOOLS:
------

Assistant has access to the following tools:

{tools}

To use a tool, please use the following format:

```
Thought: Do I need to use a tool? Yes
Action: the action to take, should be one of [{tool_names}]
Action Input: the input to the action
Observation: the result of the action
```

When you have a response to say to the Human, or if you do not need to use a tool, \
you MUST use the format:

```
Thought: Do I need to use a tool? No
Final Answer: [your response here]
```

Begin!

Previous conversation history:
{chat_history}

New input: {input}
{agent_scratchpad}"""
)


def instrument(tracer_provider) -> None:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=tracer_provider)


def make_tools():
    from langchain_core.tools import ToolException, tool

    def run(name: str, arguments: dict[str, str]) -> str:
        try:
            return call_tool(name, arguments)
        except ToolFailure as exc:
            raise ToolException(str(exc)) from exc

    @tool
    def get_order(order_id: str) -> str:
        """Look up an order by its id, e.g. A100."""
        return run("get_order", {"order_id": order_id.strip()})

    @tool
    def track_shipment(tracking_id: str) -> str:
        """Track a shipment by its tracking id, e.g. TRK-A100."""
        return run("track_shipment", {"tracking_id": tracking_id.strip()})

    for each in (get_order, track_shipment):
        each.handle_tool_error = True
    return [get_order, track_shipment]


def build_executor(stream: bool):
    from langchain_classic.agents import AgentExecutor, create_react_agent
    from langchain_classic.memory import ConversationBufferMemory
    from langchain_core.prompts import PromptTemplate
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(
        model=MODEL,
        base_url=fwtools.BASE_URL,
        api_key=fwtools.API_KEY,
        streaming=stream,
        stream_usage=stream,
    )
    tools = make_tools()
    agent = create_react_agent(llm, tools, PromptTemplate.from_template(REACT_CHAT))
    memory = ConversationBufferMemory(memory_key="chat_history")
    return AgentExecutor(
        agent=agent, tools=tools, memory=memory, max_iterations=6, handle_parsing_errors=True
    )


def main() -> None:
    from openinference.instrumentation import using_session

    tracer_provider, _ = setup_otel()
    instrument(tracer_provider)
    for scenario in scenarios():
        executor = build_executor(scenario.stream)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, using_session(scenario.conversation_id):
                if scenario.stream:
                    for chunk in executor.stream({"input": spec["user"]}):
                        if "output" in chunk:
                            record.answer = chunk["output"]
                else:
                    record.answer = executor.invoke({"input": spec["user"]})["output"]
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
