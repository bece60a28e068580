"""An OTLP/HTTP capture endpoint for framework recordings (stdlib only).

Drivers export with the real OpenTelemetry SDK exporters (``OTEL_EXPORTER_OTLP_ENDPOINT`` =
this server, protocol ``http/protobuf``); this server keeps each request body exactly as sent
(gzip content-encoding undone) and writes them as the OpenTelemetry Collector's ``format:
proto`` files: each ``ExportTraceServiceRequest`` / ``ExportLogsServiceRequest`` prefixed by
its 4-byte big-endian length, gzipped (``traces.binpb.gz``, ``logs.binpb.gz``). OTLP/JSON
bodies (``application/json``) are kept one per line (``traces.jsonl.gz``, ``logs.jsonl.gz``).
Metrics are accepted and dropped.
"""

from __future__ import annotations

import gzip
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

_SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs", "/v1/metrics": "metrics"}


class CaptureServer:
    """Collects OTLP/HTTP request bodies per signal and format (``bodies``)."""

    def __init__(self, port: int = 0):
        self.bodies: dict[tuple[str, str], list[bytes]] = {}
        self.last_request = time.monotonic()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def start(self) -> CaptureServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def wait_idle(self, quiet_s: float = 1.0, timeout_s: float = 15.0) -> None:
        """Wait until no request arrived for ``quiet_s`` (exporters still flushing)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and time.monotonic() - self.last_request < quiet_s:
            time.sleep(0.1)

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {f"{s}/{f}": len(b) for (s, f), b in self.bodies.items()}

    def write(self, out: Path) -> list[Path]:
        """Write the captured traces and logs under ``out``; returns the files written."""
        written = []
        with self._lock:
            for (signal, fmt), bodies in sorted(self.bodies.items()):
                if signal == "metrics" or not bodies:
                    continue
                if fmt == "proto":
                    path = out / f"{signal}.binpb.gz"
                    data = b"".join(struct.pack(">I", len(b)) + b for b in bodies)
                else:
                    path = out / f"{signal}.jsonl.gz"
                    data = b"".join(b.strip() + b"\n" for b in bodies)
                with gzip.GzipFile(path, "wb", mtime=0) as handle:
                    handle.write(data)
                written.append(path)
        return written

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _read_chunked(self) -> bytes:
                """A ``Transfer-Encoding: chunked`` body (Node's OTLP exporters stream theirs)."""
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailer fields
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()  # the CRLF after the chunk

            def do_POST(self) -> None:  # noqa: N802
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = self._read_chunked()
                else:
                    length = int(self.headers.get("Content-Length") or 0)
                    body = self.rfile.read(length) if length else b""
                if "gzip" in (self.headers.get("Content-Encoding") or ""):
                    body = gzip.decompress(body)
                signal = _SIGNALS.get(self.path.split("?", 1)[0].rstrip("/"))
                is_json = "json" in (self.headers.get("Content-Type") or "")
                if signal is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with server._lock:
                    key = (signal, "json" if is_json else "proto")
                    server.bodies.setdefault(key, []).append(body)
                    server.last_request = time.monotonic()
                reply = b"{}" if is_json else b""
                self.send_response(200)
                self.send_header(
                    "Content-Type", "application/json" if is_json else "application/x-protobuf"
                )
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        return Handler
