"""A small OTLP metrics receiver for tests (a test double): tracegrade's receiver accepts
metrics and stores none, so tests that check what ``--export-otlp`` sends as metrics point
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` here. It serves the two OTLP transports the SDK's
exporters speak (gRPC ``MetricsService/Export``; HTTP ``POST /v1/metrics``, protobuf, plain
or gzip) and keeps every request as received."""

from __future__ import annotations

import gzip
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from tracegrade.otlp.codec import decode_attributes


class MetricsSink:
    """Both transports on free loopback ports while in a ``with`` block; ``requests`` holds
    what arrived, :meth:`points` the gauge points by instrument."""

    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self._lock = threading.Lock()

    def _keep(self, request: ExportMetricsServiceRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def __enter__(self) -> MetricsSink:
        sink = self

        class Servicer(metrics_service_pb2_grpc.MetricsServiceServicer):
            def Export(self, request: Any, context: Any) -> ExportMetricsServiceResponse:  # noqa: N802
                sink._keep(request)
                return ExportMetricsServiceResponse()

        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(Servicer(), self._grpc)
        grpc_port = self._grpc.add_insecure_port("127.0.0.1:0")
        self._grpc.start()
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _handler(sink))
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        self.grpc_endpoint = f"http://127.0.0.1:{grpc_port}"
        self.http_endpoint = f"http://127.0.0.1:{self._http.server_address[1]}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()
        self._grpc.stop(grace=None)

    def endpoint(self, protocol: str) -> str:
        """The value of ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` for ``protocol``."""
        return self.grpc_endpoint if protocol == "grpc" else f"{self.http_endpoint}/v1/metrics"

    def points(self) -> dict[str, list[tuple[dict[str, Any], float, str]]]:
        """Instrument name -> its gauge points ``(attributes, value, unit)`` in arrival order,
        with the resource's ``service.name`` under ``"resource"`` of each attribute dict."""
        found: dict[str, list[tuple[dict[str, Any], float, str]]] = {}
        with self._lock:
            requests = list(self.requests)
        for request in requests:
            for resource_metrics in request.resource_metrics:
                service = decode_attributes(resource_metrics.resource.attributes)
                for scope in resource_metrics.scope_metrics:
                    for metric in scope.metrics:
                        for point in metric.gauge.data_points:
                            attributes = {**decode_attributes(point.attributes)}
                            attributes["resource"] = service.get("service.name")
                            value = point.as_double if point.HasField("as_double") else point.as_int
                            found.setdefault(metric.name, []).append(
                                (attributes, value, metric.unit)
                            )
        return found


def _handler(sink: MetricsSink) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/metrics":
                self.send_response(404)
                self.end_headers()
                return
            sink._keep(ExportMetricsServiceRequest.FromString(body))
            payload = ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler
