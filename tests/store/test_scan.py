"""Reading a store in batches (tracegrade.store.scan, reading.iter_from_store): the same ids
in the same order as one query, on SQLite and on PostgreSQL (server-side cursor)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.postgres import fresh_database
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.files import read_paths
from tracegrade.pipeline import reading
from tracegrade.store.scan import trace_id_batches
from tracegrade.store.traces import Store

CORPUS = Path(__file__).parents[2] / "datasets" / "tau-bench-otlp" / "otel_genai_default"


def _fill(store: Store) -> None:
    payloads = read_paths([CORPUS / "traces.jsonl.gz"])  # and its logs sibling
    for request in payloads.traces:
        store.add_traces(request)
    for request in payloads.logs:
        store.add_logs(request)


def _check(store: Store) -> None:
    everything = store.trace_ids()
    assert len(everything) == 25
    batches = list(trace_id_batches(store, batch_size=7))
    assert [len(b) for b in batches] == [7, 7, 7, 4]
    assert [i for b in batches for i in b] == everything
    assert [i for b in trace_id_batches(store, limit=5, batch_size=2) for i in b] == everything[:5]
    traces = [t for batch in reading.iter_from_store(store, batch_size=10) for t in batch]
    assert traces == [normalize_trace(t) for t in store.load(everything)]
    assert all(t.llm_calls for t in traces)  # log-event content joined


def test_sqlite_store_reads_in_batches(tmp_path):
    with Store(tmp_path / "t.db") as store:
        _fill(store)
        _check(store)


def test_postgres_store_reads_through_a_server_side_cursor():
    with fresh_database() as url, Store(url) as store:
        _fill(store)
        _check(store)


def test_batch_size_must_be_positive(tmp_path):
    with Store(tmp_path / "t.db") as store, pytest.raises(ValueError, match="batch_size"):
        next(trace_id_batches(store, batch_size=0))
