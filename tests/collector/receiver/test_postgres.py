"""The receiver on PostgreSQL (a real server; skipped without TRACEGRADE_TEST_POSTGRES_URL):
SDK-exported spans and log records stored intact on both backends, and two receivers on one
database taking overlapping traffic lose nothing and duplicate nothing (and, a known bug,
deadlock on new resources arriving in opposite orders)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.support.postgres import fresh_database
from tests.support.receiver import (
    GrpcClient,
    canonical,
    hand_log,
    hand_span,
    http_export,
    logs_request,
    request_logs,
    request_spans,
    running,
    spans_request,
    stored_logs,
    stored_spans,
)
from tests.support.sdk import agent_turn, record, trace_request
from tests.support.sdk_pipelines import (
    RESOURCE,
    agent_run,
    emit_records,
    export_logs,
    export_traces,
    log_exporter,
    span_exporter,
)
from tracegrade.store.traces import Store


def test_sdk_exports_are_stored_intact_on_each_backend(store_location):
    with running(store_location) as receiver:
        spans = export_traces(span_exporter("grpc", receiver, gzip=True), agent_run, RESOURCE)
        logs = export_logs(log_exporter("http", receiver), emit_records, RESOURCE)
    assert stored_spans(store_location) == request_spans(encode_spans(spans))
    assert canonical(stored_logs(store_location)) == canonical(request_logs(encode_logs(logs)))
    with Store(store_location) as store:
        assert store.counts() == {"traces": 1, "spans": 42, "log_records": 34}


@pytest.fixture
def shared_postgres():
    with fresh_database() as url:
        yield url


def _workload() -> list[tuple[str, bytes, set, set]]:
    """Trace and log requests from six services (so both receivers insert the same new
    resources and scopes concurrently): (signal, body, span keys, log bodies). Nine distinct
    resources: six SDK ones for spans, three hand-made ones for log records."""
    work = []
    for n in range(48):
        if n % 4 == 3:
            body = f"record {n} {os.urandom(4).hex()}"
            request = logs_request(
                hand_log(body, trace_id=os.urandom(16), span_id=os.urandom(8)),
                service=f"svc-{n % 6}",
            )
            work.append(("logs", request.SerializeToString(), set(), {body}))
        else:
            request = trace_request(agent_turn, resource={"service.name": f"svc-{n % 6}"})
            work.append(("traces", request.SerializeToString(), set(request_spans(request)), set()))
    return work


def _deliver(receiver, client: GrpcClient, signal: str, body: bytes, via: str) -> int:
    """Send until acknowledged, retrying as OTLP exporters do (UNAVAILABLE / 503, throttling);
    returns the number of retries."""
    for attempt in range(50):
        if via == "grpc":
            try:
                client.export(signal, body)
                return attempt
            except grpc.RpcError as error:
                assert error.code() in (
                    grpc.StatusCode.UNAVAILABLE,
                    grpc.StatusCode.RESOURCE_EXHAUSTED,
                ), error
        else:
            response = http_export(receiver, signal, body)
            if response.status_code == 200:
                return attempt
            assert response.status_code in (429, 503), response.text
        time.sleep(0.05)
    raise AssertionError("never acknowledged")


def test_two_receivers_on_one_database_with_overlapping_traffic_lose_and_duplicate_nothing(
    shared_postgres,
):
    work = _workload()
    with (
        running(shared_postgres) as first,
        running(shared_postgres) as second,
        GrpcClient(first.grpc_port) as first_client,
        GrpcClient(second.grpc_port) as second_client,
        ThreadPoolExecutor(4) as pool,
    ):
        plans = [
            (first, first_client, work, "grpc"),
            (first, first_client, work[::2], "http"),
            (second, second_client, work[::-1], "http"),
            (second, second_client, work[1::2], "grpc"),
        ]

        def run(plan) -> int:
            receiver, client, items, via = plan
            return sum(
                _deliver(receiver, client, signal, body, via) for signal, body, _, _ in items
            )

        retries = list(pool.map(run, plans))
        failed = first.stats.failed_requests + second.stats.failed_requests
    spans = set().union(*(keys for _, _, keys, _ in work))
    logs = set().union(*(bodies for _, _, _, bodies in work))
    stored = stored_spans(shared_postgres)
    assert stored.keys() == spans and len(spans) == 36 * 3
    assert sorted(r.body.string_value for r in stored_logs(shared_postgres)) == sorted(logs)
    with Store(shared_postgres) as store:
        assert store.counts() == {"traces": 36, "spans": 108, "log_records": 12}
        assert store.db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT resource) FROM resources"
        ).fetchone() == (9, 9)
        assert store.db.execute(
            "SELECT COUNT(*), COUNT(DISTINCT scope) FROM scopes"
        ).fetchone() == (2, 2)
        assert all(state.ended for state in store.trace_states())
    assert failed <= sum(retries)  # a request the store could not commit was retried, never lost


def _two_services(first: str, second: str) -> bytes:
    request = ExportTraceServiceRequest()
    for service in (first, second):
        request.resource_spans.extend(
            spans_request(
                hand_span("op", os.urandom(16), os.urandom(8)), service=service
            ).resource_spans
        )
    return request.SerializeToString()


def test_two_receivers_storing_the_same_new_resources_in_opposite_order_do_not_deadlock(
    shared_postgres,
):
    errors: list[grpc.StatusCode] = []
    with (
        running(shared_postgres) as first,
        running(shared_postgres) as second,
        GrpcClient(first.grpc_port) as first_client,
        GrpcClient(second.grpc_port) as second_client,
    ):
        for n in range(
            10
        ):  # a deadlock shows at the first pair or two; stop there (each costs 1 s)
            bodies = [
                (first_client, _two_services(f"a{n}", f"b{n}")),
                (second_client, _two_services(f"b{n}", f"a{n}")),
            ]
            barrier = threading.Barrier(2)

            def send(client: GrpcClient, body: bytes, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                try:
                    client.export("traces", body)
                except grpc.RpcError as error:
                    errors.append(error.code())

            threads = [threading.Thread(target=send, args=pair) for pair in bodies]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(10)
            if errors:
                break
        failed = first.stats.failed_requests + second.stats.failed_requests
    assert errors == [] and failed == 0


def test_a_span_delivered_again_in_another_request_is_read_back_once(store_location):
    spans = record(agent_turn)  # e.g. a Collector re-batching after an export it thought had failed
    first, second = encode_spans(spans[:2]), encode_spans(spans[1:])
    with running(store_location) as receiver, GrpcClient(receiver.grpc_port) as client:
        client.export("traces", first.SerializeToString())
        assert http_export(receiver, "traces", second.SerializeToString()).status_code == 200
    assert stored_spans(store_location) == request_spans(encode_spans(spans))
    with Store(store_location) as store:
        (trace,) = store.load(store.trace_ids())
        assert sorted(s.name for s in trace.spans) == sorted(s.name for s in spans)
