"""Stores written before the outbox and retention keep opening (migrations 014 and 015), on
SQLite and the real PostgreSQL server: a store at ``013_trace_search`` (with end-user feedback)
upgrades; traces no worker completed are queued for scoring (and only those), and on
PostgreSQL the span and log tables become day partitions holding the same rows, which read
back as before and take new writes (feedback in new log records still extracted)."""

from __future__ import annotations

import time
from typing import Any

from tests.support.receiver import hand_log, logs_request
from tests.support.sdk import agent_turn, trace_request
from tracegrade.store import feedback, partitions
from tracegrade.store import follow as shared
from tracegrade.store.database import Database
from tracegrade.store.feedback import feedback_request
from tracegrade.store.migrations import MIGRATIONS, migrate
from tracegrade.store.rows import CHUNK_COLUMNS, LOG_COLUMNS, PreparedSpans, digest, log_rows
from tracegrade.store.traces import Store

DAY_S = 86_400
BEFORE_014 = [step for step in MIGRATIONS if step[0] < "014"]


def _ref(db: Database, table: str) -> Any:
    column = "resource" if table == "resources" else "scope"

    def resolve(message: Any, url: str) -> int:
        payload = message.SerializeToString(deterministic=True)
        key = digest(payload + url.encode())
        db.execute(
            f"INSERT INTO {table} (digest, {column}, schema_url) VALUES (?, ?, ?)"
            " ON CONFLICT (digest) DO NOTHING",
            (key, payload, url),
        )
        return int(db.execute(f"SELECT id FROM {table} WHERE digest = ?", (key,)).fetchone()[0])

    return resolve


def _old_write(db: Database, request: Any, logs: Any, received_at: float) -> None:
    """What tracegrade wrote before migration 014 (no version, no queue, no day)."""
    prepared = PreparedSpans().add_request(request)
    resources, scopes = _ref(db, "resources"), _ref(db, "scopes")
    with db:
        db.insert_many(
            f"INSERT INTO span_chunks ({CHUNK_COLUMNS})",
            prepared.chunk_rows(resources, scopes, received_at),
        )
        db.executemany(
            "INSERT INTO traces (trace_id, start_unix_nano, first_received_at, last_received_at,"
            " run_id, case_id, ended, span_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            prepared.trace_rows(received_at),
        )
        db.insert_many(
            f"INSERT INTO log_records ({LOG_COLUMNS})",
            log_rows([logs], resources, scopes, received_at),
        )


def _old_store(location: str) -> dict[str, float]:
    """A store at migration 013 with a trace on each of three days, the middle one already
    scored by a follower of the time (``score_claims`` done at its version) and given
    end-user feedback (``012_review``'s table)."""
    db = Database(location)
    migrate(db, location, BEFORE_014)
    stamps = {}
    for age in (2, 1, 0):
        request = trace_request(lambda t, age=age: agent_turn(t, f"question {age}", "answer"))
        trace_id = request.resource_spans[0].scope_spans[0].spans[0].trace_id
        logs = logs_request(hand_log(f"event {age}", trace_id=trace_id))
        stamps[trace_id.hex()] = received_at = time.time() - age * DAY_S
        _old_write(db, request, logs, received_at)
    scored = sorted(stamps, key=stamps.get)[1]
    with db:
        db.execute(
            "INSERT INTO score_claims (trace_id, version, state, done_version)"
            " VALUES (?, ?, 'done', ?)",
            (scored, stamps[scored], stamps[scored]),
        )
        rows = log_rows(
            [feedback_request(scored, "thumbs", label="up")],
            _ref(db, "resources"),
            _ref(db, "scopes"),
            stamps[scored],
        )
        feedback.insert(db, feedback.from_log_rows(rows), stamps[scored])
    db.close()
    return stamps


def test_an_old_store_opens_queues_what_was_not_scored_and_keeps_its_rows(store_location):
    stamps = _old_store(store_location)
    scored = sorted(stamps, key=stamps.get)[1]
    with Store(store_location) as store:
        assert store.counts() == {"traces": 3, "spans": 9, "log_records": 3}
        loaded = store.load(sorted(stamps))
        assert all(len(t.spans) == 3 and len(t.logs) == 1 for t in loaded)
        claims = shared.claim(store.db, "w", 10, shared.Settling(0.0))
        assert {c.trace_id for c in claims} == set(stamps) - {scored}
        assert [f.label for f in feedback.feedback_for(store.db, [scored])[scored]] == ["up"]
        new = trace_request(agent_turn)  # new rows get new ids, today's partition
        new_id = new.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
        store.write([new], [feedback_request(new_id, "thumbs", label="down")])
        assert store.counts()["traces"] == 4 and shared.pending(store.db) == 3
        assert [f.label for f in feedback.feedback_for(store.db, [new_id])[new_id]] == ["down"]
        if store.db.postgres:
            days = partitions.partitions(store.db, partitions.PARTITIONED)
            today = partitions.day_of(time.time())
            assert {d for t, d in days if t == "span_chunks"} >= {today - 2, today - 1, today}
            (kind,) = store.db.execute(
                "SELECT relkind FROM pg_class WHERE relname = 'span_chunks'"
            ).fetchone()
            assert kind == "p"  # partitioned
        else:
            indexes = {r[0] for r in store.db.execute("SELECT name FROM sqlite_master")}
            assert {"span_chunks_by_received", "log_records_by_received"} <= indexes


def test_results_stored_before_evaluator_identity_are_kept_as_an_unknown_evaluator_s(
    store_location,
):
    """Migration 017 rebuilds ``follow_results`` with the evaluator in its key: a result of
    the earlier shape is kept (evaluator ``''``), is its trace's current result, counts in
    its window, and a new evaluator's result for the same version can be stored beside it."""
    from tracegrade.store.results import current_results, window_results

    db = Database(store_location)
    migrate(db, store_location, [s for s in MIGRATIONS if s[0] < "017"])
    scored_at = time.time() - 60
    with db:
        db.execute(
            "INSERT INTO follow_results VALUES (?, 1, ?, 'w', 'shop', 0, 0.5, 1, 2, 1, 900.0,"
            " 0.01, '{}')",
            ("ab" * 16, scored_at),
        )
    db.close()
    with Store(store_location) as store:
        [row] = window_results(store.db, scored_at - 1, scored_at + 1)
        assert (row.trace_id, row.evaluator, row.passed, row.tool_calls) == (
            "ab" * 16,
            "",
            False,
            2,
        )
        assert current_results(store.db, ["ab" * 16])["ab" * 16].score == 0.5
        new = shared.ResultRow("shop", True, 1.0, False, 2, 0, 800.0, 0.01, {}, evaluator="ev-x")
        with store.db:
            shared.store_results(store.db, "w2", [("ab" * 16, 1, new)], live=True)
        assert shared.result_counts(store.db) == {"ab" * 16: 2}
        assert current_results(store.db, ["ab" * 16])["ab" * 16].evaluator == "ev-x"
