"""Google Gen AI SDK driver: a ``google-genai`` chat with automatic function calling (the SDK
runs the Python tool functions and sends their results back itself), instrumented by one of
two instrumentations (``FW_MODE``):

- ``otel`` (default): the OpenTelemetry contrib ``opentelemetry-instrumentation-google-genai``;
  ``fwtools.setup_otel(logs=True)`` (spans and log records), then
  ``GoogleGenAiSdkInstrumentor().instrument()``; message content capture switched on the way
  the OpenTelemetry GenAI utilities document it,
  ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` = ``SPAN_AND_EVENT`` (setup file).
- ``openinference``: ``openinference-instrumentation-google-genai``,
  ``GoogleGenAIInstrumentor().instrument(tracer_provider=...)`` on ``fwtools.setup_otel()``'s
  provider; content capture is OpenInference's default.

The agent: ``client.chats.create(model, config=GenerateContentConfig(system_instruction,
tools=[get_order, track_shipment]))`` (plain functions with docstrings: the SDK declares
them and calls them), one chat per conversation, ``chat.send_message(question)`` per turn
(``send_message_stream`` for the streaming scenario, chunks consumed fully). A tool that raises
is answered by the SDK with ``{"error": "<message>"}`` as its function response. The client
reads ``GOOGLE_GEMINI_BASE_URL`` / ``GEMINI_API_KEY`` (set by ``record.py``). Each turn is
one plain span ``agent turn`` (no attributes): without it every model call of the SDK's
function-calling loop is a trace of its own.
"""

from __future__ import annotations

import fwtools
from fwtools import MODEL, SYSTEM_PROMPT, call_tool, scenarios, turn


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


def main() -> None:
    from google import genai
    from google.genai import types
    from opentelemetry import trace

    if fwtools.MODE == "openinference":
        from openinference.instrumentation.google_genai import GoogleGenAIInstrumentor

        tracer_provider, logger_provider = fwtools.setup_otel()
        GoogleGenAIInstrumentor().instrument(tracer_provider=tracer_provider)
    else:
        from opentelemetry.instrumentation.google_genai import GoogleGenAiSdkInstrumentor

        tracer_provider, logger_provider = fwtools.setup_otel(logs=True)
        GoogleGenAiSdkInstrumentor().instrument()
    client = genai.Client()
    tracer = trace.get_tracer("shop-agent")
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM_PROMPT, tools=[get_order, track_shipment]
    )
    for scenario in scenarios():
        chat = client.chats.create(model=MODEL, config=config)
        for index, spec in enumerate(scenario.turns):
            with turn(scenario, index) as record, tracer.start_as_current_span("agent turn"):
                if scenario.stream:
                    chunks = list(chat.send_message_stream(spec["user"]))
                    record.answer = "".join(c.text or "" for c in chunks)
                else:
                    record.answer = chat.send_message(spec["user"]).text
    fwtools.shutdown(tracer_provider, logger_provider)


if __name__ == "__main__":
    main()
