"""The dashboard's trace search: an index of normalised traces, and the queries over it.

Spans are stored as received (protobuf chunks), so what a person searches for (the service, the
tools called, the user's input, the answer, tool arguments) is not in a column. The *trace
index* holds it, one row per trace, written from the normalised trace
(:mod:`tracegrade.web.trace_search` builds the rows; this module only stores and queries):

- ``trace_index``: service (``service.name``), conversation id, the first user input (a
  preview), tool call counts, and ``text``: the user input(s), the final answer and every tool
  call's arguments, case-folded, its first :data:`TEXT_LIMIT` characters;
- ``trace_tools``: per trace, each tool it called (calls, failed calls, argument keys seen);
- ``result_traces`` (written by :func:`tracegrade.store.runs.save_run`): the traces each stored
  case result scored, with its verdict; production results are ``follow_results``.

A row records the trace's ``span_count`` when it was indexed: a trace that received spans since
is *pending* (:func:`pending`) and indexed again. Filters on the service, a tool or text see
indexed traces only; the time range and verdict filters see every trace. The indexer records
how far it got (:func:`watermark`: every trace last received before it is indexed), so finding
what is pending reads only the traces received since (on the ``last_received_at`` index), not
the whole store.

Costs: the time range, service, tool and verdict filters are index lookups on both backends;
the text filter scans ``trace_index.text`` newest first until a page is full (SQLite's
``instr``), or uses the trigram index on PostgreSQL when ``pg_trgm`` is available (migration
012). ``benchmarks/web.py`` measures the Traces page with each filter.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tracegrade.errors import StoreError
from tracegrade.store.browse import PAGE_SIZE, Page
from tracegrade.store.results import CURRENT
from tracegrade.store.traces import Store

TEXT_LIMIT = 16_384
"""Characters of a trace's searchable text kept in the index (the rest is not searched)."""
PREVIEW_CHARS = 200
"""Characters of the first user input kept as the listing's preview."""

Verdict = Literal["pass", "fail", "unscored"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "unscored")
UNIX_NANO_MAX = 2**63 - 1
"""The latest start a search takes (2262-04-11T23:47:16Z): the stores keep Unix ns in a signed
64-bit column, and SQLite refuses a larger parameter (PostgreSQL would compare it)."""


@dataclass(frozen=True)
class TraceQuery:
    """What the Traces page filters on (every field optional; all given ones apply).
    Raises :class:`StoreError` ("bad since time ...") when a time is outside 0 ..
    :data:`UNIX_NANO_MAX`.

    ``since_unix_nano`` / ``until_unix_nano``: the trace's start, inclusive / exclusive;
    ``verdict``: ``pass`` or ``fail`` when some stored case result or production result
    (``score --follow``) scored the trace so, ``unscored`` when none scored it; ``tool``: it
    called a tool of this name; ``text``: its user input, answer or tool arguments contain this
    text (case-insensitive)."""

    service: str | None = None
    since_unix_nano: int | None = None
    until_unix_nano: int | None = None
    verdict: Verdict | None = None
    tool: str | None = None
    text: str | None = None

    def __post_init__(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, f"{name}_unix_nano")
            if value is not None and not 0 <= value <= UNIX_NANO_MAX:
                raise StoreError(
                    f"bad {name} time: {value} ns is outside 1970-01-01 .. 2262-04-11 (UTC),"
                    " the times a trace can start at"
                )

    @property
    def uses_index(self) -> bool:
        """True when a filter reads the trace index (pending traces are not found by it)."""
        return bool(self.service or self.tool or self.text)


@dataclass(frozen=True)
class ToolRow:
    """One tool a trace called: how often, how many calls failed, the argument keys passed."""

    name: str
    calls: int
    failed: int
    argument_keys: tuple[str, ...]


@dataclass(frozen=True)
class IndexRow:
    """The index row of one normalised trace (see the module docstring)."""

    trace_id: str
    span_count: int
    start_unix_nano: int
    service: str | None
    conversation_id: str | None
    user_input: str | None
    tool_calls: int
    failed_tool_calls: int
    text: str
    tools: tuple[ToolRow, ...] = ()


_PENDING = (
    " FROM traces t LEFT JOIN trace_index i ON i.trace_id = t.trace_id"
    " WHERE t.last_received_at > ? AND t.span_count > 0"
    " AND (i.trace_id IS NULL OR i.span_count <> t.span_count)"
)


def pending(store: Store, limit: int, received_after: float = 0.0) -> list[tuple[str, int]]:
    """(trace id, span count) of up to ``limit`` traces not indexed, or grown since they were,
    among those last received after ``received_after`` (Unix s), most recently received
    first."""
    rows = store.db.execute(
        f"SELECT t.trace_id, t.span_count{_PENDING} ORDER BY t.last_received_at DESC LIMIT ?",
        (received_after, limit),
    )
    return [(str(r[0]), int(r[1])) for r in rows]


def pending_count(store: Store, received_after: float = 0.0) -> int:
    """How many traces :func:`pending` would return without a limit."""
    return int(store.db.execute(f"SELECT COUNT(*){_PENDING}", (received_after,)).fetchone()[0])


def watermark(store: Store) -> float:
    """The receive time (Unix s) before which every trace was indexed; 0 at first."""
    row = store.db.execute(
        "SELECT value FROM trace_index_state WHERE name = 'indexed_through'"
    ).fetchone()
    return float(row[0]) if row else 0.0


def set_watermark(store: Store, received_before: float) -> None:
    """Record that every trace last received before ``received_before`` is indexed (never
    moves back)."""
    greatest = store.db.greatest("trace_index_state.value", "excluded.value")
    with store.db:
        store.db.execute(
            "INSERT INTO trace_index_state VALUES ('indexed_through', ?) ON CONFLICT (name)"
            f" DO UPDATE SET value = {greatest}",
            (received_before,),
        )


def put(store: Store, rows: Sequence[IndexRow]) -> None:
    """Write (or replace) the index rows of these traces, in one transaction."""
    if not rows:
        return
    now = time.time()
    ids = [r.trace_id for r in rows]
    marks = ",".join("?" * len(ids))
    with store.db:
        store.db.executemany(
            "INSERT INTO trace_index (trace_id, span_count, start_unix_nano, service,"
            " conversation_id, user_input, tool_calls, failed_tool_calls, text, indexed_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (trace_id) DO UPDATE SET"
            " span_count = excluded.span_count, start_unix_nano = excluded.start_unix_nano,"
            " service = excluded.service, conversation_id = excluded.conversation_id,"
            " user_input = excluded.user_input, tool_calls = excluded.tool_calls,"
            " failed_tool_calls = excluded.failed_tool_calls, text = excluded.text,"
            " indexed_at = excluded.indexed_at",
            [
                (r.trace_id, r.span_count, r.start_unix_nano, r.service, r.conversation_id)
                + (r.user_input, r.tool_calls, r.failed_tool_calls, r.text[:TEXT_LIMIT], now)
                for r in rows
            ],
        )
        store.db.execute(f"DELETE FROM trace_tools WHERE trace_id IN ({marks})", ids)
        tools = [
            (r.trace_id, t.name, r.start_unix_nano, t.calls, t.failed)
            + (json.dumps(list(t.argument_keys)),)
            for r in rows
            for t in r.tools
        ]
        if tools:
            store.db.executemany("INSERT INTO trace_tools VALUES (?, ?, ?, ?, ?, ?)", tools)


_COLUMNS = (
    "trace_id",
    "start_unix_nano",
    "span_count",
    "run_id",
    "case_id",
    "ended",
    "service",
    "user_input",
    "tool_calls",
    "failed_tool_calls",
    "indexed",
)
_SELECT = (
    "SELECT t.trace_id, t.start_unix_nano, t.span_count, t.run_id, t.case_id, t.ended,"
    " i.service, i.user_input, i.tool_calls, i.failed_tool_calls,"
    " CASE WHEN i.span_count = t.span_count THEN 1 ELSE 0 END"
    " FROM traces t LEFT JOIN trace_index i ON i.trace_id = t.trace_id WHERE 1=1"
)
_SCORED = (
    "(EXISTS (SELECT 1 FROM result_traces r WHERE r.trace_id = t.trace_id{r})"
    " OR EXISTS (SELECT 1 FROM follow_results f WHERE f.trace_id = t.trace_id"
    f" AND f.excluded = 0 AND {CURRENT}{{f}}))"
)
"""A trace scored by a stored run, or with a current production result (an earlier version's
result, superseded by late spans, does not count: :mod:`.results`)."""


def _where(store: Store, query: TraceQuery) -> tuple[str, list[Any]]:
    sql, args = "", list[Any]()
    if query.since_unix_nano is not None:
        sql, args = sql + " AND t.start_unix_nano >= ?", [*args, query.since_unix_nano]
    if query.until_unix_nano is not None:
        sql, args = sql + " AND t.start_unix_nano < ?", [*args, query.until_unix_nano]
    if query.service:
        sql, args = sql + " AND i.service = ?", [*args, query.service]
    if query.tool:
        sql += " AND EXISTS (SELECT 1 FROM trace_tools k WHERE k.trace_id = t.trace_id"
        sql, args = sql + " AND k.tool_name = ?)", [*args, query.tool]
    if query.text:
        needle = query.text.casefold()
        if store.db.postgres:
            escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            sql, args = sql + " AND i.text LIKE ?", [*args, f"%{escaped}%"]
        else:
            sql, args = sql + " AND instr(i.text, ?) > 0", [*args, needle]
    if query.verdict == "unscored":
        sql += " AND NOT " + _SCORED.format(r="", f="")
    elif query.verdict is not None:
        passed = int(query.verdict == "pass")
        sql += " AND " + _SCORED.format(r=" AND r.passed = ?", f=" AND f.passed = ?")
        args += [passed, passed]
    return sql, args


def search(
    store: Store, query: TraceQuery, *, before: str | None = None, limit: int = PAGE_SIZE
) -> Page:
    """Stored traces matching ``query``, newest first by start time, one page (``before``:
    the previous page's cursor). Each row: trace id, start (Unix ns), span count, run and case
    ids, ended, and from the index (None when not indexed) the service, user input preview,
    tool call counts, and ``indexed`` (the row is up to date).

    Raises:
        StoreError: ``before`` is not a cursor this function returned.
    """
    where, args = _where(store, query)
    if before:
        start, _, trace_id = before.partition("~")
        if not start.isdigit() or int(start) > UNIX_NANO_MAX or not trace_id:
            raise StoreError(f"bad page cursor {before!r}")
        where += " AND (t.start_unix_nano < ? OR (t.start_unix_nano = ? AND t.trace_id < ?))"
        args += [int(start), int(start), trace_id]
    sql = f"{_SELECT}{where} ORDER BY t.start_unix_nano DESC, t.trace_id DESC LIMIT ?"
    rows = store.db.execute(sql, [*args, limit + 1]).fetchall()
    out = [dict(zip(_COLUMNS, r, strict=True)) for r in rows[:limit]]
    more = len(rows) > limit
    return Page(out, f"{rows[limit - 1][1]}~{rows[limit - 1][0]}" if more else None)


def verdicts(store: Store, trace_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """Per trace id, the stored results that scored it: ``{"run_id", "position", "passed"}``
    for a run's case result, ``{"run_id": None, "passed"}`` for a production result (its
    current result: :mod:`.results`)."""
    out: dict[str, list[dict[str, Any]]] = {t: [] for t in trace_ids}
    if not trace_ids:
        return out
    marks = ",".join("?" * len(trace_ids))
    for trace_id, run_id, position, passed in store.db.execute(
        "SELECT trace_id, run_id, position, passed FROM result_traces"
        f" WHERE trace_id IN ({marks}) ORDER BY run_id DESC, position",
        list(trace_ids),
    ):
        out[trace_id].append({"run_id": run_id, "position": position, "passed": bool(passed)})
    for trace_id, passed in store.db.execute(
        "SELECT f.trace_id, f.passed FROM follow_results f WHERE f.trace_id IN"
        f" ({marks}) AND f.excluded = 0 AND {CURRENT}",
        list(trace_ids),
    ):
        out[trace_id].append({"run_id": None, "position": None, "passed": bool(passed)})
    return out


def services(store: Store) -> list[str]:
    """The service names of indexed traces, sorted."""
    rows = store.db.execute(
        "SELECT DISTINCT service FROM trace_index WHERE service IS NOT NULL ORDER BY 1"
    )
    return [str(r[0]) for r in rows]


def tool_names(store: Store, most: int = 500) -> list[str]:
    """The tool names of indexed traces, sorted, the first ``most``."""
    rows = store.db.execute(
        "SELECT DISTINCT tool_name FROM trace_tools ORDER BY 1 LIMIT ?", (most,)
    )
    return [str(r[0]) for r in rows]


def tools_seen(store: Store, sample: int = 200, most: int = 500) -> dict[str, list[str]]:
    """The tool names of :func:`tool_names` -> the argument keys their calls passed in their
    ``sample`` most recent traces (sorted)."""
    out: dict[str, list[str]] = {}
    for name in tool_names(store, most):
        keys: set[str] = set()
        for (found,) in store.db.execute(
            "SELECT argument_keys FROM trace_tools WHERE tool_name = ?"
            " ORDER BY start_unix_nano DESC LIMIT ?",
            (name, sample),
        ):
            keys.update(json.loads(found))
        out[name] = sorted(keys)
    return out


def conversation_traces(store: Store, conversation_id: str, limit: int = 200) -> list[str]:
    """The ids of indexed traces of a conversation (``gen_ai.conversation.id`` and the like),
    oldest first, at most ``limit``."""
    rows = store.db.execute(
        "SELECT trace_id FROM trace_index WHERE conversation_id = ?"
        " ORDER BY start_unix_nano, trace_id LIMIT ?",
        (conversation_id, limit),
    )
    return [str(r[0]) for r in rows]
