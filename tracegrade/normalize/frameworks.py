"""Which agent framework recorded a trace, and the settings that make it record more.

Conventions say how a span is written; a framework decides what it writes and which switch
turns content on. Lint and gaps name the framework's own switch (Strands Agents records
content by default, in span events: advising the GenAI capture variable there is wrong; Google
ADK 2.x records none by default, and that variable is its switch). A framework is recognised
by its instrumentation scope name (``InstrumentationScope.name`` of its spans).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Framework:
    """A framework: ``scopes`` are scope names that identify it; ``content`` says how
    to capture message content with it; ``llm_spans`` how to get LLM spans where it emits
    none (``None``: it emits them)."""

    name: str
    scopes: tuple[str, ...]
    content: str
    llm_spans: str | None = None


FRAMEWORKS: tuple[Framework, ...] = (
    Framework(
        "Strands Agents",
        ("strands",),
        "Strands Agents records message content by default, in span events (and in "
        "gen_ai.client.inference.operation.details events with "
        "OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental): export the span events "
        "(a processor, exporter or Collector that drops them drops the content)",
    ),
    Framework(
        "Google ADK",
        ("gcp.vertex.agent",),
        "Google ADK 2.x records no message content by default: set "
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=SPAN_AND_EVENT (or SPAN_ONLY / "
        "EVENT_ONLY; with ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1 keep "
        "ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS=true)",
    ),
    Framework(
        "AutoGen",
        ("autogen",),
        "AutoGen's own spans carry no message content",
        "AutoGen emits no LLM spans: instrument its model client, as AutoGen's tracing guide "
        "does (opentelemetry-instrumentation-openai; or opentelemetry-instrumentation-openai-v2, "
        "openinference-instrumentation-openai)",
    ),
    Framework(
        "Semantic Kernel",
        ("semantic_kernel",),
        "set SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS_SENSITIVE=true and export "
        "the semantic_kernel Python log records through OpenTelemetry's LoggingHandler",
    ),
    Framework(
        "Vercel AI SDK",
        ("ai",),
        "pass experimental_telemetry: {isEnabled: true, recordInputs: true, recordOutputs: true}",
    ),
)


def _owns(prefix: str, scope: str) -> bool:
    return scope == prefix or scope.startswith((prefix + ".", prefix + "-"))


def detect(scopes: Iterable[str]) -> Framework | None:
    """The framework that owns one of ``scopes``: a scope name equal to one of its prefixes
    or continuing it after ``.`` or ``-`` (``autogen-core``, ``strands.telemetry.tracer``)."""
    names = set(scopes)
    for framework in FRAMEWORKS:
        if any(_owns(prefix, name) for prefix in framework.scopes for name in names):
            return framework
    return None
