"""The store on both backends (SQLite file, real PostgreSQL server): lossless, idempotent,
group commits, settling, runs, and concurrent writers."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.errors import StoreError
from tracegrade.normalize import normalize_all, normalize_trace
from tracegrade.otlp.files import read_paths
from tracegrade.store import follow as shared
from tracegrade.store.database import Database, display, hide_secrets
from tracegrade.store.runs import iter_run_cases, list_runs, load_run, save_run
from tracegrade.store.traces import MIGRATIONS, Store

DEFAULT_VARIANT = (
    Path(__file__).parents[2]
    / "datasets"
    / "tau-bench-otlp"
    / "otel_genai_default"
    / "traces.jsonl.gz"
)


@pytest.fixture(scope="module")
def payloads():
    return read_paths([DEFAULT_VARIANT])


def test_group_commit_is_lossless_and_idempotent(store_location, payloads):
    with Store(store_location) as store:
        assert store.write(payloads.traces, payloads.logs) == (439, 4132)
        assert store.write(payloads.traces, payloads.logs) == (0, 0)
        assert store.counts() == {"traces": 25, "spans": 439, "log_records": 4132}
        from_store = {
            t.trace_id: normalize_trace(t).to_dict() for t in store.load(store.trace_ids())
        }
    from_file = {
        t.trace_id: t.to_dict() for t in normalize_all(payloads.spans(), payloads.log_records())
    }
    assert from_store == from_file


def test_reopening_keeps_everything_and_migrates_once(store_location, payloads):
    with Store(store_location) as store:
        store.write(payloads.traces[:3])
        first = store.counts()
    with Store(store_location) as store:
        assert store.counts() == first
        applied = [r[0] for r in store.db.execute("SELECT name FROM schema_migrations")]
        assert sorted(applied) == sorted(name for name, _ in MIGRATIONS)


def test_large_values_are_compressed_with_lz4_on_postgresql(store_location, payloads):
    """Migration 011: a chunk of spans over PostgreSQL's 2 KB TOAST threshold is stored lz4
    compressed (when the server has lz4), and reads back as written."""
    with Store(store_location) as store:
        store.write(payloads.traces)
        from_store = {
            t.trace_id: normalize_trace(t).to_dict() for t in store.load(store.trace_ids())
        }
        if store.db.postgres:
            (has_lz4,) = store.db.execute(
                "SELECT 'lz4' = ANY(enumvals) FROM pg_settings"
                " WHERE name = 'default_toast_compression'"
            ).fetchone()
            rows = store.db.execute(
                "SELECT pg_column_compression(spans) FROM span_chunks WHERE length(spans) > 4000"
            )
            assert {row[0] for row in rows} == ({"lz4"} if has_lz4 else {"pglz"})
    assert from_store == {t.trace_id: t.to_dict() for t in normalize_all(payloads.spans())}


def test_a_trace_settles_once_its_agent_span_arrived_and_it_went_quiet(store_location):
    request = trace_request(
        lambda t: agent_turn(t, attributes={"tracegrade.case_id": "c1"}),
        resource={"service.name": "shop", "tracegrade.run_id": "run-7"},
    )
    with Store(store_location) as store:
        store.write([request])
        (state,) = store.trace_states(run_id="run-7")
        assert (state.case_id, state.ended, state.span_count) == ("c1", True, 3)
        assert store.settled(run_id="run-7", case_id="c1", quiet_s=60) is None
        assert store.settled(run_id="run-7", case_id="c1", quiet_s=60, now=time.time() + 61) == [
            state.trace_id
        ]
        assert store.settled(run_id="run-7", case_id="other", quiet_s=0) is None


def test_a_trace_without_its_root_span_is_not_settled(store_location):
    request = trace_request(agent_turn)
    for scoped in request.resource_spans[0].scope_spans:
        keep = [
            s for s in scoped.spans if s.parent_span_id
        ]  # the exporter has not sent the root yet
        del scoped.spans[:]
        scoped.spans.extend(keep)
    with Store(store_location) as store:
        store.write([request])
        (state,) = store.trace_states()
        assert not state.ended and state.span_count == 2
        assert store.settled(trace_ids=[state.trace_id], quiet_s=0) is None
        assert shared.claim(store.db, "w", 10, shared.Settling(0.0, rootless_quiet_s=60)) == []
        (late,) = shared.claim(store.db, "w", 10, shared.Settling(0.0, rootless_quiet_s=0))
        assert late.trace_id == state.trace_id  # rootless traces are scored after a while


def test_writes_queue_their_traces_in_order_of_change(store_location):
    first, second = trace_request(agent_turn), trace_request(agent_turn)
    ids = [r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in (first, second)]
    with Store(store_location) as store:
        store.write([first])
        time.sleep(0.01)
        store.write([second])
        claimed = shared.claim(store.db, "w", 1, shared.Settling(0.0))
        assert [c.trace_id for c in claimed] == ids[:1]
        others = shared.claim(store.db, "w2", 9, shared.Settling(0.0))
        assert [c.trace_id for c in others] == ids[1:]
        assert shared.pending(store.db) == 2  # claimed, not completed


def test_runs_are_stored_and_listed(store_location):
    doc = {
        "run": {"run_id": "r1", "dataset": {"name": "d", "digest": "x"}, "passed": True},
        "summary": {"score": 0.9},
        "cases": [{"case_id": "a", "trace_id": "t", "passed": True, "score": 0.9}],
    }
    with Store(store_location) as store:
        save_run(store, doc)
        assert load_run(store, "r1")["cases"] == doc["cases"]
        assert list_runs(store) == [{"run_id": "r1", "dataset": "d", "passed": True, "score": 0.9}]


def test_a_runs_cases_are_read_back_in_batches_in_order(store_location):
    """``score --baseline``'s BASE from the store: a cursor (server-side on PostgreSQL), not
    one list, with every case in its position."""
    cases = [
        {"case_id": f"c{n}", "trace_id": f"t{n}", "passed": n % 3 > 0, "score": n / 1000}
        for n in range(1203)
    ]
    run = {"run_id": "r1", "dataset": {"name": "d"}, "passed": True}
    doc = {"run": run, "summary": {"score": 0.5}, "cases": cases}
    with Store(store_location) as store:
        save_run(store, doc)
        batches = iter_run_cases(store, "r1", batch_size=100)
        assert next(batches) == cases[0]  # lazily: the first batch is read, not the run
        assert [cases[0], *batches] == cases


def test_concurrent_writers_on_one_database_lose_nothing(store_location, payloads):
    """Several receivers (e.g. behind the Collector's loadbalancing exporter) share one store."""
    with Store(store_location):
        pass  # migrate once up front, as the first receiver would
    errors: list[BaseException] = []

    def writer(part: int) -> None:
        try:
            with Store(store_location) as store:
                for request in payloads.traces[part::3]:
                    store.write([request])
                store.write(payloads.traces[:5])  # overlapping resends
        except BaseException as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with Store(store_location) as store:
        assert store.counts()["spans"] == 439 and store.counts()["traces"] == 25


def test_many_connections_opening_a_new_sqlite_store_at_once_all_succeed(tmp_path):
    """SQLite refuses the switch to WAL at once ("database is locked") while another
    connection creates the same file; opening must wait instead (receiver + follower)."""
    errors: list[BaseException] = []
    for attempt in range(20):
        path = tmp_path / f"race{attempt}.db"
        barrier = threading.Barrier(8)

        def open_store(path: Path, barrier: threading.Barrier) -> None:
            barrier.wait()
            try:
                Store(path).close()
            except BaseException as exc:  # noqa: BLE001 (reported below)
                errors.append(exc)

        threads = [threading.Thread(target=open_store, args=(path, barrier)) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []


@pytest.mark.parametrize(
    "url, shown",
    [
        ("postgresql://u:Hunter2pw@h/db", "postgresql://u:***@h/db"),
        (
            "postgres://u@h/db?password=Hunter2pw&sslmode=require",
            "postgres://u@h/db?password=***&sslmode=require",
        ),
        (
            "postgresql://:Hunter2pw@h:5432/db?sslpassword=Hunter2pw",
            "postgresql://:***@h:5432/db?sslpassword=***",
        ),
        ("postgresql://u:Hunter2pw@[bad/db", "postgresql://***"),
        ("postgresql://h/db", "postgresql://h/db"),
    ],
)
def test_every_form_of_dsn_password_is_masked(url: str, shown: str) -> None:
    assert display(url) == shown
    assert "Hunter2pw" not in hide_secrets(f"invalid dsn {url}: password=Hunter2pw", url)


def test_a_driver_error_quoting_the_password_is_masked() -> None:
    with pytest.raises(StoreError) as caught:
        Database("postgresql://u@127.0.0.1:1/db?password=Hunter2pw&connect_timeout=1&bad opt=x")
    assert "Hunter2pw" not in str(caught.value)
