"""The local OTLP receiver behind ``tracegrade collect`` and ``tracegrade run``.

Composes the parts: a :class:`~.ingest.Ingest` (bounded queue, one writer, group commit
into the store), the protocol-neutral :class:`~.service.ExportService`, and the two front
ends, OTLP/gRPC (:mod:`.grpc_front`, default 127.0.0.1:4317) and OTLP/HTTP
(:mod:`.http_front`, default 127.0.0.1:4318). Stopping closes the front ends first (in-flight
requests finish), then writes everything queued, then closes the store.

Usage::

    with Receiver(ReceiverConfig(grpc_port=0, http_port=0, db="runs.db")) as receiver:
        os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = receiver.http_endpoint
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from tracegrade import environment
from tracegrade.collector.address import host_port
from tracegrade.collector.admission import DEFAULT_REDACT, Redactor
from tracegrade.collector.feedback_limits import PER_CLIENT_PER_MIN, FeedbackLimits
from tracegrade.collector.grpc_front import DEFAULT_WORKERS, grpc_server
from tracegrade.collector.http_front import HttpServer, http_app
from tracegrade.collector.ingest import DEFAULT_QUEUE_BYTES, QUEUE_DEADLINE_S, Ingest, Stats
from tracegrade.collector.memory import (
    DEFAULT_MAX_MEMORY_BYTES,
    MemoryBudget,
    ResidentGuard,
    request_share,
)
from tracegrade.collector.service import DEFAULT_MAX_REQUEST_BYTES, ExportService
from tracegrade.store.database import display
from tracegrade.store.feedback import DEFAULT_ATTRIBUTE as DEFAULT_FEEDBACK_ATTRIBUTE
from tracegrade.store.feedback import MAX_PER_TRACE as DEFAULT_FEEDBACK_PER_TRACE
from tracegrade.store.traces import Store, default_path

DEFAULT_GRPC_PORT = 4317
DEFAULT_HTTP_PORT = 4318
TOKEN_ENV = environment.TRACEGRADE_TOKEN
SHUTDOWN_TIMEOUT_S = 10.0
"""How long stopping may take (s), under any load: shorter than an orchestrator's kill delay."""
DRAIN_SHARE = 0.7
"""The share of the shutdown time spent committing queued requests; the rest closes the ports."""


@dataclass(frozen=True)
class ReceiverConfig:
    """Receiver settings. Ports 0 pick free ports; ``db`` None is the default store
    (:func:`~tracegrade.store.traces.default_path`); sizes are bytes."""

    host: str = "127.0.0.1"
    grpc_port: int = DEFAULT_GRPC_PORT
    http_port: int = DEFAULT_HTTP_PORT
    db: str | None = None
    token: str | None = None
    redact: tuple[str, ...] = DEFAULT_REDACT
    redact_values: tuple[str, ...] | None = None
    """Value patterns redacted wherever they occur; None: ``config/redaction.yaml``'s."""
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES
    max_queue_bytes: int = DEFAULT_QUEUE_BYTES
    grpc_workers: int = DEFAULT_WORKERS
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES
    """Bound on the memory requests hold at once (:mod:`.memory`); at least twice
    ``max_request_bytes``. With ``guard_resident``, on all the receiver holds beyond its
    start-up footprint (:func:`~.memory.request_share`)."""
    queue_deadline_s: float | None = QUEUE_DEADLINE_S
    """Longest a request may wait in the receive queue (:data:`~.ingest.QUEUE_DEADLINE_S`)."""
    feedback_attribute: str | None = DEFAULT_FEEDBACK_ATTRIBUTE
    """The span attribute read as end-user feedback (:mod:`tracegrade.store.feedback`); None:
    none. ``gen_ai.evaluation.result`` records and ``POST /v1/feedback`` are always read."""
    feedback_per_trace: int = DEFAULT_FEEDBACK_PER_TRACE
    """Feedback records kept per trace (:mod:`.feedback_limits`): the first ones."""
    feedback_rate: int = PER_CLIENT_PER_MIN
    """``POST /v1/feedback`` requests a client may send a minute (:mod:`.feedback_limits`)."""
    guard_resident: bool = False
    """Also hold the process's real resident memory within its footprint at :meth:`Receiver.start`
    plus the bound (:class:`~.memory.ResidentGuard`): for a process that is the receiver only
    (``tracegrade collect``), since growth of anything else in the process counts too."""


class Receiver:
    """A running OTLP receiver (see the module docstring). Use as a context manager, or call
    :meth:`start` and :meth:`stop`.

    Raises:
        StoreError: the store cannot be opened (from :meth:`start`).
        OSError: a port cannot be bound (from :meth:`start`).
    """

    def __init__(self, config: ReceiverConfig = ReceiverConfig()):
        self.config = config
        self.db = default_path(config.db)
        self.memory_bound_bytes, share = request_share(
            config.max_memory_bytes, config.max_request_bytes, config.guard_resident
        )
        """The bound (``max_memory_bytes``, raised to fit two requests; see
        :func:`~.memory.request_share`)."""
        self.ingest = Ingest(
            lambda: Store(
                self.db,
                feedback_attribute=config.feedback_attribute,
                feedback_per_trace=config.feedback_per_trace,
            ),
            max_queue_bytes=max(config.max_queue_bytes, config.max_request_bytes),
            queue_deadline_s=config.queue_deadline_s,
        )
        self.service = ExportService(
            self.ingest,
            token=config.token,
            redactor=Redactor(config.redact, config.redact_values),
            max_request_bytes=config.max_request_bytes,
            memory=MemoryBudget(share),
        )
        self.grpc_port = self.http_port = 0
        self._grpc: Any = None
        self._http: HttpServer | None = None
        self.started_at = 0.0

    @property
    def grpc_endpoint(self) -> str:
        """``http://host:port`` of OTLP/gRPC (for ``OTEL_EXPORTER_OTLP_ENDPOINT`` with grpc)."""
        return f"http://{host_port(self.config.host, self.grpc_port)}"

    @property
    def http_endpoint(self) -> str:
        """``http://host:port`` of OTLP/HTTP (the SDK appends ``/v1/traces``, ``/v1/logs``)."""
        return f"http://{host_port(self.config.host, self.http_port)}"

    def start(self) -> Receiver:
        """Open the store, bind both ports and serve."""
        self.ingest.start()
        try:
            self._grpc, self.grpc_port = grpc_server(
                self.service,
                self.config.host,
                self.config.grpc_port,
                workers=self.config.grpc_workers,
            )
            limits = FeedbackLimits(self.config.feedback_per_trace, self.config.feedback_rate)
            self._http = HttpServer(
                http_app(self.service, self.health, limits),
                self.config.host,
                self.config.http_port,
            )
            self.http_port = self._http.port
            self._http.start()
        except BaseException:
            self.stop()
            raise
        if self.config.guard_resident:
            memory = self.service.memory
            memory.guard = ResidentGuard.from_now(self.memory_bound_bytes)
        self.started_at = time.time()
        return self

    def stop(self, timeout_s: float = SHUTDOWN_TIMEOUT_S) -> None:
        """Stop within ``timeout_s`` (plus one batch commit at most), whatever the load.

        New requests are refused at once (UNAVAILABLE / 503, which exporters retry); queued ones
        are committed until the drain deadline (:meth:`~.ingest.Ingest.stop`) and the rest are
        refused unstored, so every acknowledged request is in the store and no request is
        acknowledged that is not; then the front ends close, their handlers already answered.
        """
        deadline = time.monotonic() + timeout_s
        self.ingest.stop(timeout_s * DRAIN_SHARE)
        remaining = max(0.5, deadline - time.monotonic())
        if self._grpc is not None:
            self._grpc.stop(remaining).wait(remaining + 1.0)
        if self._http is not None:
            self._http.stop(max(0.5, deadline - time.monotonic()))

    def __enter__(self) -> Receiver:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def stats(self) -> Stats:
        """Counters since start (see :class:`~.ingest.Stats`)."""
        return self.ingest.stats

    def health(self) -> dict[str, Any]:
        """The ``/healthz`` document: status, ports, store, counters."""
        stats = self.stats
        return {
            "status": "ok",
            "grpc_port": self.grpc_port,
            "http_port": self.http_port,
            "store": display(self.db),
            "uptime_s": round(time.time() - self.started_at, 3),
            "stored": stats.stored_items,
            "rejected": stats.rejected_items,
            "throttled_requests": stats.throttled_requests,
            "queue_depth": stats.queue_depth,
            "memory_bytes": self.service.memory.used_bytes,
            "memory_peak_bytes": self.service.memory.peak_bytes,
            "memory_refusals": self.service.memory.refused,
            "memory_resident_refusals": self.service.memory.refused_resident,
        }

    def readiness_line(self) -> str:
        """The line ``tracegrade collect`` prints once serving: ports and store."""
        return (
            f"tracegrade collect: ready; OTLP/gRPC {host_port(self.config.host, self.grpc_port)}, "
            f"OTLP/HTTP {host_port(self.config.host, self.http_port)}, store {display(self.db)}"
        )
