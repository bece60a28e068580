"""Settling through the receiver, on SQLite and PostgreSQL: a trace is not ended until its
root (or agent) span arrives, whatever order the exports come in; run and case ids come from
resource attributes (``OTEL_RESOURCE_ATTRIBUTES``) or span attributes and select traces in
``Store.settled`` / ``trace_states`` and the scoring queue."""

from __future__ import annotations

import os
import time

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.receiver import (
    HTTP,
    GrpcClient,
    hand_span,
    http_export,
    running,
    spans_request,
)
from tests.support.sdk import agent_turn, record
from tests.support.sdk_pipelines import export_traces, span_exporter
from tracegrade.store import follow as shared
from tracegrade.store.traces import Store


def _turn(case_id: str | None = None, run_id: str | None = "run-1"):
    """The spans of one agent turn (root = the invoke_agent span), split into (children, root)."""
    spans = record(
        lambda t: agent_turn(t, attributes={"tracegrade.case_id": case_id} if case_id else {}),
        resource={"service.name": "shop", **({"tracegrade.run_id": run_id} if run_id else {})},
    )
    root = next(s for s in spans if s.parent is None)
    return [s for s in spans if s is not root], root, format(root.context.trace_id, "032x")


def _send(receiver, client: GrpcClient, spans, via: str = "grpc") -> None:
    body = encode_spans(spans).SerializeToString()
    if via == "grpc":
        client.export("traces", body)
    else:
        assert http_export(receiver, "traces", body).status_code == 200


@pytest.mark.parametrize("via", ["grpc", "http"])
def test_a_trace_is_open_until_its_root_arrives_in_a_later_request(store_location, via):
    children, root, trace_id = _turn(case_id="case-a")
    with (
        running(store_location) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        Store(store_location) as store,
    ):
        _send(receiver, client, children, via)
        (state,) = store.trace_states(trace_ids=[trace_id])
        assert (state.ended, state.span_count, state.run_id, state.case_id) == (
            False,
            2,
            "run-1",
            None,
        )
        assert store.settled(trace_ids=[trace_id], quiet_s=0) is None
        assert (
            store.settled(run_id="run-1", quiet_s=0, now=time.time() + 3600) is None
        )  # never, while open
        assert shared.claim(store.db, "w", 9, shared.Settling(0.0)) == []  # not ended yet

        before_root = time.time()
        _send(receiver, client, [root], via)
        (state,) = store.trace_states(trace_ids=[trace_id])
        assert (state.ended, state.span_count, state.run_id, state.case_id) == (
            True,
            3,
            "run-1",
            "case-a",
        )
        assert state.last_received_at >= before_root >= state.first_received_at
        assert store.settled(trace_ids=[trace_id], quiet_s=0) == [trace_id]
        assert store.settled(trace_ids=[trace_id], quiet_s=60) is None  # not quiet yet
        assert store.settled(trace_ids=[trace_id], quiet_s=60, now=state.last_received_at + 60) == [
            trace_id
        ]
        (claimed,) = shared.claim(store.db, "w", 9, shared.Settling(0.0))
        assert (claimed.trace_id, claimed.version) == (trace_id, 2)  # two writes brought spans


def test_an_agent_span_ends_the_trace_before_its_parent_arrives(store_location):
    spans = record(lambda t: _wrapped_turn(t))
    outer = next(s for s in spans if s.parent is None)
    agent = next(s for s in spans if s.name == "invoke_agent shop")
    tools = [s for s in spans if s not in (outer, agent)]
    trace_id = format(outer.context.trace_id, "032x")
    with (
        running(store_location) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        Store(store_location) as store,
    ):
        _send(receiver, client, tools)
        assert store.trace_states(trace_ids=[trace_id])[0].ended is False
        _send(receiver, client, [agent])
        assert store.trace_states(trace_ids=[trace_id])[0].ended is True


def _wrapped_turn(tracer) -> None:
    with tracer.start_as_current_span("POST /chat"):
        agent_turn(tracer)


def test_run_and_case_ids_from_otel_resource_attributes_are_indexed(store_location, monkeypatch):
    monkeypatch.setenv(
        "OTEL_RESOURCE_ATTRIBUTES", "tracegrade.run_id=run-env,tracegrade.case_id=case-env"
    )
    with running(store_location) as receiver:
        sent = export_traces(span_exporter("http", receiver), agent_turn, {"service.name": "shop"})
    trace_id = format(sent[0].context.trace_id, "032x")
    with Store(store_location) as store:
        (state,) = store.trace_states(run_id="run-env", case_id="case-env")
        assert (state.trace_id, state.ended, state.span_count) == (trace_id, True, 3)
        assert store.settled(run_id="run-env", case_id="case-env", quiet_s=0) == [trace_id]
        assert store.trace_states(run_id="run-env", case_id="other") == []


def test_run_and_case_ids_from_span_attributes_are_indexed(store_location):
    spans = record(
        lambda t: agent_turn(
            t, attributes={"tracegrade.run_id": "run-span", "tracegrade.case_id": "c9"}
        )
    )
    with (
        running(store_location) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        Store(store_location) as store,
    ):
        _send(receiver, client, spans)
        (state,) = store.trace_states(run_id="run-span")
        assert (state.case_id, state.trace_id) == ("c9", format(spans[0].context.trace_id, "032x"))


def test_settled_for_a_run_waits_for_every_case(store_location):
    done_children, done_root, done = _turn(case_id="c1", run_id="run-2")
    open_children, open_root, pending = _turn(case_id="c2", run_id="run-2")
    other_children, other_root, other = _turn(case_id="c1", run_id="run-3")
    with (
        running(store_location) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        Store(store_location) as store,
    ):
        assert store.settled(run_id="run-2", quiet_s=0) is None  # nothing arrived yet
        _send(receiver, client, [*done_children, done_root, *other_children, other_root])
        _send(receiver, client, open_children, "http")
        assert store.settled(run_id="run-2", case_id="c1", quiet_s=0) == [done]
        assert store.settled(run_id="run-2", quiet_s=0) is None  # case c2 is still open
        _send(receiver, client, [open_root], "http")
        assert sorted(store.settled(run_id="run-2", quiet_s=0)) == sorted([done, pending])
        assert store.settled(run_id="run-3", quiet_s=0) == [other]
        assert (
            store.settled(case_id="c1", quiet_s=0) is not None
            and len(store.settled(case_id="c1", quiet_s=0)) == 2
        )


def test_a_resent_export_does_not_inflate_the_span_count(store_location):
    spans = record(agent_turn)
    with (
        running(store_location) as receiver,
        GrpcClient(receiver.grpc_port) as client,
        Store(store_location) as store,
    ):
        _send(receiver, client, spans)
        _send(receiver, client, spans, "http")  # e.g. a retry after a timeout that did commit
        assert store.counts()["spans"] == 3
        assert store.trace_states()[0].span_count == 3


def test_spans_resent_in_another_grouping_are_counted_once(store_location):
    """10 spans sent whole, then as 2 requests of 5, then one by one (plus one new span):
    the trace's span count and /healthz both say 11, and each span is read back once."""
    trace_id = os.urandom(16)
    spans = [hand_span(f"s{n}", trace_id, os.urandom(8)) for n in range(10)]
    groupings = [[spans], [spans[:5], spans[5:]], [[span] for span in spans]]
    late = hand_span("late", trace_id, os.urandom(8))
    with running(store_location) as receiver, GrpcClient(receiver.grpc_port) as client:
        for grouping in groupings:
            for group in grouping:
                client.export("traces", spans_request(*group).SerializeToString())
        client.export("traces", spans_request(spans[0], late).SerializeToString())
        health = HTTP.get(f"{receiver.http_endpoint}/healthz").json()
    assert health["stored"] == 11
    with Store(store_location) as store:
        (state,) = store.trace_states()
        assert state.span_count == 11
        (trace,) = store.load([trace_id.hex()])
        assert len(trace.spans) == 11
