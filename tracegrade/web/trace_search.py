"""Trace search for the dashboard: keeping the trace index (:mod:`tracegrade.store.search`)
up to date from normalised traces, and finding traces by service, time, verdict, tool and text.

:func:`index_traces` normalises pending traces (never indexed, or grown since) newest first and
writes their rows; ``tracegrade ui`` runs it in the background and before each search
(:data:`INDEX_PER_SEARCH` traces at most: a small store is searched complete at once, a large
one as far as it is indexed; the page says how many traces are still pending).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracegrade.normalize import normalize_trace
from tracegrade.spans import TraceData
from tracegrade.store import search
from tracegrade.store.browse import Page
from tracegrade.store.search import IndexRow, ToolRow, TraceQuery
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

INDEX_BATCH = 256
"""Traces normalised and written per transaction."""
LOOK_BACK_S = 60.0
"""Seconds before the index's watermark that each pass looks again: a receiver stamps a
trace's receive time before its transaction commits, so a commit may land after a pass that
started later than the stamp."""
INDEX_PER_SEARCH = 64
"""Pending traces a search indexes first, at most (a few tens of milliseconds: the
background indexer does the rest)."""


def _text(trace: AgentTrace) -> str:
    parts: list[str] = [*trace.history, *trace.user_inputs]
    if trace.final_output:
        parts.append(trace.final_output)
    for call in trace.tool_calls:
        if call.arguments_recorded and call.arguments is not None:
            parts.append(json.dumps(call.arguments, ensure_ascii=False, default=str))
    return "\n".join(parts).casefold()


def _tools(trace: AgentTrace) -> tuple[ToolRow, ...]:
    calls = Counter(c.name for c in trace.tool_calls)
    failed = Counter(c.name for c in trace.tool_calls if c.error)
    keys: dict[str, set[str]] = {}
    for call in trace.tool_calls:
        found = keys.setdefault(call.name, set())
        if isinstance(call.arguments, dict):
            found.update(str(k) for k in call.arguments)
    return tuple(
        ToolRow(name, calls[name], failed[name], tuple(sorted(keys[name]))) for name in calls
    )


def index_row(trace: AgentTrace, span_count: int) -> IndexRow:
    """The index row of a normalised trace (``span_count``: the stored trace's, so a trace
    that grows is indexed again)."""
    first = next(iter(trace.user_inputs), None)
    service = trace.resource_attributes.get("service.name")
    return IndexRow(
        trace_id=trace.trace_id,
        span_count=span_count,
        start_unix_nano=trace.start_unix_nano,
        service=None if service is None else str(service),
        conversation_id=trace.conversation_id,
        user_input=None if first is None else first[: search.PREVIEW_CHARS],
        tool_calls=len(trace.tool_calls),
        failed_tool_calls=sum(1 for c in trace.tool_calls if c.error),
        text=_text(trace)[: search.TEXT_LIMIT],
        tools=_tools(trace),
    )


def _batches(items: list[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _since(store: Store) -> float:
    return max(search.watermark(store) - LOOK_BACK_S, 0.0)


def index_traces(store: Store, limit: int = INDEX_BATCH) -> int:
    """Index up to ``limit`` pending traces, most recently received first; returns how many
    were indexed. A pass that finds fewer than ``limit`` moves the watermark to its start."""
    started = time.time()
    todo = search.pending(store, limit, _since(store))
    done = 0
    for batch in _batches(todo, INDEX_BATCH):
        counts = dict(batch)
        rows = [
            _row(data, counts[data.trace_id]) for data in store.load(list(counts)) if data.spans
        ]
        search.put(store, rows)
        done += len(rows)
    if len(todo) < limit:
        search.set_watermark(store, started)
    return done


def _row(data: TraceData, span_count: int) -> IndexRow:
    """The index row of a stored trace; a trace the normaliser cannot read gets an empty row
    (found by time and verdict only), so it is not tried again until it grows."""
    try:
        return index_row(normalize_trace(data), span_count)
    except Exception:  # a hostile or broken trace must not stop the index
        start = min((s.start_unix_nano for s in data.spans), default=0)
        return IndexRow(data.trace_id, span_count, start, None, None, None, 0, 0, "")


@dataclass(frozen=True)
class TraceSearch:
    """One page of a search: ``rows`` (:func:`tracegrade.store.search.search` rows, each with
    its ``verdicts``), ``next_before`` (the next page's cursor), ``pending`` (traces not indexed
    yet: filters on service, tool and text do not see them), and the choices of the filter
    form (``services``, ``tools``)."""

    rows: list[dict[str, Any]]
    next_before: str | None
    pending: int
    services: list[str]
    tools: list[str]


def find_traces(store: Store, query: TraceQuery, before: str | None = None) -> TraceSearch:
    """Index up to :data:`INDEX_PER_SEARCH` pending traces, then one page of the traces
    matching ``query``, newest first (``before``: the previous page's cursor).

    Raises:
        StoreError: ``before`` is not a cursor of this search.
    """
    index_traces(store, INDEX_PER_SEARCH)
    page: Page = search.search(store, query, before=before)
    found = search.verdicts(store, [r["trace_id"] for r in page.rows])
    rows = [{**r, "verdicts": found[r["trace_id"]]} for r in page.rows]
    return TraceSearch(
        rows=rows,
        next_before=page.next_before,
        pending=search.pending_count(store, _since(store)),
        services=search.services(store),
        tools=search.tool_names(store),
    )


def tools_seen(store: Store) -> dict[str, list[str]]:
    """The tools the stored traces called, each with the argument keys its calls passed
    (indexing pending traces first, as :func:`find_traces`): the case editor's choices."""
    index_traces(store, INDEX_PER_SEARCH)
    return search.tools_seen(store)
