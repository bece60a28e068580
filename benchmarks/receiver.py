"""Receiver throughput: ``tracegrade collect`` against a decode-only grpcio server, same run.

    python benchmarks/receiver.py [--seconds 8] [--clients 4] [--spans 100] [--json]
    python benchmarks/receiver.py --overload [--clients 160] [--overload-mib 4,8,12,15]

Requests are pre-encoded ``ExportTraceServiceRequest``s of ``--spans`` real GenAI spans
each (taken from the tau-bench-otlp openai-v2 file; every request gets fresh trace and span
ids, so nothing deduplicates). ``--clients`` client processes send them back to back for
``--seconds`` each, and count acknowledged spans and per-request latency.

Servers, each in its own process:

- ``parse``: the pure upb ``ParseFromString`` of the same requests in a loop (no network);
- ``grpc-decode-only``: a bare grpcio server whose handler only decodes the request and
  answers an empty response; the baseline every figure is a ratio to;
- ``collect-grpc`` / ``collect-http``: ``tracegrade collect`` on a fresh SQLite store, over
  OTLP/gRPC and OTLP/HTTP (protobuf): acknowledged means committed. The stored span count is
  checked against the acknowledged count after each run, and the receiver's peak RSS
  (``VmHWM``) is read from ``/proc``.

Goal (issue 4): collect >= 1/4 of grpc-decode-only spans/s on both protocols, RSS < 300 MB,
p99 latency < 100 ms.
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing as mp
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from tracegrade.otlp.files import read_paths  # noqa: E402

SOURCE = ROOT / "datasets" / "tau-bench-otlp" / "otel_genai_default" / "traces.jsonl.gz"
EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"


def make_requests(count: int, spans_per_request: int) -> list[bytes]:
    """``count`` encoded requests of real GenAI spans with fresh ids."""
    template = [
        span
        for request in read_paths([SOURCE]).traces
        for group in request.resource_spans
        for scoped in group.scope_spans
        for span in scoped.spans
    ]
    resource = read_paths([SOURCE]).traces[0].resource_spans[0].resource
    out = []
    for n in range(count):
        request = ExportTraceServiceRequest()
        group = request.resource_spans.add()
        group.resource.CopyFrom(resource)
        scoped = group.scope_spans.add()
        scoped.scope.name = "benchmark"
        trace_id = os.urandom(16)
        for i in range(spans_per_request):
            span = scoped.spans.add()
            span.CopyFrom(template[(n * spans_per_request + i) % len(template)])
            span.trace_id = trace_id
            span.span_id = os.urandom(8)
            if i:
                span.parent_span_id = scoped.spans[0].span_id
            else:
                span.ClearField("parent_span_id")
        out.append(request.SerializeToString())
    return out


# --- servers ------------------------------------------------------------------------------------


def _decode_only_server(port_queue: Any) -> None:
    import grpc

    def export(body: bytes, _context: Any) -> bytes:
        ExportTraceServiceRequest.FromString(body)
        return ExportTraceServiceResponse().SerializeToString()

    handler = grpc.method_handlers_generic_handler(
        "opentelemetry.proto.collector.trace.v1.TraceService",
        {"Export": grpc.unary_unary_rpc_method_handler(export)},
    )
    server = grpc.server(
        ThreadPoolExecutor(max_workers=16),
        options=[("grpc.so_reuseport", 0), ("grpc.max_receive_message_length", 64 * 2**20)],
    )
    server.add_generic_rpc_handlers([handler])
    port_queue.put(server.add_insecure_port("127.0.0.1:0"))
    server.start()
    signal.signal(signal.SIGTERM, lambda *_: server.stop(0))
    server.wait_for_termination()


def start_decode_only() -> tuple[mp.Process, int]:
    ports: Any = mp.Queue()
    process = mp.Process(target=_decode_only_server, args=(ports,), daemon=True)
    process.start()
    return process, ports.get(timeout=30)


def start_collect(db: str, *extra: str) -> tuple[subprocess.Popen[str], int, int]:
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tracegrade.cli import main; main()",
            "collect",
            "--db",
            db,
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            *extra,
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    line = process.stdout.readline() if process.stdout else ""
    match = re.search(r"gRPC [\d.]+:(\d+), OTLP/HTTP [\d.]+:(\d+)", line)
    if not match:
        process.kill()
        raise RuntimeError(f"collect did not start: {line!r}")
    return process, int(match.group(1)), int(match.group(2))


def _status_mb(pid: int, field: str) -> float:
    """A ``/proc/PID/status`` field of process ``pid`` (``VmRSS``, ``VmHWM``), MiB."""
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(rf"{field}:\s+(\d+) kB", text).group(1)) / 1024  # type: ignore[union-attr]


def rss_mb(pid: int) -> float:
    """The resident set (``VmRSS``) of process ``pid`` now, MiB."""
    return _status_mb(pid, "VmRSS")


def _max_memory_mib(collect_args: str) -> float:
    """``--max-memory-mib`` of ``collect_args``, else collect's default."""
    from tracegrade.collector.memory import DEFAULT_MAX_MEMORY_BYTES

    args = collect_args.split()
    if "--max-memory-mib" in args:
        return float(args[args.index("--max-memory-mib") + 1])
    return DEFAULT_MAX_MEMORY_BYTES / 2**20


def peak_rss_mb(pid: int) -> float:
    """The peak resident set (``VmHWM``) of process ``pid``, MiB."""
    return _status_mb(pid, "VmHWM")


# --- clients ------------------------------------------------------------------------------------


def _grpc_client(
    port: int | str, requests: list[bytes], spans: int, seconds: float, out: Any
) -> None:
    """Send ``requests`` back to back on one channel to 127.0.0.1:``port`` (or the gRPC
    target ``port`` names, e.g. ``unix:/path``)."""
    import grpc

    channel = grpc.insecure_channel(port if isinstance(port, str) else f"127.0.0.1:{port}")
    call = channel.unary_unary(EXPORT)
    _drive(lambda body: call(body, timeout=30), requests, spans, seconds, out)


def _http_client(port: int, requests: list[bytes], spans: int, seconds: float, out: Any) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)

    def send(body: bytes) -> None:
        connection.request("POST", "/v1/traces", body, {"Content-Type": "application/x-protobuf"})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")

    _drive(send, requests, spans, seconds, out)


def _drive(send: Any, requests: list[bytes], spans: int, seconds: float, out: Any) -> None:
    latencies, acked, errors, i = [], 0, 0, 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        start = time.perf_counter()
        try:
            send(requests[i % len(requests)])
            acked += spans
        except Exception:  # noqa: BLE001 (throttled or failed: counted, not acked)
            errors += 1
        latencies.append(time.perf_counter() - start)
        i += 1
    out.put((acked, errors, latencies))


def load(
    client: Any, port: int | str, batches: list[list[bytes]], spans: int, seconds: float
) -> dict[str, Any]:
    """Run one client process per batch list against ``port``; totals and latency."""
    out: Any = mp.Queue()
    procs = [
        mp.Process(target=client, args=(port, batch, spans, seconds, out)) for batch in batches
    ]
    start = time.perf_counter()
    for p in procs:
        p.start()
    results = [out.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    wall = time.perf_counter() - start
    latencies = sorted(x for _, _, lat in results for x in lat)
    acked = sum(a for a, _, _ in results)
    return {
        "acked_spans": acked,
        "errors": sum(e for _, e, _ in results),
        "spans_per_s": acked / seconds,
        "wall_s": round(wall, 2),
        "p50_ms": round(1000 * statistics.median(latencies), 2),
        "p99_ms": round(1000 * latencies[int(0.99 * (len(latencies) - 1))], 2),
    }


def parse_rate(requests: list[bytes], spans: int, seconds: float = 2.0) -> float:
    count, deadline = 0, time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        ExportTraceServiceRequest.FromString(requests[count % len(requests)])
        count += 1
    return count * spans / seconds


def run_collect(
    protocol: str, batches: list[list[bytes]], spans: int, seconds: float, extra: str = ""
) -> dict[str, Any]:
    """One ``collect`` run on a fresh SQLite file, or on the store ``--db`` of ``extra``
    (e.g. a PostgreSQL URL: the spans it stores in this run are counted)."""
    from tracegrade.store.traces import Store

    args = extra.split()
    with tempfile.TemporaryDirectory() as tmp:
        db = args[args.index("--db") + 1] if "--db" in args else str(Path(tmp) / "bench.db")
        before = 0
        if "--db" in args:
            with Store(db) as store:
                before = store.counts()["spans"]
        process, grpc_port, http_port = start_collect(db, *args)
        try:
            client, port = (
                (_grpc_client, grpc_port) if protocol == "grpc" else (_http_client, http_port)
            )
            result = load(client, port, batches, spans, seconds)
            result["rss_mb"] = round(peak_rss_mb(process.pid), 1)
        finally:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=60)
        with Store(db) as store:
            result["stored_spans"] = store.counts()["spans"] - before
    return result


def run_overload(args: argparse.Namespace) -> dict[str, Any]:
    """The overload scenario (:mod:`benchmarks.receiver_overload`) against the decode-only
    server and ``collect`` on each protocol; ratios to the decode-only acknowledged spans/s."""
    from benchmarks.receiver_overload import make_bodies, overload
    from tracegrade.store.traces import Store

    sizes = [float(x) for x in args.overload_mib.split(",")]
    bodies = make_bodies(sizes, make_requests)
    results: dict[str, Any] = {}
    process, port = start_decode_only()
    try:
        results["grpc-decode-only"] = overload("grpc", port, bodies, args.clients, args.seconds)
        results["grpc-decode-only"]["rss_mb"] = round(peak_rss_mb(process.pid), 1)
    finally:
        process.terminate()
    for protocol in args.protocols.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            db = str(Path(tmp) / "bench.db")
            collect, grpc_port, http_port = start_collect(db, *args.collect_args.split())
            start_rss = rss_mb(collect.pid)
            try:
                port = grpc_port if protocol == "grpc" else http_port
                result = overload(protocol, port, bodies, args.clients, args.seconds)
                result["rss_mb"] = round(peak_rss_mb(collect.pid), 1)
                # collect's resident bound: its footprint at start plus --max-memory-mib
                result["bound_mb"] = round(start_rss + _max_memory_mib(args.collect_args), 1)
            finally:
                collect.send_signal(signal.SIGTERM)
                collect.wait(timeout=120)
            with Store(db) as store:
                result["stored_spans"] = store.counts()["spans"]
            result["stored_spans_per_s"] = result["stored_spans"] / args.seconds
        results[f"collect-{protocol}"] = result
    base = results["grpc-decode-only"]
    for result in results.values():
        result["ratio"] = round(result["spans_per_s"] / base["spans_per_s"], 3)
        if "stored_spans_per_s" in result:
            result["stored_ratio"] = round(result["stored_spans_per_s"] / base["spans_per_s"], 3)
            result["stored_spans_per_s"] = round(result["stored_spans_per_s"])
        result["spans_per_s"] = round(result["spans_per_s"])
        result["ack_p99_ratio"] = round(result["ack_p99_s"] / max(base["ack_p99_s"], 1e-3), 2)
        result["rss_ratio"] = round(result["rss_mb"] / base["rss_mb"], 2)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--spans", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--protocols", default="grpc,http", help="Which collect runs (comma-separated)."
    )
    parser.add_argument(
        "--per-client", type=int, default=3000, help="Distinct pre-encoded requests per client."
    )
    parser.add_argument(
        "--overload",
        action="store_true",
        help="Run the overload scenario instead (receiver_overload.py): --clients exporters "
        "(e.g. 160) of --overload-mib requests.",
    )
    parser.add_argument(
        "--overload-mib", default="4,8,12,15", help="Request sizes of --overload, MiB."
    )
    parser.add_argument(
        "--collect-args", default="", help="Extra tracegrade collect options (e.g. limits)."
    )
    args = parser.parse_args()
    if args.overload:
        _print(run_overload(args), args.json)
        return
    per_client = args.per_client
    requests = make_requests(per_client * args.clients, args.spans)
    batches = [requests[i * per_client : (i + 1) * per_client] for i in range(args.clients)]
    results: dict[str, Any] = {"parse": {"spans_per_s": parse_rate(requests, args.spans)}}
    process, port = start_decode_only()
    try:
        results["grpc-decode-only"] = load(_grpc_client, port, batches, args.spans, args.seconds)
    finally:
        process.terminate()
    for n, protocol in enumerate(args.protocols.split(",")):
        if n and "--db" in args.collect_args.split():
            # one store for every run (e.g. PostgreSQL): fresh ids, or this run's spans would
            # be resends of the last run's, deduplicated instead of stored
            requests = make_requests(per_client * args.clients, args.spans)
            batches = [requests[i * per_client : (i + 1) * per_client] for i in range(args.clients)]
        results[f"collect-{protocol}"] = run_collect(
            protocol, batches, args.spans, args.seconds, args.collect_args
        )
    base = results["grpc-decode-only"]["spans_per_s"]
    for result in results.values():
        result["ratio"] = round(result["spans_per_s"] / base, 3)
        result["spans_per_s"] = round(result["spans_per_s"])
    _print(results, args.json)


def _print(results: dict[str, Any], as_json: bool) -> None:
    if as_json:
        print(json.dumps(results, indent=2))
        return
    for name, result in results.items():
        extra = {k: v for k, v in result.items() if k not in ("spans_per_s", "ratio")}
        print(
            f"{name:18} {result['spans_per_s']:>9,} spans/s  ratio {result['ratio']:.3f}  {extra}"
        )


if __name__ == "__main__":
    main()
