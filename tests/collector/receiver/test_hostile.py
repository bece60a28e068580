"""Hostile clients against a running receiver, each bounded in time: slow-loris senders on both
protocols, idle connections, unauthenticated stalled gRPC calls, a body of millions of empty
entries, NUL characters on PostgreSQL. After each, an authorised client is still served
within a few seconds and nothing acknowledged is lost."""

from __future__ import annotations

import os
import time

import grpc
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.collector.receiver.helpers import (
    GrpcClient,
    hand_span,
    http_export,
    http_response,
    request_spans,
    running,
    spans_request,
    stored_spans,
)
from tracegrade.store.traces import Store

SERVED_WITHIN_S = 5.0
"""How fast an authorised client must be served while the attack goes on."""


def assert_served(receiver, stored: set, *, metadata=(), headers=None) -> None:
    """An authorised export on each protocol succeeds within SERVED_WITHIN_S; adds its spans
    to ``stored`` (what must be in the store at the end)."""
    for protocol in ("grpc", "http"):
        request = spans_request(hand_span(f"served-{protocol}", os.urandom(16), os.urandom(8)))
        started = time.monotonic()
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                client.export(
                    "traces",
                    request.SerializeToString(),
                    metadata=metadata,
                    timeout_s=SERVED_WITHIN_S,
                )
        else:
            response = http_export(receiver, "traces", request.SerializeToString(), headers=headers)
            assert response.status_code == 200, response.text
        assert time.monotonic() - started < SERVED_WITHIN_S
        stored |= set(request_spans(request))


# --- NUL characters (PostgreSQL refuses them in text columns) ----------------------------------


def nul_request() -> ExportTraceServiceRequest:
    """Two resources: one with NULs in run id, case id and schema URLs, one ordinary."""
    request = spans_request(hand_span("ordinary", os.urandom(16), os.urandom(8)))
    poisoned = spans_request(hand_span("poisoned", os.urandom(16), os.urandom(8)))
    group = poisoned.resource_spans[0]
    group.schema_url = "https://schemas\x00/1"
    group.scope_spans[0].schema_url = "scope\x00url"
    group.resource.attributes.add(key="tracegrade.run_id").value.string_value = "run\x00"
    span = group.scope_spans[0].spans[0]
    span.attributes.add(key="tracegrade.case_id").value.string_value = "case\x00one"
    request.resource_spans.append(group)
    return request


@pytest.mark.parametrize("protocol", ["grpc", "http"])
def test_nul_characters_store_the_same_on_both_backends_and_are_never_retryable(
    store_location, protocol
):
    request = nul_request()
    with running(store_location) as receiver:
        if protocol == "grpc":
            with GrpcClient(receiver.grpc_port) as client:
                response = client.export("traces", request.SerializeToString())
        else:
            answer = http_export(receiver, "traces", request.SerializeToString())
            assert answer.status_code == 200, answer.text
            response = http_response(answer, "traces")
        assert response.partial_success.rejected_spans == 0
        stored = set(request_spans(request))
        assert_served(receiver, stored)
    assert set(stored_spans(store_location)) == stored
    with Store(store_location) as store:
        (state,) = store.trace_states(case_id="case\ufffdone")
        assert state.run_id == "run\ufffd"
        urls = {row[0] for row in store.db.execute("SELECT schema_url FROM resources")}
        assert "https://schemas\ufffd/1" in urls


def test_data_the_store_refuses_is_invalid_not_retryable(tmp_path):
    """A request whose data the store itself refuses (a DataError) is answered 400 /
    INVALID_ARGUMENT, which exporters do not retry, while other requests are still stored."""
    import sqlite3

    from tracegrade.errors import StoreError

    poisoned = spans_request(hand_span("poisoned", os.urandom(16), os.urandom(8)))

    def refuse(store):
        real = store.write_prepared

        def write_prepared(spans, logs=()):
            if "poisoned" in repr(spans.groups):
                try:
                    raise sqlite3.DataError("refused")
                except sqlite3.DataError as exc:
                    raise StoreError("cannot write") from exc
            return real(spans, logs)

        store.write_prepared = write_prepared
        return store

    with running(tmp_path / "store.db", wrap_store=refuse) as receiver:
        answer = http_export(receiver, "traces", poisoned.SerializeToString())
        assert answer.status_code == 400 and "Retry-After" not in answer.headers
        with GrpcClient(receiver.grpc_port) as client, pytest.raises(grpc.RpcError) as error:
            client.export("traces", poisoned.SerializeToString())
        assert error.value.code() is grpc.StatusCode.INVALID_ARGUMENT
        stored: set = set()
        assert_served(receiver, stored)
    assert set(stored_spans(tmp_path / "store.db")) == stored
