"""Google ADK driver: an ``LlmAgent`` with two function tools over ``LiteLlm`` (OpenAI-compatible).

Telemetry is ADK's own OpenTelemetry instrumentation, exporting to the global providers that
``fwtools.setup_otel(logs=True)`` sets (spans and log records). Its schema and content capture
are chosen by environment variables that ADK reads itself; ``FW_MODE`` only labels the setup:

- ``semconv``: ADK 2.x's default schema (GenAI-semconv aligned: ``invoke_agent``,
  ``generate_content``, ``execute_tool`` spans) with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT``.
- ``legacy``: ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` (the 1.x layout with
  ``gcp.vertex.agent.*`` attributes), content on ADK's spans (its default) and, with
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true``, in the log events too.

A ``Runner`` with an ``InMemorySessionService`` runs each turn; a scenario's turns share one
session (id = the scenario's conversation id). A raising tool is answered by the agent's
``on_tool_error_callback`` (ADK's documented hook), whose dict goes back to the model as the
function response. The streaming scenario runs with ``RunConfig(streaming_mode=SSE)``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, setup_otel, shutdown, turn

APP_NAME = "shop_assistant"
USER_ID = "user-1"


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


def on_tool_error(tool: Any, args: dict[str, Any], tool_context: Any, error: Exception) -> dict:
    """Hand a tool's exception back to the model as the function response."""
    return {"error": str(error)}


def build_agent():
    import litellm  # noqa: F401 - LiteLlm imports it lazily on the first request (seconds)
    from google.adk.agents import LlmAgent
    from google.adk.models.lite_llm import LiteLlm

    model = LiteLlm(model=f"openai/{MODEL}", api_base=fwtools.BASE_URL, api_key=fwtools.API_KEY)
    return LlmAgent(
        name="shop_assistant",
        model=model,
        instruction=SYSTEM_PROMPT,
        tools=[get_order, track_shipment],
        on_tool_error_callback=on_tool_error,
    )


async def run_all() -> None:
    from google.adk.agents.run_config import RunConfig, StreamingMode
    from google.adk.runners import Runner
    from google.adk.sessions import InMemorySessionService
    from google.genai import types

    session_service = InMemorySessionService()
    runner = Runner(agent=build_agent(), app_name=APP_NAME, session_service=session_service)
    for scenario in scenarios():
        await session_service.create_session(
            app_name=APP_NAME, user_id=USER_ID, session_id=scenario.conversation_id
        )
        run_config = RunConfig(
            streaming_mode=StreamingMode.SSE if scenario.stream else StreamingMode.NONE
        )
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record:
                message = types.Content(role="user", parts=[types.Part(text=spec["user"])])
                answer = None
                async for event in runner.run_async(
                    user_id=USER_ID,
                    session_id=scenario.conversation_id,
                    new_message=message,
                    run_config=run_config,
                ):
                    if event.is_final_response() and event.content and event.content.parts:
                        text = "".join(part.text or "" for part in event.content.parts)
                        if text:
                            answer = text
                record.answer = answer


def main() -> None:
    tracer_provider, logger_provider = setup_otel(logs=True)
    asyncio.run(run_all())
    shutdown(tracer_provider, logger_provider)


if __name__ == "__main__":
    main()
