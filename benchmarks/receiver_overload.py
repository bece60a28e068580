"""Overload scenario of ``benchmarks/receiver.py``: far more traffic than the receiver can store.

``--overload-clients`` concurrent exporters (threads spread over 4 client processes) each send
large requests (sizes from ``--overload-mib``, cycled) back to back for ``--seconds``, the way
the OpenTelemetry SDK does: a 10 s timeout per request, and on a refusal (HTTP 429 / gRPC
RESOURCE_EXHAUSTED) a wait of the server's retry delay before sending again. Every request
gets a fresh trace id (a byte replace on the pre-encoded body), so nothing deduplicates.

Measured per server: acknowledged spans/s, stored spans/s (what the store holds afterwards),
the time to acknowledge (p50, p99, max), refusals, requests the client gave up on (past 10 s:
an SDK would resend them), and the receiver's peak RSS. The same load against the decode-only
gRPC server of ``receiver.py`` is the baseline of the ratios.
"""

from __future__ import annotations

import http.client
import multiprocessing as mp
import os
import statistics
import threading
import time
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

SDK_TIMEOUT_S = 10.0
CLIENT_PROCESSES = 4
SPAN_BYTES = 400
"""About the encoded size of one benchmark span (for sizing requests in MiB)."""


def make_bodies(sizes_mib: list[float], make_requests: Any) -> list[tuple[bytes, bytes, int]]:
    """One pre-encoded request per size: (body, its trace id, spans)."""
    out = []
    for size in sizes_mib:
        spans = max(1, int(size * 2**20 / SPAN_BYTES))
        (body,) = make_requests(1, spans)
        first = ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0]
        out.append((body, first.spans[0].trace_id, spans))
    return out


def _send_http(port: int) -> Any:
    connection: list[http.client.HTTPConnection] = []

    def send(body: bytes) -> tuple[str, float]:
        if not connection:
            connection.append(http.client.HTTPConnection("127.0.0.1", port, timeout=SDK_TIMEOUT_S))
        try:
            connection[0].request(
                "POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"}
            )
            response = connection[0].getresponse()
            response.read()
        except (TimeoutError, OSError, http.client.HTTPException):
            connection.pop().close()
            return "gave_up", 0.0
        if response.status == 200:
            return "ok", 0.0
        if response.status in (429, 503):
            return "refused", float(response.headers.get("retry-after") or 1)
        return "error", 0.0

    return send


def _send_grpc(port: int) -> Any:
    import grpc
    from google.rpc import error_details_pb2
    from grpc_status import rpc_status

    channel = grpc.insecure_channel(
        f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", 64 * 2**20)]
    )
    call = channel.unary_unary("/opentelemetry.proto.collector.trace.v1.TraceService/Export")

    def send(body: bytes) -> tuple[str, float]:
        try:
            call(body, timeout=SDK_TIMEOUT_S)
            return "ok", 0.0
        except grpc.RpcError as exc:
            if exc.code() is grpc.StatusCode.DEADLINE_EXCEEDED:
                return "gave_up", 0.0
            if exc.code() is not grpc.StatusCode.RESOURCE_EXHAUSTED:
                return "error", 0.0
            status, retry = rpc_status.from_call(exc), error_details_pb2.RetryInfo()
            found = status is not None and any(d.Unpack(retry) for d in status.details)
            return "refused", retry.retry_delay.ToTimedelta().total_seconds() if found else 1.0

    return send


def _exporter(send: Any, bodies: list, seconds: float, seed: int, out: list) -> None:
    deadline, n = time.monotonic() + seconds, seed
    while time.monotonic() < deadline:
        body, trace_id, spans = bodies[n % len(bodies)]
        fresh = body.replace(trace_id, os.urandom(16))
        n += 1
        while time.monotonic() < deadline:
            started = time.monotonic()
            outcome, retry_s = send(fresh)
            out.append((outcome, time.monotonic() - started, spans))
            if outcome != "refused":
                break
            time.sleep(min(retry_s, max(0.0, deadline - time.monotonic())))


def _client_process(
    protocol: str, port: int, bodies: list, threads: int, seconds: float, seed: int, queue: Any
) -> None:
    out: list = []
    workers = [
        threading.Thread(
            target=_exporter,
            args=(
                (_send_grpc if protocol == "grpc" else _send_http)(port),
                bodies,
                seconds,
                seed + i,
                out,
            ),
        )
        for i in range(threads)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    queue.put(out)


def overload(protocol: str, port: int, bodies: list, clients: int, seconds: float) -> dict:
    """Drive ``clients`` exporters against ``port``; the figures of the module docstring
    (except stored spans and RSS, which the caller adds)."""
    queue: Any = mp.Queue()
    share = [clients // CLIENT_PROCESSES + (i < clients % CLIENT_PROCESSES) for i in range(4)]
    procs = [
        mp.Process(
            target=_client_process, args=(protocol, port, bodies, n, seconds, 1000 * i, queue)
        )
        for i, n in enumerate(share)
        if n
    ]
    for p in procs:
        p.start()
    events = [e for _ in procs for e in queue.get(timeout=seconds + 120)]
    for p in procs:
        p.join()
    acked = [(t, spans) for outcome, t, spans in events if outcome == "ok"]
    times = sorted(t for t, _ in acked) or [0.0]
    count = {k: sum(1 for o, _, _ in events if o == k) for k in ("refused", "gave_up", "error")}
    return {
        "acked_requests": len(acked),
        "acked_spans": sum(spans for _, spans in acked),
        "spans_per_s": sum(spans for _, spans in acked) / seconds,
        "ack_p50_s": round(statistics.median(times), 3),
        "ack_p99_s": round(times[int(0.99 * (len(times) - 1))], 3),
        "ack_max_s": round(times[-1], 3),
        **count,
    }
