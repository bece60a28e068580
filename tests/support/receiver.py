"""Helpers for the receiver tests: a running receiver, raw OTLP clients for hand-made
payloads, the official SDK exporters, and what the store holds afterwards.

Raw clients send bytes as they are (no SDK in between), so tests can send anything: the gRPC
client calls ``/<service>/Export`` on a plain channel with no request serializer, the HTTP
client posts with httpx. Store readers return the stored protobuf messages, so a test
compares exactly what was received with what was sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self

import grpc
import httpx
from google.protobuf import json_format
from google.rpc import status_pb2
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import (
    ExportLogsServiceRequest,
    ExportLogsServiceResponse,
)
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.collector.receiver import Receiver, ReceiverConfig
from tracegrade.store.traces import Store

GRPC_METHODS = {
    "traces": "/opentelemetry.proto.collector.trace.v1.TraceService/Export",
    "logs": "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
    "metrics": "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
}
RESPONSES = {
    "traces": ExportTraceServiceResponse,
    "logs": ExportLogsServiceResponse,
    "metrics": ExportMetricsServiceResponse,
}
PROTOBUF = "application/x-protobuf"
JSON = "application/json"

SpanKey = tuple[str, str]
"""(trace id, span id) as lowercase hex."""


# --- a running receiver -------------------------------------------------------------------------


@contextmanager
def running(
    db: str | Path, *, wrap_store: Callable[[Any], Any] | None = None, **settings: Any
) -> Iterator[Receiver]:
    """A receiver on free loopback ports writing to ``db``; ``settings`` are further
    :class:`ReceiverConfig` fields (token, max_request_bytes, ...); ``wrap_store`` wraps the
    store the writer thread opens (see :class:`WriteHook`)."""
    receiver = Receiver(ReceiverConfig(grpc_port=0, http_port=0, db=str(db), **settings))
    if wrap_store is not None:
        open_store = receiver.ingest.open_store
        receiver.ingest.open_store = lambda: wrap_store(open_store())
    with receiver:
        yield receiver


class WriteHook:
    """A store wrapper for :func:`running`: calls ``before_write()`` in the writer thread
    before every ``write*`` method of the real store (to hold the writer back, slow it
    down or make it fail), and delegates everything else."""

    def __init__(self, store: Any, before_write: Callable[[], None]):
        self._store = store
        self._before_write = before_write

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._store, name)
        if not (name.startswith("write") and callable(value)):
            return value

        def write(*args: Any, **kwargs: Any) -> Any:
            self._before_write()
            return value(*args, **kwargs)

        return write

    def __enter__(self) -> Self:
        self._store.__enter__()
        return self

    def __exit__(self, *exc: object) -> Any:
        return self._store.__exit__(*exc)


class FakeContext:
    """A ``grpc.aio.ServicerContext`` stand-in for the gRPC front end's handlers: a message of
    ``size`` bytes that takes ``read_s`` to arrive, no metadata, no deadline; an abort fails
    the test."""

    def __init__(self, size: int = 1000, read_s: float = 0.0):
        self.size, self.read_s = size, read_s

    async def read(self) -> bytes:
        if self.read_s:
            await asyncio.sleep(self.read_s)
        return b"x" * self.size

    def invocation_metadata(self) -> tuple[()]:
        return ()

    def time_remaining(self) -> float | None:
        return None

    async def abort(self, *args: Any) -> None:
        raise AssertionError(f"unexpected abort {args}")


# --- raw clients --------------------------------------------------------------------------------


class GrpcClient:
    """Raw OTLP/gRPC calls on one channel: ``export`` sends ``body`` bytes unchanged and
    returns the decoded ``Export*ServiceResponse``, or raises :class:`grpc.RpcError`."""

    def __init__(self, port: int, *, max_send_bytes: int = 64 * 2**20):
        self.channel = grpc.insecure_channel(
            f"127.0.0.1:{port}", options=[("grpc.max_send_message_length", max_send_bytes)]
        )

    def export(
        self,
        signal: str,
        body: bytes,
        *,
        metadata: Iterable[tuple[str, str]] = (),
        compression: grpc.Compression | None = None,
        timeout_s: float = 10.0,
    ) -> Any:
        call = self.channel.unary_unary(
            GRPC_METHODS[signal],
            request_serializer=None,
            response_deserializer=RESPONSES[signal].FromString,
        )
        return call(body, metadata=tuple(metadata), compression=compression, timeout=timeout_s)

    def export_with_call(self, signal: str, body: bytes, **options: Any) -> tuple[Any, grpc.Call]:
        """Like :meth:`export` but also returns the call (trailing metadata, status)."""
        call = self.channel.unary_unary(
            GRPC_METHODS[signal],
            request_serializer=None,
            response_deserializer=RESPONSES[signal].FromString,
        )
        return call.with_call(body, timeout=10.0, **options)

    def close(self) -> None:
        self.channel.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


HTTP = httpx.Client(timeout=10.0, limits=httpx.Limits(max_keepalive_connections=0))
"""One client for every test (making an httpx client costs ~50 ms); no keep-alive, so no
pooled connection outlives the receiver it went to."""


GRPC_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
"""The HTTP/2 connection preface and an empty SETTINGS frame."""


def _hpack_literal(name: bytes, value: bytes) -> bytes:
    """An HPACK literal header field without indexing, new name, no Huffman (RFC 7541
    6.2.2); names and values under 127 bytes."""
    return b"\x00" + bytes([len(name)]) + name + bytes([len(value)]) + value


def grpc_call_headers(stream_id: int, token: str | None = None) -> bytes:
    """An HTTP/2 HEADERS frame (END_HEADERS, not END_STREAM) opening a trace export call on
    ``stream_id``, with ``Bearer token`` when given."""
    fields = [
        (b":method", b"POST"),
        (b":scheme", b"http"),
        (b":path", GRPC_METHODS["traces"].encode()),
        (b":authority", b"127.0.0.1"),
        (b"content-type", b"application/grpc"),
        (b"te", b"trailers"),
    ]
    if token is not None:
        fields.append((b"authorization", f"Bearer {token}".encode()))
    block = b"".join(_hpack_literal(name, value) for name, value in fields)
    return len(block).to_bytes(3, "big") + b"\x01\x04" + stream_id.to_bytes(4, "big") + block


def abandon_grpc_streams(port: int, streams: int, token: str | None = None) -> int:
    """One connection to the gRPC ``port`` opens ``streams`` export calls (no message) as
    fast as it can, then is dropped without closing them; returns the streams sent."""
    sent = 0
    with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 5) as sock:
        sock.sendall(GRPC_PREFACE)
        for n in range(streams):
            sock.sendall(grpc_call_headers(2 * n + 1, token))
            sent += 1
    return sent


def http_export(
    receiver: Any,
    signal: str,
    body: bytes | Iterable[bytes],
    *,
    content_type: str = PROTOBUF,
    headers: Mapping[str, str] | None = None,
    gzipped: bool = False,
) -> httpx.Response:
    """POST ``body`` to ``<receiver.http_endpoint>/v1/<signal>`` (gzip-compressed first when
    ``gzipped``)."""
    all_headers = {"content-type": content_type, **(headers or {})}
    if gzipped:
        assert isinstance(body, bytes)
        body = gzip.compress(body)
        all_headers["content-encoding"] = "gzip"
    return HTTP.post(f"{receiver.http_endpoint}/v1/{signal}", content=body, headers=all_headers)


def http_response(response: httpx.Response, signal: str) -> Any:
    """The ``Export*ServiceResponse`` of a 200 answer, decoded by its content type."""
    return _decode(response, RESPONSES[signal]())


def http_status(response: httpx.Response) -> status_pb2.Status:
    """The ``google.rpc.Status`` body of an error answer, decoded by its content type."""
    return _decode(response, status_pb2.Status())


def _decode(response: httpx.Response, message: Any) -> Any:
    media_type = response.headers["content-type"].split(";")[0]
    if media_type == JSON:
        return json_format.Parse(response.content, message)
    assert media_type == PROTOBUF, media_type
    message.ParseFromString(response.content)
    return message


# --- what was sent ------------------------------------------------------------------------------


def request_spans(*requests: ExportTraceServiceRequest) -> dict[SpanKey, trace_pb2.Span]:
    """Every span of these requests by (trace id, span id)."""
    return {
        (span.trace_id.hex(), span.span_id.hex()): span
        for request in requests
        for group in request.resource_spans
        for scoped in group.scope_spans
        for span in scoped.spans
    }


def request_logs(*requests: ExportLogsServiceRequest) -> list[logs_pb2.LogRecord]:
    """Every log record of these requests, in order."""
    return [
        record
        for request in requests
        for group in request.resource_logs
        for scoped in group.scope_logs
        for record in scoped.log_records
    ]


def canonical(messages: Iterable[Any]) -> list[bytes]:
    """Messages as sorted deterministic bytes (to compare collections ignoring order)."""
    return sorted(m.SerializeToString(deterministic=True) for m in messages)


# --- what the store holds -----------------------------------------------------------------------


def stored_spans(db: str | Path) -> dict[SpanKey, trace_pb2.Span]:
    """Every stored span as the store gives it back (:meth:`Store.requests`: the raw
    protobuf as received), by (trace id, span id)."""
    return request_spans(stored_requests(db)[0])


def stored_logs(db: str | Path) -> list[logs_pb2.LogRecord]:
    """Every stored log record, decoded from its raw protobuf, in arrival order (read from
    the ``log_records`` table: :meth:`Store.requests` only returns the records of stored
    traces)."""
    with Store(db) as store:
        rows = store.db.execute("SELECT record FROM log_records ORDER BY id").fetchall()
    return [logs_pb2.LogRecord.FromString(bytes(payload)) for (payload,) in rows]


def stored_requests(db: str | Path) -> tuple[ExportTraceServiceRequest, ExportLogsServiceRequest]:
    """Everything stored for every trace, regrouped by resource and scope
    (:meth:`Store.requests`)."""
    with Store(db) as store:
        return store.requests(store.trace_ids())


def snapshot(db: str | Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table of a SQLite store, raw bytes included, in a fixed order (so
    independent of the schema version): equal snapshots mean nothing stored was touched."""
    with Store(db) as store:
        tables = [
            name
            for (name,) in store.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            table: sorted(
                (
                    tuple(bytes(v) if isinstance(v, memoryview) else v for v in row)
                    for row in store.db.execute(f'SELECT * FROM "{table}"')
                ),
                key=repr,
            )
            for table in tables
        }


def counts(db: str | Path) -> dict[str, int]:
    """Numbers of traces, spans and log records stored."""
    with Store(db) as store:
        return store.counts()


# --- hand-made payloads -------------------------------------------------------------------------


def hand_span(
    name: str,
    trace_id: bytes,
    span_id: bytes,
    *,
    parent: bytes = b"",
    start: int = 1_700_000_000_000_000_000,
    end: int | None = None,
) -> trace_pb2.Span:
    """A span with exactly these ids and times (Unix ns), valid or not."""
    return trace_pb2.Span(
        name=name,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        start_time_unix_nano=start,
        end_time_unix_nano=start + 1_000_000 if end is None else end,
    )


def spans_request(*spans: trace_pb2.Span, service: str = "hand-made") -> ExportTraceServiceRequest:
    """One resource, one scope, these spans."""
    request = ExportTraceServiceRequest()
    group = request.resource_spans.add()
    group.resource.attributes.add(key="service.name").value.string_value = service
    scoped = group.scope_spans.add()
    scoped.scope.name = "tests.hand"
    scoped.spans.extend(spans)
    return request


def logs_request(
    *records: logs_pb2.LogRecord, service: str = "hand-made"
) -> ExportLogsServiceRequest:
    """One resource, one scope, these log records."""
    request = ExportLogsServiceRequest()
    group = request.resource_logs.add()
    group.resource.attributes.add(key="service.name").value.string_value = service
    scoped = group.scope_logs.add()
    scoped.scope.name = "tests.hand"
    scoped.log_records.extend(records)
    return request


def hand_log(
    body: str,
    *,
    trace_id: bytes = b"",
    span_id: bytes = b"",
    time_unix_nano: int = 1_700_000_000_000_000_000,
) -> logs_pb2.LogRecord:
    """A log record with a string body and exactly these ids."""
    record = logs_pb2.LogRecord(time_unix_nano=time_unix_nano, trace_id=trace_id, span_id=span_id)
    record.body.string_value = body
    return record
