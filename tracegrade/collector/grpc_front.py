"""OTLP/gRPC front end: ``TraceService/Export``, ``LogsService/Export`` and
``MetricsService/Export`` (opentelemetry-proto service names) on a grpcio server.

Requests reach the handlers as raw bytes (no deserializer), so the size limit applies before
decoding (grpcio's ``max_receive_message_length`` answers RESOURCE_EXHAUSTED) and decoding
happens once, in :mod:`.admission`. Status codes follow the OTLP/gRPC specification (see
:mod:`.service`); throttling carries a ``google.rpc.RetryInfo`` so exporters retry.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import grpc
from google.protobuf.any_pb2 import Any as AnyMessage
from google.protobuf.duration_pb2 import Duration
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from tracegrade.collector.address import host_port
from tracegrade.collector.admission import Signal
from tracegrade.collector.service import ExportService, Outcome

SERVICES: dict[Signal, str] = {
    "traces": "opentelemetry.proto.collector.trace.v1.TraceService",
    "logs": "opentelemetry.proto.collector.logs.v1.LogsService",
    "metrics": "opentelemetry.proto.collector.metrics.v1.MetricsService",
}
_CODES = {
    "invalid": code_pb2.INVALID_ARGUMENT,
    "unauthorized": code_pb2.UNAUTHENTICATED,
    "too_large": code_pb2.RESOURCE_EXHAUSTED,
    "throttled": code_pb2.RESOURCE_EXHAUSTED,
    "unavailable": code_pb2.UNAVAILABLE,
}
DEFAULT_WORKERS = 16


def _abort(context: grpc.ServicerContext, outcome: Outcome) -> None:
    status = status_pb2.Status(code=_CODES[outcome.kind], message=outcome.message)
    if outcome.retry_after_s is not None:
        seconds = int(outcome.retry_after_s)
        detail = AnyMessage()
        detail.Pack(
            error_details_pb2.RetryInfo(
                retry_delay=Duration(
                    seconds=seconds, nanos=int((outcome.retry_after_s - seconds) * 1e9)
                )
            )
        )
        status.details.append(detail)
    context.abort_with_status(rpc_status.to_status(status))


def _handler(service: ExportService, signal: Signal) -> grpc.RpcMethodHandler:
    def export(body: bytes, context: grpc.ServicerContext) -> Any:
        metadata = dict(context.invocation_metadata() or ())
        outcome = service.export(signal, body, "protobuf", metadata.get("authorization"))
        if outcome.kind != "ok":
            _abort(context, outcome)
        return outcome.response

    return grpc.unary_unary_rpc_method_handler(
        export,
        request_deserializer=None,
        response_serializer=lambda message: message.SerializeToString(),
    )


def grpc_server(
    service: ExportService, host: str, port: int, *, workers: int = DEFAULT_WORKERS
) -> tuple[grpc.Server, int]:
    """A started grpcio server for the three OTLP services; returns it and its bound port
    (``port`` 0 picks a free one).

    Raises:
        OSError: the address cannot be bound.
    """
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tracegrade-grpc"),
        options=[
            ("grpc.max_receive_message_length", service.max_request_bytes),
            ("grpc.so_reuseport", 0),
        ],
        maximum_concurrent_rpcs=workers * 4,
    )
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(name, {"Export": _handler(service, signal)})
            for signal, name in SERVICES.items()
        ]
    )
    try:
        address = host_port(host, port)
        bound = server.add_insecure_port(address)
    except (RuntimeError, ValueError) as exc:  # grpcio: "Failed to bind to address"
        raise OSError(f"cannot bind the gRPC port {host}:{port}: {exc}") from exc
    if bound == 0:
        raise OSError(f"cannot bind the gRPC port {address}")
    server.start()
    return server, bound
