"""The SQLite trace store: lossless, idempotent, versioned."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tracegrade.errors import StoreError
from tracegrade.normalize import normalize_all, normalize_trace
from tracegrade.otlp.files import read_paths
from tracegrade.store.traces import Store

DEFAULT_VARIANT = (
    Path(__file__).parents[2]
    / "datasets"
    / "tau-bench-otlp"
    / "otel_genai_default"
    / "traces.jsonl.gz"
)


@pytest.fixture
def payloads():
    return read_paths([DEFAULT_VARIANT])


def _fill(store: Store, payloads) -> tuple[int, int]:
    return sum(store.add_traces(r) for r in payloads.traces), sum(
        store.add_logs(r) for r in payloads.logs
    )


def test_spans_and_logs_come_back_identical(tmp_path, payloads):
    with Store(tmp_path / "t.db") as store:
        assert _fill(store, payloads) == (439, 4132)
        loaded = store.load(store.trace_ids())
    by_id = {s.span_id: s for t in loaded for s in t.spans}
    for span in payloads.spans():
        assert by_id[span.span_id] == span
    stored_logs = sorted(
        (r.span_id, r.observed_time_unix_nano, repr(r.body)) for t in loaded for r in t.logs
    )
    assert stored_logs == sorted(
        (r.span_id, r.observed_time_unix_nano, repr(r.body)) for r in payloads.log_records()
    )


def test_normalising_from_the_store_equals_normalising_the_file(tmp_path, payloads):
    with Store(tmp_path / "t.db") as store:
        _fill(store, payloads)
        from_store = {
            t.trace_id: normalize_trace(t).to_dict() for t in store.load(store.trace_ids())
        }
    from_file = {
        t.trace_id: t.to_dict() for t in normalize_all(payloads.spans(), payloads.log_records())
    }
    assert from_store == from_file


def test_reimport_adds_nothing(tmp_path, payloads):
    with Store(tmp_path / "t.db") as store:
        _fill(store, payloads)
        assert _fill(store, payloads) == (0, 0)
        assert store.counts() == {"traces": 25, "spans": 439, "log_records": 4132}


def test_the_store_is_a_real_sqlite_file_with_a_schema_version(tmp_path, payloads):
    path = tmp_path / "t.db"
    with Store(path) as store:
        _fill(store, payloads)
        version = store.schema_version
    db = sqlite3.connect(path)
    assert [r[0] for r in db.execute("SELECT name FROM schema_migrations")][-1] == version
    assert db.execute("SELECT SUM(span_count) FROM span_chunks").fetchone()[0] == 439


def test_a_store_with_one_row_per_span_migrates_to_chunks_losslessly(
    tmp_path, payloads, monkeypatch
):
    """Stores written before 006_span_chunks kept one row per span; they migrate on open."""
    from tracegrade.store import traces as store_module

    path = tmp_path / "old.db"
    monkeypatch.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS[:5])
    with Store(path) as old:
        rid = old._resource_ref(payloads.traces[0].resource_spans[0].resource, "")
        sid = old._scope_ref(payloads.traces[0].resource_spans[0].scope_spans[0].scope, "")
        spans = [
            s
            for r in payloads.traces
            for g in r.resource_spans
            for sc in g.scope_spans
            for s in sc.spans
        ]
        with old.db:
            old.db.executemany(
                "INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        s.trace_id.hex(),
                        s.span_id.hex(),
                        s.parent_span_id.hex() or None,
                        s.name,
                        s.start_time_unix_nano,
                        s.end_time_unix_nano,
                        rid,
                        sid,
                        s.SerializeToString(),
                        1.0,
                    )
                    for s in spans
                ],
            )
            old.db.executemany(
                "INSERT INTO traces (trace_id, start_unix_nano, first_received_at, "
                "last_received_at) VALUES (?, 0, 1, 1) ON CONFLICT DO NOTHING",
                [(s.trace_id.hex(),) for s in spans],
            )
    monkeypatch.undo()
    with Store(path) as store:
        assert store.counts()["spans"] == 439
        loaded = {s.span_id: s for t in store.load(store.trace_ids()) for s in t.spans}
    assert sorted(loaded) == sorted(s.span_id.hex() for s in spans)
    assert {s.span_id: s.attributes for s in payloads.spans()} == {
        k: v.attributes for k, v in loaded.items()
    }


def test_newer_schema_is_refused(tmp_path):
    path = tmp_path / "t.db"
    Store(path).close()
    db = sqlite3.connect(path)
    db.execute("INSERT INTO schema_migrations VALUES ('999_future', 0)")
    db.commit()
    db.close()
    with pytest.raises(StoreError, match="newer tracegrade"):
        Store(path)


def test_filters_limit_since_and_ids(tmp_path, payloads):
    with Store(tmp_path / "t.db") as store:
        _fill(store, payloads)
        ids = store.trace_ids()
        assert len(ids) == 25 and len(store.trace_ids(limit=3)) == 3
        assert store.trace_ids(trace_ids=[ids[4]]) == [ids[4]]
        starts = {t.trace_id: min(s.start_unix_nano for s in t.spans) for t in store.load(ids)}
        newest = max(starts.values())
        assert store.trace_ids(since_unix_nano=newest) == [
            tid for tid, s in starts.items() if s == newest
        ]


def test_default_location_follows_env(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEGRADE_DB", str(tmp_path / "env.db"))
    with Store() as store:
        assert store.path == tmp_path / "env.db"
