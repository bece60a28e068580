"""A local OpenAI-compatible test double that replays a VCR cassette in order.

The n-th POST received gets the n-th recorded response (status, content type
and body; gzip bodies are served decoded, SSE streams byte for byte). The
request body is *not* matched against the recording, because agent frameworks
serialise the same conversation differently; it is recorded instead, so tests
can look at what the client really sent (``server.requests``).

Once the cassette is used up, further POSTs get ``410 Gone`` with an OpenAI
style error body and ``x-should-retry: false`` (so the official client does
not retry), and are recorded too. ``GET`` requests get 404.

Usage::

    with ReplayServer("cassette.yaml") as server:
        client = OpenAI(base_url=server.base_url, api_key="test")
        ...
    server.requests   # [{"method", "path", "body", "index", "status"}]

Runs on 127.0.0.1 on an ephemeral port, in a daemon thread. Standard library
plus PyYAML (through ``cassette.py``) only.
"""

from __future__ import annotations

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

if __package__:  # imported as tests.harness.replay_server
    from .cassette import Interaction, load_interactions
else:  # run as a script, or imported by scenario.py inside a harness venv
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cassette import Interaction, load_interactions  # noqa: E402

# Recorded headers worth passing through (everything else is hop-by-hop or
# would describe the original, encoded body).
_PASS_HEADERS = ("x-request-id", "openai-processing-ms", "openai-version", "openai-organization")


class ReplayServer:
    def __init__(self, cassette_path: str | Path, host: str = "127.0.0.1", port: int = 0):
        self.cassette_path = str(cassette_path)
        self.interactions: list[Interaction] = load_interactions(cassette_path)
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._next = 0
        self._httpd = ThreadingHTTPServer((host, port), self._make_handler())
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """Base URL for the openai client (``.../v1``)."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def served(self) -> int:
        return self._next

    @property
    def exhausted(self) -> bool:
        return self._next >= len(self.interactions)

    def start(self) -> ReplayServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="replay-server", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> ReplayServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -------------------------------------------------------------- serving
    def _take(self) -> tuple[int, Interaction | None]:
        with self._lock:
            idx = self._next
            self._next += 1
        inter = self.interactions[idx] if idx < len(self.interactions) else None
        return idx, inter

    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _make_handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            server_version = "cassette-replay/1"

            def log_message(self, fmt, *args):  # keep test output quiet
                pass

            def _read_body(self) -> bytes:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    data = b""
                    while True:
                        size = int(self.rfile.readline().strip().split(b";")[0] or b"0", 16)
                        if size == 0:
                            self.rfile.readline()
                            return data
                        data += self.rfile.read(size)
                        self.rfile.readline()
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else b""

            def _send(self, status: int, body: bytes, content_type: str, extra=None, reason=None):
                self.send_response(status, reason)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_POST(self):
                raw = self._read_body()
                try:
                    body: Any = json.loads(raw.decode("utf-8")) if raw else None
                except (UnicodeDecodeError, ValueError):
                    body = raw.decode("utf-8", "replace")
                idx, inter = server._take()
                entry = {"index": idx, "method": "POST", "path": self.path, "body": body}
                if inter is None:
                    entry["status"] = 410
                    server._record(entry)
                    err = {
                        "error": {
                            "message": (
                                f"replay cassette exhausted: request #{idx + 1} but "
                                f"{server.cassette_path} holds {len(server.interactions)} "
                                "interaction(s)"
                            ),
                            "type": "replay_exhausted",
                            "code": "replay_exhausted",
                        }
                    }
                    self._send(
                        410,
                        json.dumps(err).encode(),
                        "application/json",
                        {"x-should-retry": "false"},
                    )
                    return
                entry["status"] = inter.status
                entry["recorded_path"] = inter.path
                server._record(entry)
                extra = {"x-should-retry": "false"}
                for key, value in inter.headers.items():
                    if key.lower() in _PASS_HEADERS:
                        extra[key] = value
                self._send(inter.status, inter.body, inter.content_type, extra, inter.reason)

            def do_GET(self):
                server._record(
                    {"index": None, "method": "GET", "path": self.path, "body": None, "status": 404}
                )
                self._send(404, b'{"error": {"message": "not recorded"}}', "application/json")

        return Handler


def main(argv: list[str] | None = None) -> int:
    """Serve a cassette until interrupted (handy for poking at it with curl)."""
    import argparse
    import time

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cassette")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with ReplayServer(args.cassette, port=args.port) as server:
        print(f"serving {len(server.interactions)} interaction(s) at {server.base_url}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
