"""Evaluation records and figures sent to an OTLP endpoint (``--export-otlp ENDPOINT``)
through the OpenTelemetry SDK: its OTLP log exporter behind a ``BatchLogRecordProcessor``
for the ``gen_ai.evaluation.result`` records, its OTLP metric exporter behind a
``PeriodicExportingMetricReader`` for the figures (gauges), both from a resource
``service.name=tracegrade`` (plus ``OTEL_RESOURCE_ATTRIBUTES``). What is sent:
:mod:`tracegrade.report.evaluation_signals`.

Configuration, as every OpenTelemetry SDK reads it (the SDK's exporters read the rest):
``ENDPOINT`` is the base URL, standing for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (OTLP/HTTP posts
to ``ENDPOINT/v1/logs`` and ``ENDPOINT/v1/metrics``; gRPC uses it as is, ``http://`` meaning
no TLS); ``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` / ``..._METRICS_ENDPOINT`` win for their
signal; the protocol is ``OTEL_EXPORTER_OTLP_{LOGS,METRICS}_PROTOCOL``, else
``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf`` (``grpc`` the other choice);
headers (authentication), timeout (10 s per batch, retries included), TLS certificates and
compression come from ``OTEL_EXPORTER_OTLP_*`` (and their per-signal forms).

Exporting never changes a verdict or an exit code and never holds a run up for long:

- records are batched (512) and sent from the SDK's worker thread; the SDK retries
  retryable failures (backoff, ``Retry-After``) within the timeout;
- at most :data:`QUEUE_RECORDS` records wait; when the queue is full a record waits for
  room up to :data:`ROOM_WAIT_S` while the endpoint keeps up, and is dropped (counted) while
  it does not;
- :meth:`OtlpExport.close` sends what is left within :data:`FLUSH_TIMEOUT_S` and gives up
  at once when the endpoint fails (a dead endpoint costs the run a few milliseconds);
- the SDK's own log messages about these exports are kept, not printed: the first failure
  is reported once (:meth:`OtlpExport.problem`, :class:`ExportReport`).
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlparse, urlsplit, urlunsplit

from opentelemetry import trace as trace_api
from opentelemetry._logs import SeverityNumber
from opentelemetry.context import Context
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    BatchLogRecordProcessor,
    LogRecordExporter,
    LogRecordExportResult,
)
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics import _Gauge as SdkGauge  # the class the readers key on
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource

from tracegrade import environment
from tracegrade._util.url_secrets import hidden, url_secrets
from tracegrade.errors import ConfigError
from tracegrade.report.evaluation_signals import INSTRUMENTS, EvaluationRecord, Figure
from tracegrade.store.feedback import EVENT as EVALUATION_EVENT
from tracegrade.version import __version__

__all__ = ["FLUSH_TIMEOUT_S", "ExportReport", "ExportTarget", "OtlpExport"]

Protocol = Literal["grpc", "http/protobuf"]
Signal = Literal["logs", "metrics"]

QUEUE_RECORDS = 4096
"""Records waiting to be sent, at most (a few MB)."""
BATCH_RECORDS = 512
"""Records per export request."""
ROOM_WAIT_S = 1.0
"""How long a record waits for room in a full queue before the endpoint counts as failing."""
FLUSH_TIMEOUT_S = 5.0
"""How long :meth:`OtlpExport.close` may take to send what is left (a healthy endpoint)."""
SCOPE = "tracegrade"
"""The instrumentation scope of the records and instruments."""

_PROTOCOLS: tuple[Protocol, ...] = ("http/protobuf", "grpc")
_ENDPOINT_ENV = {
    "logs": environment.OTEL_EXPORTER_OTLP_LOGS_ENDPOINT,
    "metrics": environment.OTEL_EXPORTER_OTLP_METRICS_ENDPOINT,
}
_PROTOCOL_ENV = {
    "logs": environment.OTEL_EXPORTER_OTLP_LOGS_PROTOCOL,
    "metrics": environment.OTEL_EXPORTER_OTLP_METRICS_PROTOCOL,
}


# --- where to -------------------------------------------------------------------------------


def _protocol(signal: Signal, environ: Mapping[str, str]) -> Protocol:
    name = _PROTOCOL_ENV[signal]
    general = environment.OTEL_EXPORTER_OTLP_PROTOCOL
    value = (environ.get(name) or environ.get(general) or "").strip()
    if not value:
        return "http/protobuf"
    if value not in _PROTOCOLS:
        raise ConfigError(
            f"OTLP protocol {value!r} ({name} or {general}): "
            "the OpenTelemetry Python exporters speak http/protobuf or grpc; set one of them"
        )
    return "grpc" if value == "grpc" else "http/protobuf"


@dataclass(frozen=True)
class ExportTarget:
    """Where and how to send (module docstring): the base ``endpoint`` URL and each
    signal's protocol and per-signal endpoint variable, if set."""

    endpoint: str
    protocols: Mapping[Signal, Protocol]
    signal_endpoints: Mapping[Signal, str]

    @classmethod
    def resolve(cls, endpoint: str, environ: Mapping[str, str] | None = None) -> ExportTarget:
        """The target of ``--export-otlp ENDPOINT`` in ``environ`` (default the process's).

        Raises:
            ConfigError: ENDPOINT is not an http(s) URL; an unknown protocol.
        """
        env = os.environ if environ is None else environ
        url = urlparse(endpoint.strip())
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ConfigError(
                f"--export-otlp {masked_url(endpoint)!r}: give the collector's URL, e.g. "
                "http://localhost:4318 (OTLP/HTTP) or http://localhost:4317 with "
                "OTEL_EXPORTER_OTLP_PROTOCOL=grpc"
            )
        signals: tuple[Signal, ...] = ("logs", "metrics")
        return cls(
            endpoint.strip().rstrip("/"),
            {s: _protocol(s, env) for s in signals},
            {s: env[_ENDPOINT_ENV[s]] for s in signals if env.get(_ENDPOINT_ENV[s])},
        )

    def exporter_endpoint(self, signal: Signal) -> str | None:
        """The ``endpoint`` argument of the signal's SDK exporter: None when the per-signal
        variable is set (the exporter reads it), the URL as is for gRPC, the URL with the
        signal's path for OTLP/HTTP."""
        if signal in self.signal_endpoints:
            return None
        if self.protocols[signal] == "grpc":
            return self.endpoint
        parts = urlsplit(self.endpoint)  # a query stays after the path
        return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/v1/{signal}"))

    def describe(self, signal: Signal) -> str:
        """``URL (protocol)`` of one signal, for messages (credentials masked)."""
        where = self.signal_endpoints.get(signal) or self.exporter_endpoint(signal)
        return self.masked(f"{where} ({self.protocols[signal]})")

    def masked(self, message: str) -> str:
        """``message`` (ours or the SDK's, which may quote a URL) with the credentials of
        every URL of this target replaced by ``***``: the password of the user info
        (``user:PW@``) and every query value (``?api_key=KEY``), as the store's
        :func:`tracegrade.store.database.display` masks its DSN."""
        urls = [self.endpoint, *self.signal_endpoints.values()]
        message = hidden(message, {s for url in urls for s in url_secrets(url) or ()})
        return masked_url(message)


_URL_USERINFO = re.compile(r"(://[^/\s:@]*:)[^/\s@]*@")
"""A password in a URL's user info, wherever a URL is quoted."""
_QUERY_VALUE = re.compile(r"([?&;][^=&#\s'\"<>]*=)[^&#\s'\"<>]+")
"""A query parameter's value, wherever a URL is quoted."""


def masked_url(url: str) -> str:
    """``url`` (or a message quoting URLs) with the user info's password and every query
    value replaced by ``***``."""
    return _URL_USERINFO.sub(r"\1***@", _QUERY_VALUE.sub(r"\1***", url))


def _sdk_log_exporter(target: ExportTarget) -> LogRecordExporter:
    endpoint = target.exporter_endpoint("logs")
    if target.protocols["logs"] == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter

        return OTLPLogExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http._log_exporter import (
        OTLPLogExporter as HttpLogExporter,
    )

    return HttpLogExporter(endpoint=endpoint)


def _sdk_metric_exporter(target: ExportTarget) -> MetricExporter:
    endpoint = target.exporter_endpoint("metrics")
    if target.protocols["metrics"] == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter

        return OTLPMetricExporter(endpoint=endpoint)
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
        OTLPMetricExporter as HttpMetricExporter,
    )

    return HttpMetricExporter(endpoint=endpoint)


# --- how it went -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ExportReport:
    """What an export delivered: records the endpoint accepted, records not delivered
    (refused, dropped while it failed, or left at the deadline), whether figures recorded
    were never accepted, and the first failure (None when there was none); ``reported``: that
    failure was already shown (:meth:`OtlpExport.problem`)."""

    records_sent: int
    records_lost: int
    figures_lost: bool
    problem: str | None
    reported: bool = False

    def warning(self) -> str | None:
        """The one line to show when something was not delivered (None when nothing was
        lost, or the failure was already reported)."""
        lost_any = self.records_lost or self.figures_lost
        if self.reported or (self.problem is None and not lost_any):
            return None
        total = self.records_sent + self.records_lost
        lost = f"{self.records_lost} of {total} evaluation records"
        figures = " and the figures" if self.figures_lost else ""
        return f"--export-otlp: {lost}{figures} not delivered: {self.problem or 'timed out'}"


class _Health:
    """What the exporters saw, shared by the worker threads and the caller (thread-safe).
    ``failing`` is set while the latest export attempt is failing (an SDK warning or error
    about it, or a failed export) and cleared by a delivered batch."""

    def __init__(self, target: ExportTarget) -> None:
        self.target = target
        self.lock = threading.Condition()
        self.failing = threading.Event()
        self.emitted = self.handed = self.sent = self.dropped = 0
        """Records queued, taken by the exporter, accepted, refused a place in the queue."""
        self.figures_pending = False
        """Figures were recorded and no metric export was accepted since."""
        self.problem: str | None = None
        self.reported = False

    def noted(self, level: int) -> None:
        """The SDK logged a message about one of our exports (see :class:`_SdkMessages`)."""
        if level >= logging.WARNING:
            with self.lock:
                self.failing.set()
                self.lock.notify_all()  # a record waiting for room stops waiting

    def finished(self, signal: Signal, count: int, ok: bool, reason: str | None) -> None:
        """One export call returned: ``count`` records (metric exports count 0); ``reason``:
        why it failed, as the SDK said."""
        with self.lock:
            if ok:
                self.sent += count
                self.figures_pending &= signal != "metrics"
                self.failing.clear()
            else:
                reason = reason or "the endpoint did not accept the export"
                said = self.target.masked(f"{self.target.describe(signal)}: {reason}")
                self.problem = self.problem or said
                self.failing.set()
            self.lock.notify_all()

    def report(self) -> ExportReport:
        """What was delivered so far: every record not accepted (refused, failed, still
        queued or in flight) counts as lost."""
        with self.lock:
            lost = self.emitted + self.dropped - self.sent
            figures = self.figures_pending
            return ExportReport(self.sent, lost, figures, self.problem, self.reported)


_capturing = threading.local()
_RETRY_NOTE = re.compile(r",? retrying in [\d.]+ ?s\.?")


class _SdkMessages(logging.Filter):
    """Keeps the SDK's log messages logged while one of our exports runs on this thread
    (retries, failures) from being printed: they are kept with the export (the first is its
    failure's reason) and its :class:`_Health` is told."""

    def filter(self, record: logging.LogRecord) -> bool:
        capture: _Capture | None = getattr(_capturing, "capture", None)
        if capture is None:
            return True
        capture.messages.append(record.getMessage())
        capture.health.noted(record.levelno)
        return False


@dataclass
class _Capture:
    health: _Health
    messages: list[str]

    def reason(self) -> str | None:
        """The first message, without its retry note."""
        return _RETRY_NOTE.sub("", self.messages[0]).strip() if self.messages else None


_SDK_LOGGERS = (
    "opentelemetry.exporter.otlp.proto.http._log_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
    "opentelemetry.exporter.otlp.proto.common._internal",
    "opentelemetry.exporter.otlp.proto.common._internal.metrics_encoder",
    "opentelemetry.sdk.metrics._internal",
    "opentelemetry.sdk.metrics._internal.export",
)
_FILTER = _SdkMessages()


def _capture_sdk_messages() -> None:
    """Put :data:`_FILTER` first on the SDK's exporter loggers (before their duplicate
    filters, which would hide a repeated retry warning from it); idempotent."""
    for name in _SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.filters.insert(0, _FILTER)


@contextmanager
def _exporting(health: _Health) -> Iterator[_Capture]:
    """While active, the SDK's messages on this thread are captured for ``health``."""
    previous = getattr(_capturing, "capture", None)
    _capturing.capture = capture = _Capture(health, [])
    try:
        yield capture
    finally:
        _capturing.capture = previous


def _attempt(health: _Health, signal: Signal, count: int, call: Callable[[], bool]) -> bool:
    """Run one export ``call`` (True when delivered) with the SDK's messages captured; an
    exception is a failed export, never raised."""
    with _exporting(health) as capture:
        try:
            ok, error = call(), None
        except Exception as exc:  # an exporter must not break the run
            ok, error = False, f"{type(exc).__name__}: {exc}"
    health.finished(signal, count, ok, error or capture.reason())
    return ok


class _WatchedLogs(LogRecordExporter):
    """The SDK's OTLP log exporter, its outcomes told to a :class:`_Health`."""

    def __init__(self, exporter: LogRecordExporter, health: _Health) -> None:
        self.exporter, self.health = exporter, health

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        with self.health.lock:
            self.health.handed += len(batch)
            self.health.lock.notify_all()  # room in the queue
        ok = _attempt(
            self.health,
            "logs",
            len(batch),
            lambda: self.exporter.export(batch) is LogRecordExportResult.SUCCESS,
        )
        return LogRecordExportResult.SUCCESS if ok else LogRecordExportResult.FAILURE

    def shutdown(self) -> None:
        with _exporting(self.health):
            self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class _WatchedMetrics(MetricExporter):
    """The SDK's OTLP metric exporter, its outcomes told to a :class:`_Health`. Gauges are
    collected as deltas (an OTLP gauge has no temporality: this only makes the SDK send a
    figure once and then forget it), so a follower's windows, each with its own
    ``tracegrade.window.start``, never pile up in memory or pass the SDK's cardinality
    limit."""

    def __init__(self, exporter: MetricExporter, health: _Health) -> None:
        temporality = {
            **(exporter._preferred_temporality or {}),
            SdkGauge: AggregationTemporality.DELTA,
        }
        super().__init__(temporality, exporter._preferred_aggregation)
        self.exporter, self.health = exporter, health

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        def call() -> bool:
            result = self.exporter.export(metrics_data, timeout_millis=timeout_millis)
            return result is MetricExportResult.SUCCESS

        ok = _attempt(self.health, "metrics", 0, call)
        return MetricExportResult.SUCCESS if ok else MetricExportResult.FAILURE

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        return True

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        with _exporting(self.health):
            self.exporter.shutdown(timeout_millis=timeout_millis)


# --- the export ------------------------------------------------------------------------------


def _context(trace_id: str, span_id: str | None) -> Context:
    """A context whose current span is the evaluated one (a remote, sampled span context),
    so the SDK gives the record its trace and span id."""
    span = trace_api.SpanContext(
        int(trace_id, 16),
        int(span_id, 16) if span_id else 0,
        is_remote=True,
        trace_flags=trace_api.TraceFlags(trace_api.TraceFlags.SAMPLED),
    )
    return trace_api.set_span_in_context(trace_api.NonRecordingSpan(span))


class OtlpExport:
    """Sends evaluation records and figures to one :class:`ExportTarget` (see the module
    docstring). ``periodic``: figures are also exported every ``OTEL_METRIC_EXPORT_INTERVAL``
    (default 60 s; a follower), else only by :meth:`close`. :meth:`send` and :meth:`record`
    may be called from any thread; they never raise for the endpoint's sake."""

    def __init__(self, target: ExportTarget, *, periodic: bool = False) -> None:
        _capture_sdk_messages()
        self.target, self.health = target, _Health(target)
        resource = Resource.create({"service.name": SCOPE, "service.version": __version__})
        self._logs_out = _WatchedLogs(_sdk_log_exporter(target), self.health)
        self._processor = BatchLogRecordProcessor(
            self._logs_out, max_export_batch_size=BATCH_RECORDS, max_queue_size=QUEUE_RECORDS
        )
        self._logs = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._logs.add_log_record_processor(self._processor)
        self._logger = self._logs.get_logger(SCOPE, __version__)
        self._metrics_out = _WatchedMetrics(_sdk_metric_exporter(target), self.health)
        reader = PeriodicExportingMetricReader(
            self._metrics_out, export_interval_millis=None if periodic else math.inf
        )
        self._meters = MeterProvider([reader], resource=resource, shutdown_on_exit=False)
        meter = self._meters.get_meter(SCOPE, __version__)
        self._gauges = {
            name: meter.create_gauge(name, unit=unit, description=description)
            for name, (unit, description) in INSTRUMENTS.items()
        }
        self._closed = False

    def send(self, records: Iterable[EvaluationRecord]) -> None:
        """Queue ``gen_ai.evaluation.result`` records (dropped, counted, when there is no
        room: module docstring)."""
        contexts: dict[tuple[str, str | None], Context] = {}  # a result's records share one
        for record in records:
            if not self._room():
                continue
            key = (record.trace_id, record.span_id)
            context = contexts.get(key) or contexts.setdefault(key, _context(*key))
            self._logger.emit(
                timestamp=time.time_ns(),
                context=context,
                severity_number=SeverityNumber.INFO,
                attributes=dict(record.attributes),
                event_name=EVALUATION_EVENT,
            )

    def _room(self) -> bool:
        """Whether a record may be queued (counted as emitted), waiting for room while the
        endpoint keeps up; a record refused is counted lost."""
        health = self.health
        with health.lock:
            deadline = time.monotonic() + ROOM_WAIT_S
            while health.emitted - health.handed >= QUEUE_RECORDS and not self._closed:
                left = deadline - time.monotonic()
                if health.failing.is_set() or left <= 0:
                    health.failing.set()
                    slow = f"{self.target.describe('logs')}: it does not keep up"
                    health.problem = health.problem or slow
                    break
                health.lock.wait(left)
            else:
                if not self._closed:
                    health.emitted += 1
                    return True
            health.dropped += 1
            return False

    def record(self, figures: Iterable[Figure]) -> None:
        """Set the gauges of ``figures`` (sent at the next export: :meth:`close`, or the
        periodic one)."""
        for figure in figures:
            self._gauges[figure.instrument].set(figure.value, attributes=dict(figure.attributes))
            with self.health.lock:
                self.health.figures_pending = True

    def problem(self) -> str | None:
        """The first failure, the first time it is asked for (then None: reported once)."""
        with self.health.lock:
            if self.health.problem is None or self.health.reported:
                return None
            self.health.reported = True
            return f"--export-otlp: {self.health.problem}"

    def close(self, timeout_s: float = FLUSH_TIMEOUT_S) -> ExportReport:
        """Send what is queued and the figures within ``timeout_s`` (giving up at once when
        the endpoint fails), stop the SDK's threads, and report (module docstring)."""
        if self._closed:
            return self.health.report()
        self._closed = True
        flushing = threading.Thread(target=self._flush, name="tracegrade-otlp-flush", daemon=True)
        flushing.start()
        deadline = time.monotonic() + timeout_s
        while flushing.is_alive() and not self.health.failing.is_set():
            if (left := deadline - time.monotonic()) <= 0:
                break
            flushing.join(min(0.01, left))
        done = not flushing.is_alive()
        self._stop(done)
        with self.health.lock:
            if not done and self.health.problem is None:
                self.health.problem = f"not delivered within {timeout_s:g} s"
        return self.health.report()

    def _flush(self) -> None:
        self._processor.force_flush()
        self._meters.force_flush()

    def _stop(self, done: bool) -> None:
        """Shut the SDK down; when the flush did not finish, the exporters first (which ends
        their retry waits: what is left is lost)."""
        if not done:
            self._logs_out.shutdown()
            self._metrics_out.shutdown(timeout_millis=0)

        def shutdown() -> None:
            with _exporting(self.health):
                self._logs.shutdown()
                with contextlib.suppress(Exception):  # a reader past its deadline raises
                    self._meters.shutdown(timeout_millis=1000 if done else 100)

        stopping = threading.Thread(target=shutdown, name="tracegrade-otlp-stop", daemon=True)
        stopping.start()
        stopping.join(FLUSH_TIMEOUT_S if done else 0.5)
