"""The trace store: raw spans and log records, kept losslessly in SQLite or PostgreSQL.

Each span and log record is stored as its serialized protobuf message (``Span``,
``LogRecord``) next to its resource and instrumentation scope (deduplicated, also as
protobuf), so any normaliser can be re-run on exactly what was received. Indexed columns
(trace id, span id, times) serve lookups. Re-importing the same span (same trace and span id)
or the same log record (same bytes) adds nothing.

Location: ``--db``, else ``TRACEGRADE_DB``, else ``.tracegrade/tracegrade.db`` under the
working directory; a ``postgresql://`` URL selects PostgreSQL (:mod:`.database`). The schema
is versioned by an append-only list of named migrations recorded in ``schema_migrations`` (the
model of simonw/llm); a database that holds a migration this version does not know was written
by a newer tracegrade and is refused.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1 import trace_pb2

from tracegrade import environment
from tracegrade.errors import StoreError
from tracegrade.otlp.codec import (
    ExportLogsServiceRequest,
    ExportTraceServiceRequest,
    decode_attributes,
    log_from_proto,
    span_from_proto,
)
from tracegrade.otlp.redaction import Redactor
from tracegrade.spans import TraceData
from tracegrade.store import feedback, migrations, outbox, partitions
from tracegrade.store.database import Database, display, is_postgres
from tracegrade.store.migrations import MIGRATIONS
from tracegrade.store.rows import (
    CHUNK_COLUMNS,
    LOG_COLUMNS,
    PreparedSpans,
    chunk_spans,
    digest,
    log_rows,
    text,
)
from tracegrade.store.span_ids import SpanIds

DB_ENV = environment.TRACEGRADE_DB
"""Environment variable naming the store file (overridden by ``--db``)."""
DEFAULT_DB = Path(".tracegrade") / "tracegrade.db"


def default_path(explicit: str | os.PathLike[str] | None = None) -> Path | str:
    """The store location: ``explicit``, else ``$TRACEGRADE_DB``, else
    ``.tracegrade/tracegrade.db``; a path, or a ``postgresql://`` URL kept as a string."""
    location = explicit or os.environ.get(DB_ENV) or DEFAULT_DB
    return str(location) if is_postgres(location) else Path(location)


DEFAULT_QUIET_S = 2.0
"""Seconds without a new span after which an ended trace counts as settled."""


@dataclass(frozen=True)
class TraceState:
    """Where a stored trace is in its life: ``ended`` once its root or agent span arrived
    (:mod:`tracegrade.store.rows`); times are the receiver's clock, Unix s."""

    COLUMNS = "trace_id, run_id, case_id, ended, span_count, first_received_at, last_received_at"

    trace_id: str
    run_id: str | None
    case_id: str | None
    ended: bool
    span_count: int
    first_received_at: float
    last_received_at: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "ended", bool(self.ended))

    def is_settled(self, now: float, quiet_s: float = DEFAULT_QUIET_S) -> bool:
        """Ended, and no span arrived for ``quiet_s`` seconds before ``now`` (Unix s)."""
        return bool(self.ended) and now - self.last_received_at >= quiet_s


class Store:
    """A trace store on SQLite or PostgreSQL (see the module docstring). Use as a context manager.

    ``path`` is the location as given (a :class:`~pathlib.Path` for SQLite, the URL for
    PostgreSQL); ``location`` is the same with any password masked, for messages.

    Raises:
        StoreError: the database cannot be opened, or was written by a newer tracegrade.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        feedback_attribute: str | None = feedback.DEFAULT_ATTRIBUTE,
        feedback_per_trace: int = feedback.MAX_PER_TRACE,
    ):
        self.path = default_path(path)
        self.feedback_attribute = feedback_attribute
        """The span attribute read as end-user feedback when spans are written
        (:mod:`tracegrade.store.feedback`); None reads none."""
        self.feedback_per_trace = feedback_per_trace
        """Feedback records kept per trace (the first ones; :data:`.feedback.MAX_PER_TRACE`)."""
        self.location = display(self.path)
        self.db = Database(self.path)
        try:
            self._migrate()
        except Exception as exc:
            self.db.close()
            if isinstance(exc, StoreError):
                raise
            raise StoreError(f"cannot open trace store {self.location}: {exc}") from exc
        self._resource_ids: dict[bytes, int] = {}
        self._scope_ids: dict[bytes, int] = {}
        self._span_ids = SpanIds()
        self._days = partitions.Days()
        self._decoded_resources: dict[int, dict[str, Any]] = {}
        self._decoded_scopes: dict[int, InstrumentationScope] = {}
        self.redactor: Redactor | None = Redactor()
        """Applied by :meth:`write` (``tracegrade import``); None stores requests as given."""

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection."""
        self.db.close()

    # --- schema ---------------------------------------------------------------------------

    def _migrate(self) -> None:
        """Apply missing migrations (see :func:`tracegrade.store.migrations.migrate`)."""
        migrations.migrate(self.db, self.location, MIGRATIONS)

    @property
    def schema_version(self) -> str:
        """The name of the last migration applied."""
        return MIGRATIONS[-1][0]

    # --- writing ------------------------------------------------------------------------------

    def _ref(self, table: str, cache: dict[bytes, int], message: Any, schema_url: str) -> int:
        payload = message.SerializeToString(deterministic=True)
        key = digest(payload + schema_url.encode())
        if key not in cache:
            column = "resource" if table == "resources" else "scope"
            self.db.execute(
                f"INSERT INTO {table} (digest, {column}, schema_url) VALUES (?, ?, ?)"
                " ON CONFLICT (digest) DO NOTHING",
                (key, payload, text(schema_url)),
            )
            (cache[key],) = self.db.execute(
                f"SELECT id FROM {table} WHERE digest = ?", (key,)
            ).fetchone()
        return cache[key]

    def _resource_ref(self, resource: Resource, schema_url: str) -> int:
        return self._ref("resources", self._resource_ids, resource, schema_url)

    def _scope_ref(self, scope: InstrumentationScope, schema_url: str) -> int:
        return self._ref("scopes", self._scope_ids, scope, schema_url)

    def _resolve_in_digest_order(
        self, prepared: PreparedSpans, log_requests: Sequence[Any]
    ) -> None:
        """Insert a batch's new resources and scopes sorted by digest, so two receivers
        storing the same new ones in opposite orders cannot deadlock on PostgreSQL."""
        pending: dict[tuple[str, bytes], tuple[Any, str]] = {}
        groups = [
            (r, url, [(s, s_url) for s, s_url, _ in scopes]) for r, url, scopes in prepared.groups
        ]
        groups += [
            (g.resource, g.schema_url, [(s.scope, s.schema_url) for s in g.scope_logs])
            for request in log_requests
            for g in request.resource_logs
        ]
        for resource, url, scopes in groups:
            for table, message, schema_url in [
                ("resources", resource, url),
                *(("scopes", *s) for s in scopes),
            ]:
                key = digest(message.SerializeToString(deterministic=True) + schema_url.encode())
                pending[(table, key)] = (message, schema_url)
        for (table, _), (message, schema_url) in sorted(pending.items()):
            self._ref(
                table,
                self._resource_ids if table == "resources" else self._scope_ids,
                message,
                schema_url,
            )

    def add_traces(self, request: ExportTraceServiceRequest) -> int:
        """Store every span of an OTLP trace request in one transaction; returns spans added."""
        return self.write([request], [])[0]

    def add_logs(self, request: ExportLogsServiceRequest) -> int:
        """Store every log record of an OTLP logs request; returns records added."""
        return self.write([], [request])[1]

    def write(
        self,
        trace_requests: Sequence[ExportTraceServiceRequest],
        log_requests: Sequence[ExportLogsServiceRequest] = (),
    ) -> tuple[int, int]:
        """Store the spans and log records of several OTLP requests in one transaction;
        returns (spans added, log records added). A span already stored (same trace and span
        id) or a log record already stored adds nothing. Secrets are redacted first, in
        place (:attr:`redactor`; the receiver redacts before :meth:`write_prepared`).

        Raises:
            StoreError: the transaction failed; nothing of it was stored.
        """
        requests: list[Any] = [*trace_requests, *log_requests]
        for request in requests:
            if self.redactor is not None and self.redactor.may_apply(request.SerializeToString()):
                self.redactor.request(request)
        prepared = PreparedSpans()
        for request in trace_requests:
            prepared.add_request(request)
        return self.write_prepared(prepared, log_requests)

    def write_prepared(
        self, spans: PreparedSpans, log_requests: Sequence[ExportLogsServiceRequest] = ()
    ) -> tuple[int, int]:
        """:meth:`write` for spans already prepared (:class:`~.rows.PreparedSpans`, as the
        receiver does in its network threads): the receiver's group commit. The traces that
        got new spans are queued for scoring in the same transaction (:mod:`.outbox`).

        Raises:
            StoreError: the transaction failed; nothing of it was stored.
        """
        now = time.time()
        try:
            self._days.ensure(self.db, now)
            with self.db:
                known = self._span_ids.stored_before(self.db, spans)
                written = self._write(spans, log_requests, now, known)
            self._span_ids.remember(spans, known)
            return written
        except Exception as exc:
            self._resource_ids.clear()  # ids inserted by the rolled-back transaction are gone
            self._scope_ids.clear()
            raise StoreError(f"cannot write to trace store {self.location}: {exc}") from exc

    def _write(
        self,
        prepared: PreparedSpans,
        log_requests: Sequence[Any],
        now: float,
        known: dict[str, set[bytes]],
    ) -> tuple[int, int]:
        if self.db.postgres:
            self._resolve_in_digest_order(prepared, log_requests)
        rows = prepared.chunk_rows(self._resource_ref, self._scope_ref, now)
        if self.db.postgres:
            rows.sort(key=lambda row: row[4])  # a fixed lock order for concurrent writers
        inserted = self.db.insert_many(
            f"INSERT INTO span_chunks ({self._chunk_columns})",
            self._with_day(rows, now),
            f"ON CONFLICT ({self._unique}) DO NOTHING RETURNING trace_id, span_count",
            returning=True,
        )
        # Spans new to the store, by span id (span_ids.py): a resend in another grouping makes
        # new chunks of spans already stored.
        counts = SpanIds.new_counts(prepared, {trace_id for trace_id, _ in inserted}, known)
        added = {trace_id: count for trace_id, count in counts.items() if count}
        # Only traces that received new spans change: a resend neither inflates span_count nor
        # makes a settled trace look active again, nor queues it to be scored again.
        trace_rows = [
            row[:7] + (added[row[0]],) for row in prepared.trace_rows(now) if row[0] in added
        ]
        if trace_rows:
            versions = self.db.insert_many(
                self._trace_upsert[0], trace_rows, self._trace_upsert[1], returning=True
            )
            outbox.enqueue(self.db, [(t, int(v), int(e)) for t, v, e in versions])
        logs = log_rows(log_requests, self._resource_ref, self._scope_ref, now)
        found = feedback.from_log_rows(logs)
        found += feedback.from_chunk_rows(rows, self.feedback_attribute)
        feedback.insert(self.db, found, now, self.feedback_per_trace)
        return sum(added.values()), self._write_logs(logs, now)

    def _write_logs(self, logs: list[tuple[Any, ...]], now: float) -> int:
        """Insert the log records' rows; returns how many were new."""
        if not logs:
            return 0
        logged = int(
            self.db.insert_many(
                f"INSERT INTO log_records ({LOG_COLUMNS}{', day' if self.db.postgres else ''})",
                self._with_day(logs, now),
                f"ON CONFLICT ({self._unique}) DO NOTHING",
            )
        )
        outbox.touch(self.db, [row[1] for row in logs if row[1]])
        return logged

    @property
    def _chunk_columns(self) -> str:
        return CHUNK_COLUMNS + (", day" if self.db.postgres else "")

    @property
    def _unique(self) -> str:
        """The conflict target of span chunks and log records: their digest (and their day on
        PostgreSQL, where they are partitioned by day: :mod:`.partitions`)."""
        return "digest, day" if self.db.postgres else "digest"

    def _with_day(self, rows: list[tuple[Any, ...]], now: float) -> list[tuple[Any, ...]]:
        if not self.db.postgres:
            return rows
        day = partitions.day_of(now)
        return [row + (day,) for row in rows]

    @property
    def _trace_upsert(self) -> tuple[str, str]:
        """(head, tail) of the ``traces`` upsert: each write with new spans is a new version;
        returns (trace id, version, ended)."""
        least, greatest = self.db.least, self.db.greatest
        head = (
            "INSERT INTO traces (trace_id, start_unix_nano, first_received_at, last_received_at,"
            " run_id, case_id, ended, span_count)"
        )
        tail = (
            " ON CONFLICT (trace_id) DO UPDATE SET"
            f" start_unix_nano = {least('traces.start_unix_nano', 'excluded.start_unix_nano')},"
            " last_received_at = excluded.last_received_at,"
            " run_id = COALESCE(traces.run_id, excluded.run_id),"
            " case_id = COALESCE(traces.case_id, excluded.case_id),"
            f" ended = {greatest('traces.ended', 'excluded.ended')},"
            " span_count = traces.span_count + excluded.span_count,"
            " version = traces.version + 1"
            " RETURNING trace_id, version, ended"
        )
        return head, tail

    # --- reading ------------------------------------------------------------------------------

    def trace_ids(
        self,
        *,
        since_unix_nano: int | None = None,
        limit: int | None = None,
        trace_ids: Sequence[str] = (),
    ) -> list[str]:
        """Stored trace ids, newest first by start time; filtered by start and/or an id list."""
        sql, args = trace_ids_query(since_unix_nano, limit, trace_ids)
        return [row[0] for row in self.db.execute(sql, args)]

    def counts(self) -> dict[str, int]:
        """Numbers of traces, spans and log records stored (spans counted per chunk: a span
        stored twice in different chunks counts twice here, once when read and in
        ``traces.span_count``)."""
        count = {
            table: self.db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0]
            for table in ("traces", "log_records")
        }
        spans = self.db.execute("SELECT COALESCE(SUM(span_count), 0) FROM span_chunks").fetchone()[
            0
        ]
        return {"traces": count["traces"], "spans": int(spans), "log_records": count["log_records"]}

    def _spans(self, trace_ids: Sequence[str]) -> list[tuple[str, int, int, trace_pb2.Span]]:
        """(trace id, resource id, scope id, span) of the stored spans of these traces, each
        span once (first stored chunk wins), ordered by trace and start time."""
        out, seen = [], set()
        for ids in _chunks(list(trace_ids), 500):
            rows = self.db.execute(
                f"SELECT trace_id, resource_id, scope_id, spans FROM span_chunks WHERE trace_id"
                f" IN ({','.join('?' * len(ids))}) ORDER BY id",
                ids,
                binary=True,
            )
            for trace_id, rid, sid, payload in rows:
                for span in chunk_spans(payload, trace_id):
                    if (key := (trace_id, span.span_id)) not in seen:
                        seen.add(key)
                        out.append((trace_id, rid, sid, span))
        out.sort(key=lambda row: (row[0], row[3].start_time_unix_nano))
        return out

    def trace_states(
        self,
        *,
        run_id: str | None = None,
        case_id: str | None = None,
        trace_ids: Sequence[str] = (),
    ) -> list[TraceState]:
        """The settling state of stored traces, filtered by run id, case id and/or trace ids
        (all given filters apply); oldest first."""
        sql, args = f"SELECT {TraceState.COLUMNS} FROM traces WHERE 1=1", []
        for column, value in (("run_id", run_id), ("case_id", case_id)):
            if value is not None:
                sql += f" AND {column} = ?"
                args.append(value)
        if trace_ids:
            sql += f" AND trace_id IN ({','.join('?' * len(trace_ids))})"
            args.extend(trace_ids)
        return [
            TraceState(*row)
            for row in self.db.execute(sql + " ORDER BY start_unix_nano, trace_id", args)
        ]

    def settled(
        self,
        *,
        run_id: str | None = None,
        case_id: str | None = None,
        trace_ids: Sequence[str] = (),
        quiet_s: float = DEFAULT_QUIET_S,
        now: float | None = None,
    ) -> list[str] | None:
        """The ids of the matching traces once every one of them has settled (see
        :meth:`TraceState.is_settled`); None while none has arrived or any is still open."""
        states = self.trace_states(run_id=run_id, case_id=case_id, trace_ids=trace_ids)
        now = time.time() if now is None else now
        if not states or not all(state.is_settled(now, quiet_s) for state in states):
            return None
        return [state.trace_id for state in states]

    def _resources(self, ids: Iterable[int]) -> dict[int, dict[str, Any]]:
        """Decoded resource attributes by row id, read once per store connection (rows are
        never changed, only added)."""
        missing = sorted(set(ids) - self._decoded_resources.keys())
        for part in _chunks(missing, 500):
            rows = self.db.execute(
                f"SELECT id, resource FROM resources WHERE id IN ({','.join('?' * len(part))})",
                part,
            )
            for rid, payload in rows:
                attributes = decode_attributes(Resource.FromString(payload).attributes)
                self._decoded_resources[rid] = attributes
        return self._decoded_resources

    def _scopes(self, ids: Iterable[int]) -> dict[int, InstrumentationScope]:
        """Decoded scopes by row id, read once per store connection."""
        missing = sorted(set(ids) - self._decoded_scopes.keys())
        for part in _chunks(missing, 500):
            rows = self.db.execute(
                f"SELECT id, scope FROM scopes WHERE id IN ({','.join('?' * len(part))})", part
            )
            for sid, payload in rows:
                self._decoded_scopes[sid] = InstrumentationScope.FromString(payload)
        return self._decoded_scopes

    def requests(
        self, trace_ids: Sequence[str]
    ) -> tuple[ExportTraceServiceRequest, ExportLogsServiceRequest]:
        """The stored spans and log records of these traces as OTLP requests (one resource and
        scope entry each, as received), e.g. to write a Collector file."""
        resources = dict(self.db.execute("SELECT id, resource FROM resources"))
        scopes = dict(self.db.execute("SELECT id, scope FROM scopes"))
        spans = [(rid, sid, span) for _, rid, sid, span in self._spans(trace_ids)]
        spans.sort(key=lambda row: row[2].start_time_unix_nano)
        logs: list[tuple[int, int, bytes]] = []
        for chunk in _chunks(list(trace_ids), 500):
            marks = ",".join("?" * len(chunk))
            logs += self.db.execute(
                f"SELECT resource_id, scope_id, record FROM log_records WHERE trace_id IN ({marks})"
                " ORDER BY time_unix_nano, id",
                chunk,
            ).fetchall()
        return (
            _group(
                spans,
                resources,
                scopes,
                ExportTraceServiceRequest(),
                "resource_spans",
                "scope_spans",
                "spans",
                trace_pb2.Span,
            ),
            _group(
                logs,
                resources,
                scopes,
                ExportLogsServiceRequest(),
                "resource_logs",
                "scope_logs",
                "log_records",
                logs_pb2.LogRecord,
            ),
        )

    def load(self, trace_ids: Iterable[str]) -> list[TraceData]:
        """The stored spans and log records of each trace id, in the order given: one query for
        the spans and one for the log records of up to 500 traces. A log record stored twice
        (a resend on another day: :mod:`.partitions`) is read once."""
        ids = list(dict.fromkeys(trace_ids))
        traces = {tid: TraceData(tid) for tid in ids}
        spans = self._spans(ids)
        logs: list[tuple[str, int, int, bytes]] = []
        seen: set[bytes] = set()
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for trace_id, rid, sid, payload, key in self.db.execute(
                "SELECT trace_id, resource_id, scope_id, record, digest FROM log_records"
                f" WHERE trace_id IN ({marks}) ORDER BY time_unix_nano, id",
                chunk,
                binary=True,
            ):
                if bytes(key) not in seen:
                    seen.add(bytes(key))
                    logs.append((trace_id, rid, sid, payload))
        used = [(rid, sid) for _, rid, sid, _ in [*spans, *logs]]
        resources = self._resources(rid for rid, _ in used)
        scopes = self._scopes(sid for _, sid in used)
        for trace_id, rid, sid, span in spans:
            scope = scopes[sid]
            traces[trace_id].spans.append(
                span_from_proto(span, resources[rid], scope.name, scope.version)
            )
        for trace_id, rid, sid, payload in logs:
            record = logs_pb2.LogRecord.FromString(payload)
            traces[trace_id].logs.append(log_from_proto(record, resources[rid], scopes[sid].name))
        return [traces[tid] for tid in ids]


def trace_ids_query(
    since_unix_nano: int | None, limit: int | None, trace_ids: Sequence[str]
) -> tuple[str, list[Any]]:
    """The statement (``?`` placeholders) and arguments of :meth:`Store.trace_ids`: newest
    first by start time, then id; shared with :func:`tracegrade.store.scan.trace_id_batches`."""
    sql, args = "SELECT trace_id FROM traces WHERE 1=1", list[Any]()
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
    return sql, args


def _group(
    rows: Iterable[tuple[int, int, Any]],
    resources: dict[int, bytes],
    scopes: dict[int, bytes],
    request: Any,
    groups_field: str,
    scopes_field: str,
    items_field: str,
    item_type: Any,
) -> Any:
    """Rebuild one OTLP request from (resource id, scope id, item or its bytes) rows."""
    by_resource: dict[int, Any] = {}
    by_scope: dict[tuple[int, int], Any] = {}
    for rid, sid, payload in rows:
        if rid not in by_resource:
            by_resource[rid] = getattr(request, groups_field).add()
            by_resource[rid].resource.ParseFromString(resources[rid])
        if (rid, sid) not in by_scope:
            by_scope[(rid, sid)] = getattr(by_resource[rid], scopes_field).add()
            by_scope[(rid, sid)].scope.ParseFromString(scopes[sid])
        item = item_type.FromString(payload) if isinstance(payload, bytes) else payload
        getattr(by_scope[(rid, sid)], items_field).append(item)
    return request


def _chunks(items: Sequence[Any], size: int) -> Iterable[Sequence[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
