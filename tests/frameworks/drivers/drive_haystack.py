"""Haystack driver: ``haystack.components.agents.Agent`` traced by Haystack's own tracer.

Telemetry: Haystack's tracing (``haystack.tracing``) through its OpenTelemetry backend, which
Haystack 3.x ships as the ``opentelemetry-haystack`` integration:
``tracing.enable_tracing(OpenTelemetryTracer(trace.get_tracer(...)))`` on the global provider
of ``fwtools.setup_otel()``, as Haystack's OpenTelemetry page shows. No third-party
instrumentation: the spans are Haystack's (``haystack.agent.run``, ``haystack.agent.step``,
``haystack.agent.step.llm``, ``haystack.component.run`` ...) with ``haystack.*`` tags; content
tracing is switched on with ``HAYSTACK_CONTENT_TRACING_ENABLED=true`` (the setup's env).

Agent(chat_generator=OpenAIChatGenerator(model, api_base_url, api_key), tools=[Tool(...)],
system_prompt). A tool that raises is reported to the model by the agent's ``ToolInvoker``
(``raise_on_tool_invocation_failure=False``, the default). A conversation's second turn sends
the first turn's messages plus the new user message. Streaming: ``streaming_callback`` on
``agent.run`` (the generator then streams, without asking for stream usage).
"""

from __future__ import annotations

import fwtools
from fwtools import (
    MODEL,
    SYSTEM_PROMPT,
    call_tool,
    scenarios,
    setup_otel,
    shutdown,
    tool_spec,
    turn,
)


def enable_tracing() -> None:
    from haystack import tracing
    from haystack_integrations.tracing.opentelemetry import OpenTelemetryTracer
    from opentelemetry import trace

    tracing.enable_tracing(OpenTelemetryTracer(trace.get_tracer("shop_assistant")))


def make_tool(name: str):
    from haystack.tools import Tool

    spec = tool_spec(name)
    (param, schema), *_ = spec["parameters"].items()
    return Tool(
        name=name,
        description=spec["description"],
        parameters={"type": "object", "properties": {param: schema}, "required": [param]},
        function=lambda **kwargs: call_tool(name, kwargs),
    )


def build_agent():
    from haystack.components.agents import Agent
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    generator = OpenAIChatGenerator(
        api_key=Secret.from_token(fwtools.API_KEY), model=MODEL, api_base_url=fwtools.BASE_URL
    )
    agent = Agent(
        chat_generator=generator,
        tools=[make_tool("get_order"), make_tool("track_shipment")],
        system_prompt=SYSTEM_PROMPT,
        max_agent_steps=6,
    )
    agent.warm_up()
    return agent


def main() -> None:
    from haystack.dataclasses import ChatMessage

    tracer_provider, _ = setup_otel()
    enable_tracing()
    agent = build_agent()
    for scenario in scenarios():
        messages: list = []
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                messages = [*messages, ChatMessage.from_user(spec["user"])]
                callback = (lambda chunk: None) if scenario.stream else None
                result = agent.run(messages=messages, streaming_callback=callback)
                record.answer = result["last_message"].text
                messages = [m for m in result["messages"] if not m.is_from("system")]
    shutdown(tracer_provider)


if __name__ == "__main__":
    main()
