"""Shutdown is bounded by design (issue 10 item 5): the writer commits queued requests until a
drain deadline and refuses the rest unstored, so stopping takes at most the deadline plus one
batch commit whatever the backlog, every acknowledged request is stored, and no refused
request is claimed as stored."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from tests.support.receiver import request_spans, stored_spans
from tests.support.sdk import agent_turn, trace_request
from tracegrade.collector import ingest as ingest_module
from tracegrade.collector.admission import admit
from tracegrade.collector.ingest import Ingest
from tracegrade.errors import StoreError
from tracegrade.store.traces import Store

COMMIT_S = 0.05
"""How long each of the slow store's commits takes (s)."""


class SlowStore(Store):
    """A real SQLite store whose every commit takes COMMIT_S: a backlog that cannot drain fast."""

    def write_prepared(self, spans, logs):  # type: ignore[no-untyped-def]
        time.sleep(COMMIT_S)
        return super().write_prepared(spans, logs)


def test_stop_with_a_backlog_returns_near_the_deadline_and_keeps_what_it_acknowledged(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(ingest_module, "MAX_BATCH_REQUESTS", 1)  # one commit per request
    db = tmp_path / "slow.db"
    ingest = Ingest(lambda: SlowStore(db))
    ingest.start()
    requests = [trace_request(agent_turn) for _ in range(300)]
    futures: list[tuple[object, Future[int]]] = []
    for request in requests:
        body = request.SerializeToString()
        futures.append((request, ingest.submit(admit("traces", body, "protobuf"))))
    started = time.monotonic()
    stopper = threading.Thread(target=ingest.stop, args=(0.5,))
    stopper.start()
    stopper.join(30)
    assert not stopper.is_alive()
    # the deadline plus one batch commit in flight, nowhere near the 300 x 50 ms backlog
    assert time.monotonic() - started < 0.5 + 5.0
    acknowledged = [r for r, f in futures if f.exception() is None]
    refused = [f.exception() for _, f in futures if f.exception() is not None]
    assert acknowledged and refused
    assert all(isinstance(e, StoreError) and "resend" in str(e) for e in refused)
    keys = set().union(*(set(request_spans(r)) for r in acknowledged))
    stored = stored_spans(db)
    assert keys <= stored.keys()
    assert len(stored) == len(keys)  # nothing refused reached the store


def test_stop_without_a_backlog_writes_everything_queued(tmp_path):
    db = tmp_path / "quick.db"
    ingest = Ingest(lambda: Store(db))
    ingest.start()
    requests = [trace_request(agent_turn) for _ in range(20)]
    futures = [ingest.submit(admit("traces", r.SerializeToString(), "protobuf")) for r in requests]
    ingest.stop(10.0)
    assert [f.result(0) for f in futures] == [3] * 20
    assert len(stored_spans(db)) == 60


def test_a_requests_rows_are_freed_once_it_is_answered_while_the_writer_idles(tmp_path):
    """The writer drops a batch's decoded data and rows when it gives back its charge, not
    when its next batch replaces this one: an idle writer holds nothing of what it stored."""
    import gc
    import weakref

    ingest = Ingest(lambda: Store(tmp_path / "store.db"))
    ingest.start()
    admitted = admit("traces", trace_request(agent_turn).SerializeToString(), "protobuf")
    rows = weakref.ref(admitted.prepared)
    assert ingest.submit(admitted).result(timeout=30) == 3
    deadline = time.monotonic() + 5
    while rows() is not None:  # once the commit's frame returns
        assert time.monotonic() < deadline, "the writer still holds the request it stored"
        gc.collect()
        time.sleep(0.01)
    assert admitted.request is None and admitted.items == 3  # the answer needs only counts
    ingest.stop()
