"""End-user feedback (and any other evaluation result) kept with the trace it is about.

Feedback arrives three ways, and all three become rows of the ``feedback`` table as the spans
and log records carrying them are written (:meth:`tracegrade.store.traces.Store.write_prepared`):

- a ``gen_ai.evaluation.result`` **log record** (GenAI semantic conventions, "Events":
  ``gen_ai.evaluation.name`` (required), ``gen_ai.evaluation.score.value``,
  ``gen_ai.evaluation.score.label``, ``gen_ai.evaluation.explanation``,
  ``gen_ai.response.id``), its event name in ``LogRecord.event_name`` or, from older SDKs, the
  ``event.name`` attribute; parented to the evaluated span (its trace and span ids);
- a **span attribute** (``user.feedback`` by default, :data:`DEFAULT_ATTRIBUTE`): a label
  (``"thumbs_down"``), a number (the score) or a boolean, with an optional
  ``<attribute>.comment``; named after the attribute;
- ``POST /v1/feedback`` on the receiver, which the receiver turns into such a log record with
  ``tracegrade.feedback.source = "api"`` (:func:`feedback_request`).

The records tracegrade itself sends (``score --export-otlp``: a verdict per scorer, marked
``tracegrade.verdict``) are not feedback and are not read here, should they reach a
tracegrade receiver.

Rows are keyed by trace id only: feedback that arrives before its trace is kept and joins the
trace when it comes (:func:`feedback_for`), and feedback for a trace never stored stays
queryable. A resent record adds nothing (its digest). Feedback that names only a
``gen_ai.response.id`` (no trace id) is kept with the response id and no trace. A trace keeps
at most :data:`MAX_PER_TRACE` feedback records (a store's ``feedback_per_trace``): the first
ones; a page shows the first :data:`SHOWN_PER_PAGE` with the count (:func:`feedback_page`).

**Polarity** (:attr:`Feedback.positive`): a known label decides (:data:`POSITIVE_LABELS`,
:data:`NEGATIVE_LABELS`, case-insensitive); else the score: above 0.5 positive, below
negative (thumbs as 1 / 0, or 1 / -1); else unknown (None).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.logs.v1 import logs_pb2
from opentelemetry.proto.trace.v1 import trace_pb2
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_EVALUATION_EXPLANATION,
    GEN_AI_EVALUATION_NAME,
    GEN_AI_EVALUATION_SCORE_LABEL,
    GEN_AI_EVALUATION_SCORE_VALUE,
    GEN_AI_RESPONSE_ID,
)

from tracegrade.attributes import VERDICT_ATTR
from tracegrade.otlp.codec import decode_attributes, key_values
from tracegrade.store.database import Database
from tracegrade.store.rows import digest, text

EVENT = "gen_ai.evaluation.result"
"""The GenAI semconv event of an evaluation result (the attributes below are the
OpenTelemetry semantic conventions package's constants; it has none for event names)."""
NAME_ATTR = GEN_AI_EVALUATION_NAME
SCORE_ATTR = GEN_AI_EVALUATION_SCORE_VALUE
LABEL_ATTR = GEN_AI_EVALUATION_SCORE_LABEL
EXPLANATION_ATTR = GEN_AI_EVALUATION_EXPLANATION
RESPONSE_ID_ATTR = GEN_AI_RESPONSE_ID
SOURCE_ATTR = "tracegrade.feedback.source"
"""Set to ``"api"`` on the log records ``POST /v1/feedback`` makes."""
DEFAULT_ATTRIBUTE = "user.feedback"
"""The span attribute read as feedback unless configured otherwise."""
POSITIVE_LABELS = frozenset(
    [
        "up",
        "thumbs_up",
        "thumbsup",
        "positive",
        "good",
        "pass",
        "passed",
        "correct",
        "helpful",
        "like",
        "yes",
        "relevant",
    ]
)
NEGATIVE_LABELS = frozenset(
    [
        "down",
        "thumbs_down",
        "thumbsdown",
        "negative",
        "bad",
        "fail",
        "failed",
        "incorrect",
        "not_helpful",
        "unhelpful",
        "dislike",
        "no",
        "not_relevant",
        "irrelevant",
    ]
)
_EVENT_MARK = EVENT.encode()


@dataclass(frozen=True)
class Feedback:
    """One evaluation result about a trace: ``score`` as sent (any scale), ``label``,
    ``explanation`` (a comment); ``source`` is ``event``, ``attribute`` or ``api``; times are
    the record's (Unix ns) and the receiver's (Unix s)."""

    trace_id: str | None
    span_id: str | None
    name: str
    score: float | None
    label: str | None
    explanation: str | None
    source: str
    time_unix_nano: int
    received_at: float = 0.0
    response_id: str | None = None

    @property
    def positive(self) -> bool | None:
        """Whether the feedback is positive (see the module docstring); None when unknown."""
        label = (self.label or "").strip().lower().replace("-", "_").replace(" ", "_")
        if label in POSITIVE_LABELS:
            return True
        if label in NEGATIVE_LABELS:
            return False
        if self.score is None or self.score == 0.5:
            return None
        return self.score > 0.5

    def to_dict(self) -> dict[str, Any]:
        """JSON form: every field and ``positive``."""
        return {**asdict(self), "positive": self.positive}


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _string(value: Any) -> str | None:
    return None if value is None or value == "" else text(str(value))


def _from_attributes(
    attributes: Mapping[str, Any], trace_id: str | None, span_id: str | None, time_ns: int
) -> Feedback | None:
    """A :class:`Feedback` from an evaluation result's attributes; None without a name."""
    name = _string(attributes.get(NAME_ATTR))
    if name is None:
        return None
    return Feedback(
        trace_id=trace_id,
        span_id=span_id,
        name=name,
        score=_number(attributes.get(SCORE_ATTR)),
        label=_string(attributes.get(LABEL_ATTR)),
        explanation=_string(attributes.get(EXPLANATION_ATTR)),
        source="api" if attributes.get(SOURCE_ATTR) == "api" else "event",
        time_unix_nano=time_ns,
        response_id=_string(attributes.get(RESPONSE_ID_ATTR)),
    )


def from_log_rows(rows: Iterable[Sequence[Any]]) -> list[tuple[bytes, Feedback]]:
    """Feedback in ``log_records`` rows (:func:`~tracegrade.store.rows.log_rows`: digest,
    trace id, span id, time, resource id, scope id, record bytes, ...), keyed by the row's
    digest. Only records whose bytes hold the event name are decoded."""
    out = []
    for row in rows:
        if _EVENT_MARK not in row[6]:
            continue
        record = logs_pb2.LogRecord.FromString(row[6])
        attributes = decode_attributes(record.attributes)
        event = getattr(record, "event_name", "") or attributes.get("event.name")
        if event != EVENT:
            continue
        if VERDICT_ATTR in attributes:  # tracegrade's own result (--export-otlp): no feedback
            continue
        found = _from_attributes(attributes, row[1], row[2], int(row[3]))
        if found is not None:
            out.append((row[0], found))
    return out


def from_chunk_rows(
    rows: Iterable[Sequence[Any]], attribute: str | None
) -> list[tuple[bytes, Feedback]]:
    """Feedback in ``span_chunks`` rows (trace id, start, count, ScopeSpans bytes, ...): the
    ``attribute`` span attribute (None: none). Only chunks whose bytes hold its name are
    decoded: one substring search per chunk is all a span without feedback costs (~1.8 GB/s;
    span events are not searched, which would double it)."""
    if not attribute:
        return []
    mark = attribute.encode()
    out: list[tuple[bytes, Feedback]] = []
    for row in rows:
        if mark not in row[3]:
            continue
        raw_trace = bytes.fromhex(row[0])
        for span in trace_pb2.ScopeSpans.FromString(row[3]).spans:
            if span.trace_id == raw_trace:
                out += _from_span(span, row[0], attribute)
    return out


def _from_span(span: trace_pb2.Span, trace_id: str, attribute: str) -> list[tuple[bytes, Feedback]]:
    attributes = decode_attributes(span.attributes)
    if attribute not in attributes:
        return []
    return [_attribute_feedback(attributes, attribute, trace_id, span)]


def _attribute_feedback(
    attributes: Mapping[str, Any], attribute: str, trace_id: str, span: trace_pb2.Span
) -> tuple[bytes, Feedback]:
    value = attributes[attribute]
    numeric = _number(value) if not isinstance(value, str) else None
    found = Feedback(
        trace_id=trace_id,
        span_id=span.span_id.hex(),
        name=attribute,
        score=numeric,
        label=None if numeric is not None else _string(value),
        explanation=_string(attributes.get(f"{attribute}.comment")),
        source="attribute",
        time_unix_nano=span.end_time_unix_nano,
    )
    key = digest(f"{trace_id}:{span.span_id.hex()}:{attribute}:{value!r}".encode())
    return key, found


FEEDBACK_COLUMNS = (
    "trace_id, span_id, response_id, name, score, label, explanation, source, time_unix_nano,"
    " received_at"
)


MAX_PER_TRACE = 100
"""Feedback records kept per trace, by default (``collect --feedback-per-trace``): the ones
after it are not stored as feedback (their OTLP log records are kept as received)."""
SHOWN_PER_PAGE = 50
"""Feedback records a page shows (the first ones, with the count of all)."""


def _within_cap(
    db: Database, found: Sequence[tuple[bytes, Feedback]], per_trace: int
) -> list[tuple[bytes, Feedback]]:
    """``found`` less what would take a trace past ``per_trace`` feedback records (the first
    ones kept); feedback without a trace id is not capped."""
    room: dict[str, int] = {}
    kept = []
    for key, item in found:
        if item.trace_id is not None:
            if item.trace_id not in room:
                (stored,) = db.execute(
                    "SELECT COUNT(*) FROM feedback WHERE trace_id = ?", (item.trace_id,)
                ).fetchone()
                room[item.trace_id] = per_trace - int(stored)
            if room[item.trace_id] <= 0:
                continue
            room[item.trace_id] -= 1
        kept.append((key, item))
    return kept


def insert(
    db: Database,
    found: Sequence[tuple[bytes, Feedback]],
    received_at: float,
    per_trace: int = MAX_PER_TRACE,
) -> int:
    """Store feedback rows (inside the caller's transaction), at most ``per_trace`` per trace
    id in the store (the rest is dropped); returns how many were new."""
    found = _within_cap(db, found, per_trace) if found else found
    if not found:
        return 0
    rows = [
        (
            key,
            f.trace_id,
            f.span_id,
            f.response_id,
            f.name,
            f.score,
            f.label,
            f.explanation,
            f.source,
            f.time_unix_nano,
            received_at,
        )
        for key, f in sorted(found, key=lambda item: item[0])  # one lock order for writers
    ]
    return int(
        db.insert_many(
            f"INSERT INTO feedback (digest, {FEEDBACK_COLUMNS})",
            rows,
            "ON CONFLICT (digest) DO NOTHING",
        )
    )


def _row(row: Sequence[Any]) -> Feedback:
    trace_id, span_id, response_id, name, score, label, explanation, source, time_ns, at = row
    return Feedback(
        trace_id,
        span_id,
        name,
        score,
        label,
        explanation,
        source,
        int(time_ns),
        float(at),
        response_id,
    )


def feedback_for(db: Database, trace_ids: Sequence[str]) -> dict[str, list[Feedback]]:
    """Trace id -> its feedback, oldest first (traces without any are absent)."""
    out: dict[str, list[Feedback]] = {}
    ids = list(dict.fromkeys(trace_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = db.execute(
            f"SELECT {FEEDBACK_COLUMNS} FROM feedback WHERE trace_id IN"
            f" ({','.join('?' * len(chunk))}) ORDER BY time_unix_nano, id",
            chunk,
        )
        for row in rows:
            out.setdefault(row[0], []).append(_row(row))
    return out


def feedback_page(db: Database, trace_ids: Sequence[str], limit: int) -> tuple[list[Feedback], int]:
    """The first ``limit`` feedback records about these traces (oldest first) and how many
    there are in all."""
    ids = list(dict.fromkeys(trace_ids))[:500]
    if not ids:
        return [], 0
    marks = ",".join("?" * len(ids))
    where = f" FROM feedback WHERE trace_id IN ({marks})"
    (total,) = db.execute(f"SELECT COUNT(*){where}", ids).fetchone()
    rows = db.execute(
        f"SELECT {FEEDBACK_COLUMNS}{where} ORDER BY time_unix_nano, received_at, id LIMIT ?",
        [*ids, limit],
    )
    return [_row(row) for row in rows], int(total)


def traces_with_feedback(db: Database, since_s: float | None = None) -> list[str]:
    """Trace ids that received feedback since ``since_s`` (Unix s; None: ever)."""
    sql = "SELECT DISTINCT trace_id FROM feedback WHERE trace_id IS NOT NULL"
    args: list[Any] = []
    if since_s is not None:
        sql += " AND received_at >= ?"
        args.append(since_s)
    return [row[0] for row in db.execute(sql, args)]


def recent(db: Database, *, since_s: float | None = None, limit: int = 1000) -> list[Feedback]:
    """Feedback received since ``since_s`` (Unix s; None: any time), newest first."""
    sql = f"SELECT {FEEDBACK_COLUMNS} FROM feedback"
    args: list[Any] = []
    if since_s is not None:
        sql += " WHERE received_at >= ?"
        args.append(since_s)
    rows = db.execute(sql + " ORDER BY received_at DESC, id DESC LIMIT ?", [*args, limit])
    return [_row(row) for row in rows]


def feedback_request(
    trace_id: str,
    name: str,
    *,
    score: float | None = None,
    label: str | None = None,
    comment: str | None = None,
    span_id: str | None = None,
    now_ns: int | None = None,
) -> ExportLogsServiceRequest:
    """The OTLP logs request of one ``POST /v1/feedback`` body: one ``gen_ai.evaluation.result``
    log record with the trace (and span) id, ``tracegrade.feedback.source = "api"``."""
    now_ns = time.time_ns() if now_ns is None else now_ns
    record = logs_pb2.LogRecord(
        time_unix_nano=now_ns,
        observed_time_unix_nano=now_ns,
        trace_id=bytes.fromhex(trace_id),
        span_id=bytes.fromhex(span_id) if span_id else b"",
        event_name=EVENT,
        attributes=key_values(
            {
                NAME_ATTR: name,
                SCORE_ATTR: score,
                LABEL_ATTR: label,
                EXPLANATION_ATTR: comment,
                SOURCE_ATTR: "api",
            }
        ),
    )
    request = ExportLogsServiceRequest()
    scoped = request.resource_logs.add().scope_logs.add()
    scoped.scope.name = "tracegrade.feedback"
    scoped.log_records.append(record)
    return request


__all__ = ["DEFAULT_ATTRIBUTE", "EVENT", "Feedback", "feedback_for", "feedback_request", "recent"]
