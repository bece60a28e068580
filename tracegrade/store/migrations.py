"""The store's schema: an append-only list of named migrations, recorded in
``schema_migrations`` (the model of simonw/llm). Each migration is written once in the SQL both
engines share (see :mod:`tracegrade.store.database` for the few translations); a store holding a
migration this version does not know was written by a newer tracegrade and is refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence

from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.errors import StoreError
from tracegrade.store import partitions
from tracegrade.store.database import Database, query_batches
from tracegrade.store.rows import CHUNK_COLUMNS, digest
from tracegrade.store.runs import case_trace_ids


def _m001_raw_telemetry(db: Database) -> None:
    db.script(
        """
        CREATE TABLE resources (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, resource BLOB NOT NULL,
            schema_url TEXT
        );
        CREATE TABLE scopes (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, scope BLOB NOT NULL,
            schema_url TEXT
        );
        CREATE TABLE spans (
            trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT, name TEXT NOT NULL,
            start_unix_nano INTEGER NOT NULL, end_unix_nano INTEGER NOT NULL,
            resource_id INTEGER NOT NULL REFERENCES resources(id),
            scope_id INTEGER NOT NULL REFERENCES scopes(id),
            span BLOB NOT NULL, received_at REAL NOT NULL,
            PRIMARY KEY (trace_id, span_id)
        );
        CREATE INDEX spans_by_start ON spans(start_unix_nano);
        CREATE TABLE log_records (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, trace_id TEXT, span_id TEXT,
            time_unix_nano INTEGER NOT NULL,
            resource_id INTEGER NOT NULL REFERENCES resources(id),
            scope_id INTEGER NOT NULL REFERENCES scopes(id),
            record BLOB NOT NULL, received_at REAL NOT NULL
        );
        CREATE INDEX log_records_by_trace ON log_records(trace_id);
        CREATE TABLE traces (
            trace_id TEXT PRIMARY KEY, start_unix_nano INTEGER NOT NULL,
            first_received_at REAL NOT NULL, last_received_at REAL NOT NULL
        );
        CREATE INDEX traces_by_start ON traces(start_unix_nano);
        """
    )


def _m002_runs(db: Database) -> None:
    db.script(
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, created_at REAL NOT NULL, dataset_name TEXT,
            dataset_digest TEXT, passed INTEGER NOT NULL, score REAL, run TEXT NOT NULL
        );
        CREATE INDEX runs_by_time ON runs(created_at);
        CREATE TABLE case_results (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            position INTEGER NOT NULL, case_id TEXT, trace_id TEXT, passed INTEGER NOT NULL,
            score REAL, result TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        );
        CREATE INDEX case_results_by_case ON case_results(case_id);
        """
    )


def _m004_trace_settling(db: Database) -> None:
    db.script(
        """
        ALTER TABLE traces ADD COLUMN run_id TEXT;
        ALTER TABLE traces ADD COLUMN case_id TEXT;
        ALTER TABLE traces ADD COLUMN ended INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE traces ADD COLUMN span_count INTEGER NOT NULL DEFAULT 0;
        CREATE INDEX traces_by_run ON traces(run_id, case_id);
        CREATE INDEX traces_by_received ON traces(last_received_at)
        """
    )


def _m003_judge_cache(db: Database) -> None:
    db.script(
        """
        CREATE TABLE judge_cache (
            key TEXT PRIMARY KEY, model TEXT NOT NULL, rubric TEXT NOT NULL, verdict TEXT NOT NULL,
            input_tokens INTEGER, output_tokens INTEGER, created_at REAL NOT NULL
        )
        """
    )


def _m005_drop_spans_by_start(db: Database) -> None:
    # Spans are read by trace id (the primary key); this index only slowed ingestion (~1/3).
    db.script("DROP INDEX IF EXISTS spans_by_start")


def _m006_span_chunks(db: Database) -> None:
    # Spans move from one row each to one row per trace per scope of a request (a
    # serialised ScopeSpans, see rows.py): ingestion does one insert per chunk, not per span.
    db.script(
        """
        CREATE TABLE span_chunks (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, trace_id TEXT NOT NULL,
            start_unix_nano INTEGER NOT NULL, span_count INTEGER NOT NULL, spans BLOB NOT NULL,
            resource_id INTEGER NOT NULL REFERENCES resources(id),
            scope_id INTEGER NOT NULL REFERENCES scopes(id),
            received_at REAL NOT NULL
        );
        CREATE INDEX span_chunks_by_trace ON span_chunks(trace_id)
        """
    )
    rows = db.execute(
        "SELECT trace_id, start_unix_nano, span, resource_id, scope_id, received_at FROM spans"
    )
    moved = []
    for trace_id, start, span, resource_id, scope_id, received_at in rows.fetchall():
        chunk = trace_pb2.ScopeSpans(spans=[trace_pb2.Span.FromString(span)]).SerializeToString()
        moved.append(
            (
                trace_id,
                start,
                1,
                chunk,
                digest(digest(chunk) + f":{resource_id}:{scope_id}".encode()),
                resource_id,
                scope_id,
                received_at,
            )
        )
    db.insert_many(
        f"INSERT INTO span_chunks ({CHUNK_COLUMNS})", moved, "ON CONFLICT (digest) DO NOTHING"
    )
    db.script("DROP TABLE spans")


def _m010_datasets_and_listings(db: Database) -> None:
    # The web dashboard: datasets edited in the store, and keyset pagination of runs (by
    # dataset) and traces on an index that covers the whole sort key.
    db.script(
        """
        CREATE TABLE datasets (name TEXT PRIMARY KEY, text TEXT NOT NULL, updated_at REAL NOT NULL);
        CREATE INDEX runs_by_dataset_time ON runs(dataset_name, created_at, run_id);
        CREATE INDEX runs_by_time_id ON runs(created_at, run_id);
        CREATE INDEX traces_by_start_id ON traces(start_unix_nano, trace_id)
        """
    )


def _m011_lz4_values(db: Database) -> None:
    # PostgreSQL compresses a large value (TOAST: a chunk of spans is ~40 KB) with pglz by
    # default; lz4 (PostgreSQL 14+, when built with it) compresses these as small and costs the
    # server less CPU: the receiver stored ~15% more spans/s in back-to-back runs (README,
    # Performance). Rows already stored keep pglz; both read the same. SQLite: nothing to do.
    if not db.postgres:
        return
    row = db.execute(
        "SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'"
    ).fetchone()
    if row and row[0]:
        db.execute("ALTER TABLE span_chunks ALTER COLUMN spans SET COMPRESSION lz4")
        db.execute("ALTER TABLE log_records ALTER COLUMN record SET COMPRESSION lz4")


def _m007_follow(db: Database) -> None:
    """Migration 007: the claims, results and windows tables."""
    db.script(
        """
        CREATE TABLE score_claims (
            trace_id TEXT PRIMARY KEY, version REAL NOT NULL, state TEXT NOT NULL,
            claimed_by TEXT, lease_until REAL NOT NULL DEFAULT 0, done_version REAL
        );
        CREATE INDEX score_claims_by_state ON score_claims(state, lease_until);
        CREATE TABLE follow_results (
            trace_id TEXT NOT NULL, version REAL NOT NULL, scored_at REAL NOT NULL,
            worker TEXT NOT NULL, service TEXT, passed INTEGER NOT NULL, score REAL,
            hallucinated INTEGER NOT NULL, tool_calls INTEGER NOT NULL,
            failed_tool_calls INTEGER NOT NULL, duration_ms REAL, cost_usd REAL,
            result TEXT NOT NULL,
            PRIMARY KEY (trace_id, version)
        );
        CREATE INDEX follow_results_by_time ON follow_results(scored_at);
        CREATE TABLE score_windows (
            start_s REAL NOT NULL, window_s REAL NOT NULL, service TEXT NOT NULL,
            aggregates TEXT NOT NULL, alerted INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (start_s, window_s, service)
        )
        """
    )


def _m009_run_baselines(db: Database) -> None:
    """Migration ``009_run_baselines``: one baseline run per dataset name."""
    db.script(
        """
        CREATE TABLE run_baselines (
            dataset_name TEXT PRIMARY KEY,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, set_at REAL NOT NULL
        )
        """
    )


def _m012_review(db: Database) -> None:
    """Migration ``012_review``: end-user feedback joined by trace id (whichever arrives
    first), review queues and their claims, human labels with who and when, UI accounts."""
    db.script(
        """
        CREATE TABLE feedback (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, trace_id TEXT, span_id TEXT,
            response_id TEXT, name TEXT NOT NULL, score REAL, label TEXT, explanation TEXT,
            source TEXT NOT NULL, time_unix_nano INTEGER NOT NULL, received_at REAL NOT NULL
        );
        CREATE INDEX feedback_by_trace ON feedback(trace_id);
        CREATE INDEX feedback_by_received ON feedback(received_at);
        CREATE TABLE review_queues (
            name TEXT PRIMARY KEY, rule TEXT NOT NULL, created_at REAL NOT NULL,
            created_by TEXT
        );
        CREATE TABLE review_items (
            queue TEXT NOT NULL REFERENCES review_queues(name) ON DELETE CASCADE,
            conversation TEXT NOT NULL, trace_ids TEXT NOT NULL, position INTEGER NOT NULL,
            state TEXT NOT NULL, claimed_by TEXT, lease_until REAL NOT NULL DEFAULT 0,
            done_by TEXT, reason TEXT,
            PRIMARY KEY (queue, conversation)
        );
        CREATE INDEX review_items_by_state ON review_items(queue, state, position);
        CREATE TABLE review_skips (
            queue TEXT NOT NULL, conversation TEXT NOT NULL, reviewer TEXT NOT NULL,
            PRIMARY KEY (queue, conversation, reviewer)
        );
        CREATE TABLE labels (
            id INTEGER PRIMARY KEY, conversation TEXT NOT NULL, trace_ids TEXT NOT NULL,
            reviewer TEXT NOT NULL, created_at REAL NOT NULL, verdict TEXT NOT NULL,
            axes TEXT NOT NULL, note TEXT, expectation TEXT, queue TEXT, source TEXT NOT NULL,
            digest BLOB NOT NULL UNIQUE
        );
        CREATE INDEX labels_by_conversation ON labels(conversation, created_at);
        CREATE INDEX labels_by_time ON labels(created_at);
        CREATE TABLE ui_users (
            name TEXT PRIMARY KEY, password_hash TEXT NOT NULL, created_at REAL NOT NULL
        )
        """
    )


def _m013_trace_search(db: Database) -> None:
    # The dashboard's trace search (store/search.py): one row per normalised trace (service,
    # conversation id, a preview, searchable text), the tools each trace called, and the
    # traces each stored case result scored (a verdict filter without reading run documents).
    db.script(
        """
        CREATE TABLE trace_index (
            trace_id TEXT PRIMARY KEY, span_count INTEGER NOT NULL,
            start_unix_nano INTEGER NOT NULL, service TEXT, conversation_id TEXT,
            user_input TEXT, tool_calls INTEGER NOT NULL, failed_tool_calls INTEGER NOT NULL,
            text TEXT NOT NULL, indexed_at REAL NOT NULL
        );
        CREATE INDEX trace_index_by_service ON trace_index(service, start_unix_nano);
        CREATE INDEX trace_index_by_conversation ON trace_index(conversation_id);
        CREATE TABLE trace_tools (
            trace_id TEXT NOT NULL, tool_name TEXT NOT NULL, start_unix_nano INTEGER NOT NULL,
            calls INTEGER NOT NULL, failed INTEGER NOT NULL, argument_keys TEXT NOT NULL,
            PRIMARY KEY (trace_id, tool_name)
        );
        CREATE INDEX trace_tools_by_tool ON trace_tools(tool_name, start_unix_nano);
        CREATE TABLE result_traces (
            trace_id TEXT NOT NULL,
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE,
            position INTEGER NOT NULL, passed INTEGER NOT NULL,
            PRIMARY KEY (trace_id, run_id, position)
        );
        CREATE INDEX result_traces_by_run ON result_traces(run_id);
        CREATE TABLE trace_index_state (name TEXT PRIMARY KEY, value REAL NOT NULL)
        """
    )
    _backfill_result_traces(db)
    _trigram_index(db)


def _backfill_result_traces(db: Database) -> None:
    sql = "SELECT run_id, position, passed, result FROM case_results ORDER BY run_id, position"
    for rows in query_batches(db, sql, (), 1000, "tracegrade_m013"):
        out = [
            (trace_id, run_id, position, passed)
            for run_id, position, passed, result in rows
            for trace_id in case_trace_ids(json.loads(result))
        ]
        if out:
            db.insert_many(
                "INSERT INTO result_traces (trace_id, run_id, position, passed)",
                out,
                "ON CONFLICT DO NOTHING",
            )


def _trigram_index(db: Database) -> None:
    # PostgreSQL: a trigram index (pg_trgm, a trusted contrib extension since PostgreSQL 13)
    # serves the text search's LIKE '%...%'; without the extension the search scans. SQLite
    # scans (store/search.py says what that costs).
    if not db.postgres:
        return
    row = db.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'pg_trgm'),"
        " has_database_privilege(current_database(), 'CREATE')"
    ).fetchone()
    if row and row[0] and row[1]:
        db.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        db.execute("CREATE INDEX trace_index_text ON trace_index USING gin (text gin_trgm_ops)")


def _m014_score_queue(db: Database) -> None:
    """Migration ``014_score_queue``: the outbox. The receiver records each trace's new
    version in the transaction that stores its spans (``traces.version`` counts the writes
    that brought it new spans); ``score --follow`` workers claim from it, with no time
    watermark (:mod:`tracegrade.store.follow`). Every stored trace whose current state no
    worker completed is queued; ``score_claims`` (offers behind a watermark) is dropped."""
    db.script(
        """
        ALTER TABLE traces ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
        CREATE TABLE score_queue (
            trace_id TEXT PRIMARY KEY, version INTEGER NOT NULL, ended INTEGER NOT NULL,
            changed_at REAL NOT NULL, claimed_by TEXT, lease_until REAL NOT NULL DEFAULT 0
        );
        CREATE INDEX score_queue_by_change ON score_queue(changed_at)
        """
    )
    db.execute(
        "INSERT INTO score_queue (trace_id, version, ended, changed_at)"
        " SELECT t.trace_id, 1, t.ended, t.last_received_at FROM traces t"
        " LEFT JOIN score_claims c ON c.trace_id = t.trace_id"
        " WHERE c.done_version IS NULL OR c.done_version < t.last_received_at"
    )
    db.script("DROP TABLE score_claims")


def _m015_retention(db: Database) -> None:
    """Migration ``015_retention``: settings kept in the store (the receiver's retention);
    on PostgreSQL, span and log storage partitioned by day (:mod:`.partitions`: a day past
    the retention is dropped whole); on SQLite, indexes by arrival time, so ``prune`` deletes
    old rows in batches without scanning the table."""
    db.script("CREATE TABLE store_settings (name TEXT PRIMARY KEY, value TEXT NOT NULL)")
    if db.postgres:
        partitions.convert(db)
        return
    db.script(
        """
        CREATE INDEX span_chunks_by_received ON span_chunks(received_at);
        CREATE INDEX log_records_by_received ON log_records(received_at)
        """
    )


def _m016_source_pulls(db: Database) -> None:
    """Migration ``016_source_pulls``: where the last pull from each trace backend ended
    (:mod:`.pulls`; ``tracegrade import --from`` resumes there)."""
    db.script(
        "CREATE TABLE source_pulls (source TEXT PRIMARY KEY, until_unix_nano BIGINT NOT NULL,"
        " traces BIGINT NOT NULL, pulled_at REAL NOT NULL)"
    )


_FOLLOW_RESULTS = """
    CREATE TABLE {name} (
        trace_id TEXT NOT NULL, version INTEGER NOT NULL, evaluator TEXT NOT NULL,
        scored_at REAL NOT NULL, worker TEXT NOT NULL, live INTEGER NOT NULL DEFAULT 1,
        excluded INTEGER NOT NULL DEFAULT 0, service TEXT, passed INTEGER NOT NULL, score REAL,
        hallucinated INTEGER NOT NULL, tool_calls INTEGER NOT NULL,
        failed_tool_calls INTEGER NOT NULL, duration_ms REAL, cost_usd REAL,
        judge_cost_usd REAL, judge_skipped INTEGER NOT NULL DEFAULT 0, result TEXT NOT NULL,
        PRIMARY KEY (trace_id, version, evaluator)
    )
"""
_OLD_RESULT_COLUMNS = (
    "trace_id, version, scored_at, worker, service, passed, score, hallucinated, tool_calls,"
    " failed_tool_calls, duration_ms, cost_usd, result"
)


def _m017_result_identity(db: Database) -> None:
    """Migration ``017_result_identity``: each result records the evaluator that produced
    it (``evaluators`` holds each evaluator's identity: scorers and their versions, dataset
    and config fingerprints, tracegrade's version), whether a live follower (``live``) or a
    backfill stored it, the judge's cost and budget skips, and ``excluded`` rows (a trace
    found to be an eval run's after it was scored). A trace may now hold a result per
    evaluator for each version: ``follow_results`` is rebuilt with the evaluator in its key;
    results stored before have the evaluator ``''`` (unknown). ``judge_spend`` records what
    online judging spent (the judge budget)."""
    db.script(
        """
        CREATE TABLE evaluators (
            evaluator_id TEXT PRIMARY KEY, identity TEXT NOT NULL, first_seen REAL NOT NULL
        );
        CREATE TABLE judge_spend (
            id INTEGER PRIMARY KEY, spent_at REAL NOT NULL, usd REAL NOT NULL, service TEXT,
            worker TEXT NOT NULL
        );
        CREATE INDEX judge_spend_by_time ON judge_spend(spent_at)
        """
    )
    db.script(_FOLLOW_RESULTS.format(name="follow_results_017"))
    db.execute(
        f"INSERT INTO follow_results_017 ({_OLD_RESULT_COLUMNS}, evaluator)"
        f" SELECT {_OLD_RESULT_COLUMNS.replace('version', 'CAST(version AS INTEGER)', 1)}, ''"
        " FROM follow_results"
    )
    db.script(
        """
        DROP TABLE follow_results;
        ALTER TABLE follow_results_017 RENAME TO follow_results;
        CREATE INDEX follow_results_by_time ON follow_results(scored_at)
        """
    )


def _m018_backfill(db: Database) -> None:
    """Migration ``018_backfill``: each evaluator's ledger of the stored traces a
    ``tracegrade backfill`` claimed or went through (:mod:`.backfill`)."""
    db.script(
        """
        CREATE TABLE backfill_claims (
            evaluator TEXT NOT NULL, trace_id TEXT NOT NULL, version INTEGER NOT NULL,
            claimed_by TEXT, lease_until REAL NOT NULL DEFAULT 0, done INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (evaluator, trace_id)
        )
        """
    )


def _m019_sessions(db: Database) -> None:
    """Migration ``019_sessions``: conversations scored whole by ``score --follow --sessions``
    (:mod:`.sessions`): their turns, versions and claims, the turns each one holds (history
    continuity), their results."""
    db.script(
        """
        CREATE TABLE sessions (
            session_key TEXT PRIMARY KEY, version INTEGER NOT NULL, changed_at REAL NOT NULL,
            scored_version INTEGER NOT NULL DEFAULT 0, claimed_by TEXT,
            lease_until REAL NOT NULL DEFAULT 0, service TEXT
        );
        CREATE INDEX sessions_by_change ON sessions(changed_at);
        CREATE TABLE session_traces (
            session_key TEXT NOT NULL, trace_id TEXT NOT NULL, start_unix_nano INTEGER NOT NULL,
            PRIMARY KEY (session_key, trace_id)
        );
        CREATE INDEX session_traces_by_trace ON session_traces(trace_id);
        CREATE TABLE session_turns (turns_digest TEXT PRIMARY KEY, session_key TEXT NOT NULL);
        CREATE TABLE session_results (
            session_key TEXT NOT NULL, version INTEGER NOT NULL, evaluator TEXT NOT NULL,
            scored_at REAL NOT NULL, worker TEXT NOT NULL, passed INTEGER NOT NULL, score REAL,
            turns INTEGER NOT NULL, trace_ids TEXT NOT NULL, result TEXT NOT NULL,
            PRIMARY KEY (session_key, version, evaluator)
        );
        CREATE INDEX session_results_by_time ON session_results(scored_at)
        """
    )


def _m020_run_gates(db: Database) -> None:
    """Migration ``020_run_gates``: the regression gate of a stored run scored with
    ``--baseline`` (:func:`tracegrade.store.runs.save_gate`): the run it was compared with,
    whether that run was its dataset's baseline, the verdict and the cases that regressed."""
    db.script(
        """
        CREATE TABLE run_gates (
            run_id TEXT PRIMARY KEY REFERENCES runs(run_id) ON DELETE CASCADE,
            base_run_id TEXT NOT NULL, base_is_baseline INTEGER NOT NULL,
            regression INTEGER NOT NULL, regressed INTEGER NOT NULL, reasons TEXT NOT NULL,
            gated_at REAL NOT NULL
        )
        """
    )


MIGRATIONS: list[tuple[str, Callable[[Database], None]]] = [
    ("001_raw_telemetry", _m001_raw_telemetry),
    ("002_runs", _m002_runs),
    ("004_trace_settling", _m004_trace_settling),
    ("003_judge_cache", _m003_judge_cache),
    ("005_drop_spans_by_start", _m005_drop_spans_by_start),
    ("006_span_chunks", _m006_span_chunks),
    ("007_follow_claims", _m007_follow),
    ("009_run_baselines", _m009_run_baselines),
    ("010_datasets_and_listings", _m010_datasets_and_listings),
    ("011_lz4_values", _m011_lz4_values),
    ("012_review", _m012_review),
    ("013_trace_search", _m013_trace_search),
    ("014_score_queue", _m014_score_queue),
    ("015_retention", _m015_retention),
    ("016_source_pulls", _m016_source_pulls),
    ("017_result_identity", _m017_result_identity),
    ("018_backfill", _m018_backfill),
    ("019_sessions", _m019_sessions),
    ("020_run_gates", _m020_run_gates),
]
"""Append-only: never edit or reorder an entry that has shipped; add a new one."""


def migrate(
    db: Database, location: object, steps: Sequence[tuple[str, Callable[[Database], None]]]
) -> None:
    """Apply the ``steps`` not yet recorded in ``schema_migrations``, in one transaction,
    serialised across processes (an advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on
    SQLite). ``location`` names the store in errors.

    Raises:
        StoreError: the store holds a migration this version does not know (a newer
            tracegrade wrote it).
    """
    if not db.postgres:
        db.execute("BEGIN IMMEDIATE")
    with db:
        if db.postgres:
            db.execute("SELECT pg_advisory_xact_lock(7244)")
        db.script(
            "CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)"
        )
        applied = {row[0] for row in db.execute("SELECT name FROM schema_migrations")}
        unknown = sorted(applied - {name for name, _ in steps})
        if unknown:
            raise StoreError(
                f"{location} was written by a newer tracegrade (migrations "
                f"{', '.join(unknown)}); upgrade tracegrade"
            )
        for name, migrate in steps:
            if name not in applied:
                migrate(db)
                db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))
