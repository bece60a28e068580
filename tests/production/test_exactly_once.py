"""Every stored trace is scored exactly once by ``score --follow`` workers, on SQLite and on
the real PostgreSQL server, in the cases that skipped or doubled traces behind a time
watermark: a 1,500-trace transaction (a group commit cut by a poll's limit), a commit delayed
past the quiet period by a held lock, every worker restarted after traces settled, a worker
killed with SIGKILL mid-batch, and a batch slower than the lease. Counted in the store (one
result per trace) and, where it matters, in the scorer's own calls."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.production import slow_scorer
from tests.support.collect_process import command
from tests.support.sdk import agent_turn, trace_request
from tracegrade.config import load_config
from tracegrade.pipeline.follow import Follower
from tracegrade.scoring import build_scorers
from tracegrade.store import follow as shared
from tracegrade.store.database import is_postgres
from tracegrade.store.traces import Store

SLOW = "tests.production.slow_scorer:slow"
ROOT = Path(__file__).parents[2]


def _turns(count: int, offset: int = 0) -> Any:
    """One OTLP request holding ``count`` agent turns, each its own trace."""
    return trace_request(
        lambda t: [agent_turn(t, f"find shoes {offset + i}", "Found shoes") for i in range(count)],
        {"service.name": "shop"},
    )


def _ids(*requests: Any) -> set[str]:
    return {
        span.trace_id.hex()
        for request in requests
        for group in request.resource_spans
        for scoped in group.scope_spans
        for span in scoped.spans
    }


def _follower(db: str, scorers: Sequence[str] = (), **options: Any) -> Follower:
    config = load_config(None)
    options = {"quiet_s": 0.0, **options}
    return Follower(db, None, build_scorers(config, scorers), config, **options)


def _drain(db: str, followers: Sequence[Follower], expected: set[str], timeout_s: float = 120):
    """Poll the followers in turn until every expected trace has a result; returns the result
    count of each trace."""
    deadline = time.monotonic() + timeout_s
    with Store(db) as store:
        while time.monotonic() < deadline:
            for follower in followers:
                follower.poll(store)
            if expected <= shared.result_counts(store.db).keys():
                break
        return shared.result_counts(store.db)


def test_a_1500_trace_transaction_is_scored_whole(store_location):
    request = _turns(1500)
    with Store(store_location) as store:
        store.write([request])  # one transaction: one commit, one stamp for every trace
    followers = [_follower(store_location, worker=w) for w in ("a", "b")]
    assert _drain(store_location, followers, _ids(request)) == {t: 1 for t in _ids(request)}


def _first_trace_started(request: Any) -> tuple[Any, Any]:
    """(a request with the first trace's child spans, one with every other span): the first
    trace's row exists before the rest is written."""
    first = request.resource_spans[0].scope_spans[0].spans[0].trace_id
    started = type(request)()
    started.CopyFrom(request)
    for message, keep in ((started, True), (request, False)):
        for scoped in message.resource_spans[0].scope_spans:
            spans = [
                s for s in scoped.spans if (s.trace_id == first and bool(s.parent_span_id)) == keep
            ]
            del scoped.spans[:]
            scoped.spans.extend(spans)
    return started, request


@contextmanager
def _lock_held(db: str, trace_id: str) -> Iterator[None]:
    """Block writers of ``trace_id``: on PostgreSQL its ``traces`` row is locked (other traces
    commit meanwhile), on SQLite the whole database (SQLite has one writer)."""
    if is_postgres(db):
        import psycopg

        with psycopg.connect(db) as conn:
            conn.execute("SELECT 1 FROM traces WHERE trace_id = %s FOR UPDATE", (trace_id,))
            yield
            conn.rollback()
        return
    conn = sqlite3.connect(db, timeout=30)
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        conn.rollback()
        conn.close()


def test_a_commit_delayed_past_the_quiet_period_by_a_lock_is_scored(store_location):
    early, later = _turns(20, 0), _turns(20, 200)
    started, delayed = _first_trace_started(_turns(50, 100))
    held = started.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    follower = _follower(store_location, quiet_s=1.0)
    _write(store_location, [early, started])
    _drain(store_location, [follower], _ids(early))
    with _lock_held(store_location, held):
        writer = threading.Thread(target=_write, args=(store_location, [delayed]))
        writer.start()  # 50 traces wait on the lock: stamped now, committed 3 s later
        if is_postgres(store_location):  # other receivers commit and workers score meanwhile
            _write(store_location, [later])
            _drain(store_location, [follower], _ids(early, later), timeout_s=10)
        time.sleep(3.0)  # past the quiet period
    writer.join(30)
    if not is_postgres(store_location):
        _write(store_location, [later])
    expected = _ids(early, delayed, later)
    assert _drain(store_location, [follower], expected) == {t: 1 for t in expected}


def _write(db: str, requests: list[Any]) -> None:
    with Store(db) as store:
        store.write(requests)


class _Worker:
    """A ``tracegrade score --follow`` process (no ``--since``: its default horizon)."""

    def __init__(self, db: str, *args: str, env: dict[str, str] | None = None):
        self.process = subprocess.Popen(
            [*command(), "score", "--follow", "--db", db, "--quiet-s", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        )
        assert "scoring traces as they settle" in self.process.stderr.readline()

    def stop(self) -> tuple[str, str]:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        out, err = self.process.communicate(timeout=60)
        return out, err


def _wait_for(db: str, expected: set[str], timeout_s: float = 90) -> dict[str, int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with Store(db) as store:
            counts = shared.result_counts(store.db)
            if expected <= counts.keys() and shared.pending(store.db) == 0:
                return counts
        time.sleep(0.2)
    with Store(db) as store:
        return shared.result_counts(store.db)


def test_workers_restarted_after_traces_settled_score_them(store_location):
    before, during = _turns(30, 0), _turns(40, 100)
    with Store(store_location) as store:
        store.write([before])
    with Store(store_location) as store:
        assert len(_follower(store_location, batch=10).poll(store)) == 10  # one batch scored...
    _write(store_location, [during])  # ...then every worker stopped (a deploy), traces came
    time.sleep(0.5)
    worker = _Worker(store_location)  # restarted without --since
    try:
        counts = _wait_for(store_location, _ids(before, during))
    finally:
        out, err = worker.stop()
    assert counts == {t: 1 for t in _ids(before, during)}, err[-2000:]
    assert out.count("\n") == 70 - 10  # the restarted worker scored what was left


def test_a_worker_killed_mid_batch_loses_nothing_and_doubles_nothing(store_location, tmp_path):
    request = _turns(40)
    with Store(store_location) as store:
        store.write([request])
    env = {slow_scorer.DELAY_ENV: "0.2", slow_scorer.LOG_ENV: str(tmp_path / "calls")}
    doomed = _Worker(store_location, "--scorer", SLOW, "--lease-s", "2", env=env)
    deadline = time.monotonic() + 60
    while not slow_scorer.calls(tmp_path / "calls") and time.monotonic() < deadline:
        time.sleep(0.05)  # it claimed a batch and is scoring it
    os.kill(doomed.process.pid, signal.SIGKILL)
    doomed.process.wait(10)
    with Store(store_location) as store:
        held = store.db.execute(
            "SELECT COUNT(*) FROM score_queue WHERE claimed_by IS NOT NULL"
        ).fetchone()[0]
    assert held > 0  # killed holding claims
    survivor = _Worker(store_location, "--scorer", SLOW, "--lease-s", "2", env=env)
    try:
        counts = _wait_for(store_location, _ids(request))
    finally:
        survivor.stop()
    assert counts == {t: 1 for t in _ids(request)}


def test_a_batch_slower_than_the_lease_is_not_scored_twice(store_location, tmp_path, monkeypatch):
    monkeypatch.setenv(slow_scorer.DELAY_ENV, "0.15")
    monkeypatch.setenv(slow_scorer.LOG_ENV, str(tmp_path / "calls"))
    request = _turns(30)
    with Store(store_location) as store:
        store.write([request])
    followers = [
        _follower(store_location, [SLOW], worker=w, lease_s=1.0, batch=10) for w in ("a", "b")
    ]  # a batch takes 1.5 s: past the 1 s lease, renewed every 0.33 s
    stop = threading.Event()
    threads = [
        threading.Thread(target=f.run, args=(stop, lambda *_: None, lambda _: None, 0.05))
        for f in followers
    ]
    for thread in threads:
        thread.start()
    try:
        counts = _wait_for(store_location, _ids(request), timeout_s=120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert counts == {t: 1 for t in _ids(request)}
    assert slow_scorer.calls(tmp_path / "calls") == {t: 1 for t in _ids(request)}
    assert all(f.leases is None for f in followers)


@pytest.mark.parametrize("workers", [2])
def test_bursts_through_a_receiver_and_follow_workers(store_location, workers):
    """Several SDK clients send bursts through a real receiver while one follower with
    ``--workers 2`` scores: every trace once."""
    from tests.production.test_scale_out import _send
    from tests.support.collect_process import CollectProcess

    with Store(store_location):
        pass
    with CollectProcess(store_location) as receiver:
        worker = _Worker(store_location, "--workers", str(workers))
        sent: set[str] = set()
        lock = threading.Lock()

        def client(offset: int) -> None:
            ids = _send(receiver.http_endpoint, 150, offset)
            with lock:
                sent.update(ids)

        clients = [threading.Thread(target=client, args=(n * 1000,)) for n in range(4)]
        try:
            for thread in clients:
                thread.start()
            for thread in clients:
                thread.join(120)
            counts = _wait_for(store_location, sent)
        finally:
            out, err = worker.stop()
    assert len(sent) == 600
    assert counts == {t: 1 for t in sent}, err[-2000:]
    assert out.count("\n") == 600


def test_a_scoring_process_killed_mid_batch_is_replaced(tmp_path, monkeypatch):
    """``--workers 2``: one of the follower's scoring processes is killed (SIGKILL) while it
    holds a batch; the follower starts another, and the killed one's claims are scored after
    its lease: every trace once."""
    import multiprocessing

    from tracegrade.pipeline.follow_workers import run_follower

    monkeypatch.setenv(slow_scorer.DELAY_ENV, "0.1")
    monkeypatch.setenv(slow_scorer.LOG_ENV, str(tmp_path / "calls"))
    db = str(tmp_path / "p.db")
    request = _turns(40)
    _write(db, [request])
    follower = _follower(db, [SLOW], lease_s=2.0, batch=8, workers=2)
    stop, printed = threading.Event(), []
    thread = threading.Thread(
        target=run_follower, args=(follower, stop, lambda *_: None, printed.append, 0.05)
    )
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not slow_scorer.calls(tmp_path / "calls") and time.monotonic() < deadline:
            time.sleep(0.05)
        victim = multiprocessing.active_children()[0]
        os.kill(victim.pid, signal.SIGKILL)  # type: ignore[arg-type]
        counts = _wait_for(db, _ids(request))
    finally:
        stop.set()
        thread.join(90)
    assert counts == {t: 1 for t in _ids(request)}
    assert any(f"scoring process {victim.pid} ended" in text for text in printed)
