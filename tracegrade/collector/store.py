"""The trace store: raw spans and log records, kept losslessly in a SQLite file.

Each span and log record is stored as its serialized protobuf message (``Span``,
``LogRecord``) next to its resource and instrumentation scope (deduplicated, also as
protobuf), so any normaliser can be re-run on exactly what was received. Indexed columns
(trace id, span id, times) serve lookups. Re-importing the same span (same trace and span id)
or the same log record (same bytes) adds nothing.

Location: ``--db``, else ``TRACEGRADE_DB``, else ``.tracegrade/tracegrade.db`` under the
working directory. The schema is versioned by an append-only list of named migrations
recorded in ``schema_migrations`` (the model of simonw/llm); a database that holds a
migration this version does not know was written by a newer tracegrade and is refused.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade.collector.otlp import (
    ExportLogsServiceRequest,
    ExportTraceServiceRequest,
    decode_attributes,
    log_from_proto,
    span_from_proto,
)
from tracegrade.errors import StoreError
from tracegrade.spans import TraceData

DB_ENV = "TRACEGRADE_DB"
"""Environment variable naming the store file (overridden by ``--db``)."""
DEFAULT_DB = Path(".tracegrade") / "tracegrade.db"


def default_path(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The store path: ``explicit``, else ``$TRACEGRADE_DB``, else ``.tracegrade/tracegrade.db``."""
    return Path(explicit or os.environ.get(DB_ENV) or DEFAULT_DB)


def _m001_raw_telemetry(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE resources (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, resource BLOB NOT NULL, schema_url TEXT
        );
        CREATE TABLE scopes (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, scope BLOB NOT NULL, schema_url TEXT
        );
        CREATE TABLE spans (
            trace_id TEXT NOT NULL, span_id TEXT NOT NULL, parent_span_id TEXT, name TEXT NOT NULL,
            start_unix_nano INTEGER NOT NULL, end_unix_nano INTEGER NOT NULL,
            resource_id INTEGER NOT NULL REFERENCES resources(id), scope_id INTEGER NOT NULL REFERENCES scopes(id),
            span BLOB NOT NULL, received_at REAL NOT NULL,
            PRIMARY KEY (trace_id, span_id)
        );
        CREATE INDEX spans_by_start ON spans(start_unix_nano);
        CREATE TABLE log_records (
            id INTEGER PRIMARY KEY, digest BLOB NOT NULL UNIQUE, trace_id TEXT, span_id TEXT,
            time_unix_nano INTEGER NOT NULL,
            resource_id INTEGER NOT NULL REFERENCES resources(id), scope_id INTEGER NOT NULL REFERENCES scopes(id),
            record BLOB NOT NULL, received_at REAL NOT NULL
        );
        CREATE INDEX log_records_by_trace ON log_records(trace_id);
        CREATE TABLE traces (
            trace_id TEXT PRIMARY KEY, start_unix_nano INTEGER NOT NULL, first_received_at REAL NOT NULL,
            last_received_at REAL NOT NULL
        );
        CREATE INDEX traces_by_start ON traces(start_unix_nano);
        """
    )


def _m002_runs(db: sqlite3.Connection) -> None:
    db.executescript(
        """
        CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, created_at REAL NOT NULL, dataset_name TEXT, dataset_digest TEXT,
            passed INTEGER NOT NULL, score REAL, run TEXT NOT NULL
        );
        CREATE INDEX runs_by_time ON runs(created_at);
        CREATE TABLE case_results (
            run_id TEXT NOT NULL REFERENCES runs(run_id) ON DELETE CASCADE, position INTEGER NOT NULL,
            case_id TEXT, trace_id TEXT, passed INTEGER NOT NULL, score REAL, result TEXT NOT NULL,
            PRIMARY KEY (run_id, position)
        );
        CREATE INDEX case_results_by_case ON case_results(case_id);
        """
    )


MIGRATIONS: list[tuple[str, Callable[[sqlite3.Connection], None]]] = [
    ("001_raw_telemetry", _m001_raw_telemetry),
    ("002_runs", _m002_runs),
]
"""Append-only: never edit or reorder an entry that has shipped; add a new one."""


def _digest(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()[:16]


class Store:
    """A SQLite trace store (see the module docstring). Use as a context manager.

    Raises:
        StoreError: the file cannot be opened, or was written by a newer tracegrade.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = default_path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.db = sqlite3.connect(self.path)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open trace store {self.path}: {exc}") from exc
        self._resource_ids: dict[bytes, int] = {}
        self._scope_ids: dict[bytes, int] = {}

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    # --- schema ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        self.db.execute("CREATE TABLE IF NOT EXISTS schema_migrations (name TEXT PRIMARY KEY, applied_at REAL)")
        applied = {row[0] for row in self.db.execute("SELECT name FROM schema_migrations")}
        known = {name for name, _ in MIGRATIONS}
        unknown = sorted(applied - known)
        if unknown:
            raise StoreError(
                f"{self.path} was written by a newer tracegrade (migrations {', '.join(unknown)}); upgrade tracegrade"
            )
        for name, migrate in MIGRATIONS:
            if name not in applied:
                with self.db:
                    migrate(self.db)
                    self.db.execute("INSERT INTO schema_migrations VALUES (?, ?)", (name, time.time()))

    @property
    def schema_version(self) -> str:
        """The name of the last migration applied."""
        return MIGRATIONS[-1][0]

    # --- writing ------------------------------------------------------------------------------

    def _ref(self, table: str, cache: dict[bytes, int], message: Any, schema_url: str) -> int:
        payload = message.SerializeToString(deterministic=True)
        digest = _digest(payload + schema_url.encode())
        if digest not in cache:
            column = "resource" if table == "resources" else "scope"
            self.db.execute(
                f"INSERT OR IGNORE INTO {table} (digest, {column}, schema_url) VALUES (?, ?, ?)",
                (digest, payload, schema_url),
            )
            (cache[digest],) = self.db.execute(f"SELECT id FROM {table} WHERE digest = ?", (digest,)).fetchone()
        return cache[digest]

    def _scoped(self, groups: Any, scopes_field: str, items_field: str) -> Iterator[tuple[int, int, Any]]:
        """(resource id, scope id, item) for every span or log record of a request."""
        for group in groups:
            resource_id = self._ref("resources", self._resource_ids, group.resource, group.schema_url)
            for scoped in getattr(group, scopes_field):
                scope_id = self._ref("scopes", self._scope_ids, scoped.scope, scoped.schema_url)
                for item in getattr(scoped, items_field):
                    yield resource_id, scope_id, item

    def add_traces(self, request: ExportTraceServiceRequest) -> int:
        """Store every span of an OTLP trace request in one transaction; returns spans added."""
        now = time.time()
        with self.db:
            return sum(self._add_span(span, rid, sid, now)
                       for rid, sid, span in self._scoped(request.resource_spans, "scope_spans", "spans"))

    def _add_span(self, span: trace_pb2.Span, resource_id: int, scope_id: int, now: float) -> int:
        trace_id = span.trace_id.hex()
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO spans VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (trace_id, span.span_id.hex(), span.parent_span_id.hex() or None, span.name,
             span.start_time_unix_nano, span.end_time_unix_nano, resource_id, scope_id,
             span.SerializeToString(), now),
        )
        self.db.execute(
            "INSERT INTO traces VALUES (?, ?, ?, ?) ON CONFLICT(trace_id) DO UPDATE SET "
            "start_unix_nano = MIN(start_unix_nano, excluded.start_unix_nano), last_received_at = excluded.last_received_at",
            (trace_id, span.start_time_unix_nano, now, now),
        )
        return cursor.rowcount

    def add_logs(self, request: ExportLogsServiceRequest) -> int:
        """Store every log record of an OTLP logs request; returns records added."""
        now = time.time()
        with self.db:
            return sum(self._add_log(record, rid, sid, now)
                       for rid, sid, record in self._scoped(request.resource_logs, "scope_logs", "log_records"))

    def _add_log(self, record: logs_pb2.LogRecord, resource_id: int, scope_id: int, now: float) -> int:
        payload = record.SerializeToString(deterministic=True)
        cursor = self.db.execute(
            "INSERT OR IGNORE INTO log_records (digest, trace_id, span_id, time_unix_nano, resource_id, scope_id,"
            " record, received_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (_digest(payload + f":{resource_id}:{scope_id}".encode()), record.trace_id.hex() or None,
             record.span_id.hex() or None, record.time_unix_nano or record.observed_time_unix_nano,
             resource_id, scope_id, payload, now),
        )
        return cursor.rowcount

    # --- reading ------------------------------------------------------------------------------

    def trace_ids(
        self, *, since_unix_nano: int | None = None, limit: int | None = None, trace_ids: Sequence[str] = ()
    ) -> list[str]:
        """Stored trace ids, newest first by start time; filtered by start and/or an id list."""
        sql, args = "SELECT trace_id FROM traces WHERE 1=1", []
        if since_unix_nano is not None:
            sql += " AND start_unix_nano >= ?"
            args.append(since_unix_nano)
        if trace_ids:
            sql += f" AND trace_id IN ({','.join('?' * len(trace_ids))})"
            args.extend(trace_ids)
        sql += " ORDER BY start_unix_nano DESC, trace_id"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(limit)
        return [row[0] for row in self.db.execute(sql, args)]

    def counts(self) -> dict[str, int]:
        """Numbers of traces, spans and log records stored."""
        return {
            table: self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("traces", "spans", "log_records")
        }

    def _resources(self) -> dict[int, dict[str, Any]]:
        out = {}
        for rid, payload in self.db.execute("SELECT id, resource FROM resources"):
            out[rid] = decode_attributes(Resource.FromString(payload).attributes)
        return out

    def _scopes(self) -> dict[int, InstrumentationScope]:
        return {sid: InstrumentationScope.FromString(p) for sid, p in self.db.execute("SELECT id, scope FROM scopes")}

    def requests(self, trace_ids: Sequence[str]) -> tuple[ExportTraceServiceRequest, ExportLogsServiceRequest]:
        """The stored spans and log records of these traces as OTLP requests (one resource and
        scope entry each, as received), e.g. to write a Collector file."""
        resources = dict(self.db.execute("SELECT id, resource FROM resources"))
        scopes = dict(self.db.execute("SELECT id, scope FROM scopes"))
        spans: list[tuple[int, int, bytes]] = []
        logs: list[tuple[int, int, bytes]] = []
        for chunk in _chunks(list(trace_ids), 500):
            marks = ",".join("?" * len(chunk))
            spans += self.db.execute(f"SELECT resource_id, scope_id, span FROM spans WHERE trace_id IN ({marks})"
                                     " ORDER BY start_unix_nano", chunk).fetchall()
            logs += self.db.execute(f"SELECT resource_id, scope_id, record FROM log_records WHERE trace_id IN ({marks})"
                                    " ORDER BY time_unix_nano, id", chunk).fetchall()
        return (_group(spans, resources, scopes, ExportTraceServiceRequest(), "resource_spans", "scope_spans",
                       "spans", trace_pb2.Span),
                _group(logs, resources, scopes, ExportLogsServiceRequest(), "resource_logs", "scope_logs",
                       "log_records", logs_pb2.LogRecord))

    def load(self, trace_ids: Iterable[str]) -> list[TraceData]:
        """The stored spans and log records of each trace id, in the order given."""
        ids = list(dict.fromkeys(trace_ids))
        resources, scopes = self._resources(), self._scopes()
        traces = {tid: TraceData(tid) for tid in ids}
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for trace_id, rid, sid, payload in self.db.execute(
                f"SELECT trace_id, resource_id, scope_id, span FROM spans WHERE trace_id IN ({marks})"
                " ORDER BY start_unix_nano", chunk,
            ):
                scope = scopes[sid]
                traces[trace_id].spans.append(
                    span_from_proto(trace_pb2.Span.FromString(payload), resources[rid], scope.name, scope.version)
                )
            for trace_id, rid, sid, payload in self.db.execute(
                f"SELECT trace_id, resource_id, scope_id, record FROM log_records WHERE trace_id IN ({marks})"
                " ORDER BY time_unix_nano, id", chunk,
            ):
                record = logs_pb2.LogRecord.FromString(payload)
                traces[trace_id].logs.append(log_from_proto(record, resources[rid], scopes[sid].name))
        return [traces[tid] for tid in ids]


def _group(rows: Iterable[tuple[int, int, bytes]], resources: dict[int, bytes], scopes: dict[int, bytes],
           request: Any, groups_field: str, scopes_field: str, items_field: str, item_type: Any) -> Any:
    """Rebuild one OTLP request from (resource id, scope id, item bytes) rows."""
    by_resource: dict[int, Any] = {}
    by_scope: dict[tuple[int, int], Any] = {}
    for rid, sid, payload in rows:
        if rid not in by_resource:
            by_resource[rid] = getattr(request, groups_field).add()
            by_resource[rid].resource.ParseFromString(resources[rid])
        if (rid, sid) not in by_scope:
            by_scope[(rid, sid)] = getattr(by_resource[rid], scopes_field).add()
            by_scope[(rid, sid)].scope.ParseFromString(scopes[sid])
        getattr(by_scope[(rid, sid)], items_field).append(item_type.FromString(payload))
    return request


def _chunks(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
