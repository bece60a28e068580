"""The runner's own OpenTelemetry: one process-wide tracer (and logger) provider whose
exports go to the current run's receiver, case spans, and W3C propagation.

OpenTelemetry lets a process set its global tracer provider once
(``opentelemetry.trace.set_tracer_provider``), while every ``tracegrade run`` starts its own
receiver on new ports. So :func:`install` sets (or joins) the global provider once per
process and adds a *routing* processor to it; :meth:`RunExport.open` points that router at a
``BatchSpanProcessor`` exporting OTLP/HTTP to this run's receiver, and :meth:`RunExport.close`
flushes and detaches it. In-process agents that call ``trace.get_tracer(...)`` (before or
after the runner starts) therefore export to the run's receiver, and their spans become
children of the case span the runner makes current.

If the agent's module already set an SDK ``TracerProvider``, the router is added to it (the
agent's own exporters keep working); the same holds for the logs provider (GenAI semconv up to
1.36 puts message content in log records). One run at a time per process.

A simulated user's calls are traced apart (:class:`SimulatorExport`): a tracer provider of
its own (``service.name`` :data:`~tracegrade.attributes.SIMULATOR_SERVICE`), never the
global one, exporting to the run's receiver; each attempt's simulated user is one trace of its
own, whose root names the case by :data:`~tracegrade.attributes.SIMULATED_CASE_ATTR` (never
``tracegrade.case_id``), so no agent trace holds a simulator span.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from opentelemetry import _logs, baggage, trace
from opentelemetry import context as otel_context
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import GEN_AI_CONVERSATION_ID
from opentelemetry.trace import Span, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from tracegrade.attributes import (
    CASE_ID_ATTR,
    CONVERSATION_ID_ATTR,
    REPEAT_ATTR,
    REVIVAL_ATTR,
    RUN_ID_ATTR,
    RUNNER_SCOPE,
    SIMULATED_CASE_ATTR,
    SIMULATOR_SERVICE,
)
from tracegrade.errors import ConfigError

TRACER_NAME = RUNNER_SCOPE
CONVERSATION_ATTR = GEN_AI_CONVERSATION_ID
"""The GenAI semantic conventions' conversation id, on the runner's case spans."""
FLUSH_TIMEOUT_MS = 10_000
"""How long a flush may take before the case goes on without it (ms)."""

_PROPAGATOR = CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
_lock = threading.Lock()


class _Router:
    """A span or log-record processor that forwards to the current run's processor (or drops
    while no run is open). Thread-safe: the target is swapped atomically."""

    def __init__(self) -> None:
        self.target: Any = None

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if (target := self.target) is not None:
            target.on_start(span, parent_context=parent_context)

    def on_end(self, span: Any) -> None:
        if (target := self.target) is not None:
            target.on_end(span)

    def on_emit(self, record: Any) -> None:
        if (target := self.target) is not None:
            target.on_emit(record)

    def emit(self, record: Any) -> None:  # opentelemetry-sdk < 1.35 calls emit()
        if (target := self.target) is not None:
            getattr(target, "emit", target.on_emit)(record)

    def _on_ending(self, span: Any) -> None:
        if (target := self.target) is not None and hasattr(target, "_on_ending"):
            target._on_ending(span)

    def shutdown(self) -> None:
        pass

    def force_flush(self, timeout_millis: int = FLUSH_TIMEOUT_MS) -> bool:
        target = self.target
        return True if target is None else bool(target.force_flush(timeout_millis))


class _SpanRouter(_Router, SpanProcessor):
    """The routing span processor."""


class _LogRouter(_Router, LogRecordProcessor):
    """The routing log-record processor."""


_spans: _SpanRouter | None = None
_logs_router: _LogRouter | None = None


def _resource(service_name: str | None) -> Resource:
    """The SDK's resource (``OTEL_SERVICE_NAME``, ``OTEL_RESOURCE_ATTRIBUTES``, the SDK's
    defaults) with ``service.name`` set to ``service_name`` where it would be the SDK's
    ``unknown_service:...``: an in-process agent's spans carry the agent's name."""
    resource = Resource.create()
    named = str(resource.attributes.get("service.name", ""))
    if service_name and named.startswith("unknown_service"):
        resource = resource.merge(Resource({"service.name": service_name}))
    return resource


def _join_tracer_provider(router: _SpanRouter, service_name: str | None) -> None:
    current = trace.get_tracer_provider()
    if isinstance(current, TracerProvider):
        current.add_span_processor(router)
        return
    provider = TracerProvider(resource=_resource(service_name))
    provider.add_span_processor(router)
    trace.set_tracer_provider(provider)
    if trace.get_tracer_provider() is not provider:
        raise ConfigError(
            "the global OpenTelemetry tracer provider is a "
            f"{type(trace.get_tracer_provider()).__name__}, not the SDK's TracerProvider: "
            "in-process agents cannot export to the run's receiver"
        )


def _join_logger_provider(router: _LogRouter, service_name: str | None) -> None:
    current = _logs.get_logger_provider()
    if isinstance(current, LoggerProvider):
        current.add_log_record_processor(router)
        return
    provider = LoggerProvider(resource=_resource(service_name))
    provider.add_log_record_processor(router)
    _logs.set_logger_provider(provider)


def install(service_name: str | None = None) -> None:
    """Join (or set) the global tracer and logger providers once per process (see the module
    docstring). A provider set here names its resource's ``service.name`` ``service_name``
    (e.g. the in-process agent's ``module:function``) unless the environment names it.

    Raises:
        ConfigError: the global tracer provider is set and is not the SDK's.
    """
    global _spans, _logs_router
    with _lock:
        if _spans is None:
            router = _SpanRouter()
            _join_tracer_provider(router, service_name)
            _spans = router
        if _logs_router is None:
            logs_router = _LogRouter()
            _join_logger_provider(logs_router, service_name)
            _logs_router = logs_router


def route(spans: SpanProcessor | None, logs: LogRecordProcessor | None) -> None:
    """Install the providers (:func:`install`) and send every span and log record of the
    process to ``spans`` / ``logs`` (None drops them), e.g. in-memory processors for the pytest
    plugin's capture. One destination at a time (a run or a capture)."""
    install()
    assert _spans is not None and _logs_router is not None
    _spans.target = spans
    _logs_router.target = logs


class RunExport:
    """One run's export path: batch processors sending OTLP/HTTP to the receiver at
    ``endpoint`` (``http://host:port``), attached to the routers while the run is open."""

    def __init__(self, endpoint: str, service_name: str | None = None):
        self.endpoint = endpoint.rstrip("/")
        self.service_name = service_name
        self._spans: BatchSpanProcessor | None = None
        self._logs: BatchLogRecordProcessor | None = None

    def open(self) -> RunExport:
        """Install the providers (:func:`install`) and route exports to this run."""
        install(self.service_name)
        self._spans = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{self.endpoint}/v1/traces"))
        self._logs = BatchLogRecordProcessor(OTLPLogExporter(endpoint=f"{self.endpoint}/v1/logs"))
        assert _spans is not None and _logs_router is not None
        _spans.target = self._spans
        _logs_router.target = self._logs
        return self

    def flush(self) -> bool:
        """Export everything ended so far and wait for the receiver's acknowledgement (which
        comes after commit); False when it did not finish within :data:`FLUSH_TIMEOUT_MS`."""
        spans = self._spans.force_flush(FLUSH_TIMEOUT_MS) if self._spans else True
        logs = self._logs.force_flush(FLUSH_TIMEOUT_MS) if self._logs else True
        return bool(spans and logs)

    def close(self) -> None:
        """Flush, detach from the routers and shut the processors down."""
        if _spans is not None and _spans.target is self._spans:
            _spans.target = None
        if _logs_router is not None and _logs_router.target is self._logs:
            _logs_router.target = None
        if self._spans is not None:
            self._spans.shutdown()
        if self._logs is not None:
            self._logs.shutdown()
        self._spans = self._logs = None

    def __enter__(self) -> RunExport:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def case_attributes(run_id: str, case_id: str, repeat: int) -> dict[str, Any]:
    """The attributes of a case span (and of W3C baggage): run id, case id, repeat."""
    return {RUN_ID_ATTR: run_id, CASE_ID_ATTR: case_id, REPEAT_ATTR: repeat}


def session_labels(conversation_id: str, revival: int) -> dict[str, Any]:
    """The attributes (and W3C baggage) of one session of an attempt: its conversation id,
    and which revival of the agent it follows (left out for the first session)."""
    labels: dict[str, Any] = {CONVERSATION_ID_ATTR: conversation_id}
    if revival:
        labels[REVIVAL_ATTR] = revival
    return labels


def start_case_span(
    run_id: str, case_id: str, repeat: int, conversation_id: str | None = None, revival: int = 0
) -> Span:
    """Start the root span of one session of an attempt of a case (``tracegrade case <id>``),
    not current; with ``conversation_id``, ``gen_ai.conversation.id`` and the revival too."""
    attributes = case_attributes(run_id, case_id, repeat)
    if conversation_id is not None:
        attributes[CONVERSATION_ATTR] = conversation_id
        if revival:
            attributes[REVIVAL_ATTR] = revival
    tracer = trace.get_tracer(TRACER_NAME)
    return tracer.start_span(
        f"tracegrade case {case_id}", context=otel_context.Context(), attributes=attributes
    )


def end_case_span(span: Span, error: BaseException | None) -> None:
    """End a case span, with status ERROR and the exception's type when ``error`` is set."""
    if error is not None:
        span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"[:500]))
    span.end()


def trace_id_of(span: Span) -> str:
    """The span's trace id as 32 lowercase hex digits."""
    return format(span.get_span_context().trace_id, "032x")


def propagation_headers(span: Span, labels: Mapping[str, Any]) -> dict[str, str]:
    """W3C ``traceparent`` (the span's context) and ``baggage`` (``labels``) headers."""
    ctx = trace.set_span_in_context(span, otel_context.Context())
    for key, value in labels.items():
        ctx = baggage.set_baggage(key, str(value), ctx)
    headers: dict[str, str] = {}
    _PROPAGATOR.inject(headers, context=ctx)
    return headers


def resource_attributes_env(existing: str | None, labels: Mapping[str, Any]) -> str:
    """``OTEL_RESOURCE_ATTRIBUTES`` with ``labels`` appended to ``existing`` (values
    percent-encoded, as the OpenTelemetry environment-variable specification requires)."""
    ours = ",".join(f"{key}={quote(str(value), safe='')}" for key, value in labels.items())
    return f"{existing.strip().rstrip(',')},{ours}" if existing and existing.strip() else ours


class SimulatorExport:
    """The simulated users' tracer provider for one run (see the module docstring): spans
    batched and sent over OTLP/HTTP to the receiver at ``endpoint`` (``http://host:port``)."""

    def __init__(self, endpoint: str):
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": SIMULATOR_SERVICE})
        )
        self.provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint.rstrip('/')}/v1/traces"))
        )
        self.tracer = self.provider.get_tracer(TRACER_NAME)

    def conversation_span(self, run_id: str, case_id: str, repeat: int, simulator: str) -> Span:
        """The root span of one attempt's simulated user (a trace of its own), not current."""
        return self.tracer.start_span(
            f"simulated_user {case_id}",
            context=otel_context.Context(),
            attributes={
                RUN_ID_ATTR: run_id,
                SIMULATED_CASE_ATTR: case_id,
                REPEAT_ATTR: repeat,
                "tracegrade.simulator": simulator,
            },
        )

    def step_span(self, parent: Span, name: str, attributes: Mapping[str, Any]) -> Span:
        """A span of one simulator step under ``parent``, not current."""
        context = trace.set_span_in_context(parent, otel_context.Context())
        return self.tracer.start_span(name, context=context, attributes=dict(attributes))

    def flush(self) -> bool:
        """Export every ended span; False when it did not finish in time."""
        return bool(self.provider.force_flush(FLUSH_TIMEOUT_MS))

    def close(self) -> None:
        """Flush and shut the provider down."""
        self.provider.shutdown()
