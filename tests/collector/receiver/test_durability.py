"""Durability: a request is acknowledged only once committed, so ``kill -9`` of a running
``tracegrade collect`` loses nothing it acknowledged, on SQLite (WAL) and PostgreSQL, and
the store opens, checks out and takes writes afterwards; a restarted receiver serves on."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import grpc
import httpx

from tests.support.collect_process import CollectProcess
from tests.support.receiver import (
    GrpcClient,
    hand_log,
    http_export,
    logs_request,
    request_spans,
    stored_logs,
    stored_spans,
)
from tests.support.sdk import agent_turn, trace_request
from tracegrade.store.database import is_postgres
from tracegrade.store.traces import Store


def _send_acknowledged(collect: CollectProcess, client: GrpcClient, n: int) -> tuple[set, set]:
    """Request ``n``: traces or logs, over gRPC or HTTP by turns; returns the acknowledged
    span keys and log bodies (raises when not acknowledged)."""
    if n % 3 == 2:
        body = f"log record {n} {os.urandom(4).hex()}"
        payload = logs_request(
            hand_log(body, trace_id=os.urandom(16), span_id=os.urandom(8))
        ).SerializeToString()
        spans, logs, signal_ = set(), {body}, "logs"
    else:
        request = trace_request(agent_turn)
        payload, spans, logs, signal_ = (
            request.SerializeToString(),
            set(request_spans(request)),
            set(),
            "traces",
        )
    if n % 2:
        client.export(signal_, payload)
    else:
        assert http_export(collect, signal_, payload).status_code == 200
    return spans, logs


def _assert_store_is_healthy(location: str) -> None:
    with Store(location) as store:
        if not is_postgres(location):
            assert store.db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        written = store.write([trace_request(agent_turn)])
        assert written == (3, 0)  # and it takes writes


def test_kill_9_loses_nothing_that_was_acknowledged(store_location):
    spans, logs = set(), set()
    with CollectProcess(store_location) as collect, GrpcClient(collect.grpc_port) as client:
        for n in range(30):
            new_spans, new_logs = _send_acknowledged(collect, client, n)
            spans |= new_spans
            logs |= new_logs
        collect.kill()
    assert collect.process.returncode == -signal.SIGKILL
    if not is_postgres(
        store_location
    ):  # the commits are in the write-ahead log, not yet checkpointed
        assert Path(f"{store_location}-wal").stat().st_size > 0
    assert stored_spans(store_location).keys() == spans and len(spans) == 20 * 3
    assert {r.body.string_value for r in stored_logs(store_location)} == logs and len(logs) == 10
    _assert_store_is_healthy(store_location)


def test_kill_9_in_the_middle_of_traffic_then_a_restarted_receiver_serves_on(tmp_path):
    db = str(tmp_path / "crash.db")
    acknowledged: list[tuple[set, set]] = []
    with CollectProcess(db) as collect, GrpcClient(collect.grpc_port) as client:

        def send(worker: int) -> None:
            for n in range(worker, 10_000, 4):
                try:
                    acknowledged.append(_send_acknowledged(collect, client, n))
                except (grpc.RpcError, httpx.HTTPError, AssertionError):
                    return

        threads = [threading.Thread(target=send, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 20
        while len(acknowledged) < 12:
            assert time.monotonic() < deadline
            time.sleep(0.005)
        collect.kill()
        for thread in threads:
            thread.join(10)
    spans = set().union(*(s for s, _ in acknowledged))
    logs = set().union(*(lg for _, lg in acknowledged))
    assert spans <= stored_spans(db).keys()
    assert logs <= {r.body.string_value for r in stored_logs(db)}
    before = stored_spans(db)

    with CollectProcess(db) as restarted:
        request = trace_request(agent_turn)
        assert http_export(restarted, "traces", request.SerializeToString()).status_code == 200
        assert restarted.stop() == 0
    after = stored_spans(db)
    assert after == {**before, **request_spans(request)}
    _assert_store_is_healthy(db)
