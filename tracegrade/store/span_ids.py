"""Counting each stored span once, however it was grouped when sent.

Spans are stored in chunks deduplicated by content digest (:mod:`.rows`): an identical resend
adds nothing, but the same spans resent in a different grouping (an exporter retry after a
batch was split, a Collector re-batching) make new chunks. Reading deduplicates by span id;
this module makes the *counts* (``traces.span_count``, what a write reports as added, the
receiver's ``stored``) agree: a trace's new spans are its span ids in this write minus those
already stored.

The writer keeps the span ids of recently written traces (at most :data:`MAX_CACHED_TRACES`
traces and :data:`MAX_CACHED_SPAN_IDS` span ids, ~100 bytes each: the cache is bounded in
memory whatever the traces' sizes), so a trace arriving in many requests is not read back each
time; a trace not in the cache that the
store already holds is read back once (its chunks' span ids). Several receivers sharing one
PostgreSQL store each cache only what they wrote, so a span resent to two receivers in two
groupings may still count twice.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

from tracegrade.store.rows import PreparedSpans, chunk_spans

MAX_CACHED_TRACES = 4096
MAX_CACHED_SPAN_IDS = 200_000
"""About 20 MB of span ids; the oldest traces are forgotten first (a forgotten trace is read
back from the store when it gets more spans)."""


class SpanIds:
    """Span ids already stored, per trace (hex id -> set of 8-byte span ids), for one store
    connection. Use :meth:`stored_before` and :meth:`new_counts` inside a write's
    transaction and :meth:`remember` once it committed."""

    def __init__(
        self, max_traces: int = MAX_CACHED_TRACES, max_span_ids: int = MAX_CACHED_SPAN_IDS
    ):
        self.max_traces = max_traces
        self.max_span_ids = max_span_ids
        self.cached_span_ids = 0
        self._cache: OrderedDict[str, set[bytes]] = OrderedDict()

    def stored_before(self, db: Any, prepared: PreparedSpans) -> dict[str, set[bytes]]:
        """The span ids stored so far of the traces in ``prepared`` that already exist (read
        from ``db`` for traces not cached). Call before inserting the new chunks."""
        known = {tid: self._cache[tid] for tid in prepared.span_ids if tid in self._cache}
        missing = [tid for tid in prepared.span_ids if tid not in known]
        for ids in _batches(missing, 500):
            marks = ",".join("?" * len(ids))
            rows = db.execute(
                f"SELECT trace_id, spans FROM span_chunks WHERE trace_id IN ({marks})", ids
            )
            for trace_id, payload in rows:
                spans = chunk_spans(bytes(payload), trace_id)
                known.setdefault(trace_id, set()).update(span.span_id for span in spans)
        return known

    @staticmethod
    def new_counts(
        prepared: PreparedSpans, touched: Iterable[str], known: dict[str, set[bytes]]
    ) -> dict[str, int]:
        """Per trace that got a new chunk, how many of its span ids were not stored before."""
        return {tid: len(prepared.span_ids[tid] - known.get(tid, set())) for tid in touched}

    def remember(self, prepared: PreparedSpans, known: dict[str, set[bytes]]) -> None:
        """After the commit: these traces' span ids are stored."""
        for trace_id, ids in prepared.span_ids.items():
            stored = self._cache.pop(trace_id, None)
            if stored is None:
                stored = set(known.get(trace_id, ()))
            else:
                self.cached_span_ids -= len(stored)
            stored |= ids
            self._cache[trace_id] = stored
            self.cached_span_ids += len(stored)
        while self._cache and (
            len(self._cache) > self.max_traces or self.cached_span_ids > self.max_span_ids
        ):
            self.cached_span_ids -= len(self._cache.popitem(last=False)[1])


def _batches(items: Sequence[str], size: int) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
