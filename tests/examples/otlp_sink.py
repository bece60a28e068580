"""A test double for an OTLP/HTTP receiver: records what exporters POST to ``/v1/traces``.

Loopback, ephemeral port, daemon thread (as ``tests.support.openai_server``). It answers every
export with an empty ``ExportTraceServiceResponse`` and keeps the decoded requests; it is not
``tracegrade collect``, only enough to see what an agent process exported.
"""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)

from tracegrade.otlp.codec import parse_traces_protobuf, spans_from_request
from tracegrade.spans import Span


class OtlpSink:
    """``endpoint`` is the base URL for ``OTEL_EXPORTER_OTLP_ENDPOINT`` (http/protobuf)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> OtlpSink:
        threading.Thread(target=self._httpd.serve_forever, name="otlp-sink", daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def spans(self) -> list[Span]:
        """Every span received so far, decoded by tracegrade's OTLP reader."""
        with self._lock:
            bodies = list(self.bodies)
        return [s for body in bodies for s in spans_from_request(parse_traces_protobuf(body))]

    def wait_for(self, predicate: Any, timeout_s: float = 10.0) -> list[Span]:
        """The spans once ``predicate(spans)`` holds; AssertionError after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            spans = self.spans()
            if predicate(spans):
                return spans
            time.sleep(0.02)
        raise AssertionError(
            f"spans never satisfied the condition; got {[s.name for s in self.spans()]}"
        )

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(BaseHTTPRequestHandler):
            disable_nagle_algorithm = True

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path.rstrip("/") == "/v1/traces":
                    with sink._lock:
                        sink.bodies.append(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler
