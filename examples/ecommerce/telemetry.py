"""OpenTelemetry for the example agent, configured the standard way.

- LLM calls: ``opentelemetry-instrumentation-openai-v2`` (:func:`instrument_openai`), GenAI
  semantic conventions in their latest shape. An evaluation needs message content, so unless
  the variables are already set this turns on ``OTEL_SEMCONV_STABILITY_OPT_IN=
  gen_ai_latest_experimental`` and ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=
  span_only``; the agent's own ``invoke_agent`` and ``execute_tool`` spans follow the same
  switch (:func:`capture_content`). Set the variable to ``no_content`` to record none.
- The tracer provider (:func:`configure_tracing`, used by the command line and the HTTP
  service; the in-process entry point never sets one) reads the standard variables:
  ``OTEL_TRACES_EXPORTER`` (``otlp`` by default, ``console``, ``none``, or any installed
  ``opentelemetry_traces_exporter`` entry point; comma-separated), ``OTEL_EXPORTER_OTLP_PROTOCOL``
  / ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` (``grpc`` by default, as the Python SDK's
  auto-configuration does, or ``http/protobuf``), ``OTEL_EXPORTER_OTLP_ENDPOINT`` and the other
  exporter variables, ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME`` and the
  ``OTEL_BSP_*`` batch settings. The console exporter writes to stderr, so stdout carries only
  the agent's reply.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterable
from importlib.metadata import entry_points

from opentelemetry import trace
from opentelemetry.sdk.resources import SERVICE_NAME, Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
)

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""util-genai's content switch: ``span_only``, ``span_and_event``, ``event_only``,
``no_content``."""
SEMCONV_OPT_IN_ENV = "OTEL_SEMCONV_STABILITY_OPT_IN"
DEFAULT_SERVICE_NAME = "ecommerce-agent"
_CONTENT_ON_SPANS = frozenset({"span_only", "span_and_event", "true"})
_OTLP_BY_PROTOCOL = {"grpc": "otlp_proto_grpc", "http/protobuf": "otlp_proto_http"}
_EXPORTER_GROUP = "opentelemetry_traces_exporter"

_lock = threading.Lock()


def capture_content() -> bool:
    """True when message content, tool arguments and results go on spans (read per call)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CONTENT_ON_SPANS


def instrument_openai() -> None:
    """Instrument the ``openai`` client once per process (see the module docstring for the
    content defaults). The instrumentation uses the global tracer provider, resolved lazily,
    so a provider set later still receives the spans."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    with _lock:
        os.environ.setdefault(SEMCONV_OPT_IN_ENV, "gen_ai_latest_experimental")
        os.environ.setdefault(CAPTURE_CONTENT_ENV, "span_only")
        instrumentor = OpenAIInstrumentor()
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument()


def _exporter_names() -> list[str]:
    names = [
        n.strip() for n in os.environ.get("OTEL_TRACES_EXPORTER", "otlp").split(",") if n.strip()
    ]
    if names == ["none"]:
        return []
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    ).strip()
    if "otlp" in names and protocol not in _OTLP_BY_PROTOCOL:
        raise ValueError(
            f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported; "
            f"use one of {sorted(_OTLP_BY_PROTOCOL)}"
        )
    return [_OTLP_BY_PROTOCOL[protocol] if n == "otlp" else n for n in names]


def span_exporters() -> list[SpanExporter]:
    """The exporters ``OTEL_TRACES_EXPORTER`` names (each reads its own variables).

    Raises:
        ValueError: an unknown exporter name or OTLP protocol (the message lists the choices).
    """
    exporters: list[SpanExporter] = []
    for name in _exporter_names():
        if name == "console":
            exporters.append(ConsoleSpanExporter(out=sys.stderr))
            continue
        found = entry_points(group=_EXPORTER_GROUP, name=name)
        if not found:
            known = sorted(e.name for e in entry_points(group=_EXPORTER_GROUP))
            raise ValueError(
                f"OTEL_TRACES_EXPORTER names {name!r}, which is not installed; installed: {known}"
            )
        exporters.append(next(iter(found)).load()())
    return exporters


def resource() -> Resource:
    """The resource from ``OTEL_RESOURCE_ATTRIBUTES`` / ``OTEL_SERVICE_NAME``, with
    ``service.name`` defaulting to ``ecommerce-agent``."""
    detected = Resource.create()
    if str(detected.attributes.get(SERVICE_NAME, "")).startswith("unknown_service"):
        detected = detected.merge(Resource({SERVICE_NAME: DEFAULT_SERVICE_NAME}))
    return detected


def configure_tracing(processors: Iterable[SpanProcessor] = ()) -> TracerProvider:
    """Create the tracer provider from the environment, set it as the global one, and return it
    (call its ``shutdown()`` before exit: it flushes the batch).

    ``processors`` run before the exporting ones (e.g. one that copies baggage onto spans).

    Raises:
        ValueError: see :func:`span_exporters`.
    """
    provider = TracerProvider(resource=resource())
    for processor in processors:
        provider.add_span_processor(processor)
    for exporter in span_exporters():
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return provider
