"""What a tracegrade receiver stored of ``--export-otlp``'s ``gen_ai.evaluation.result``
records (tests read the raw log records: tracegrade's own records are not feedback, so the
feedback table leaves them out)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from tracegrade.spans import LogRecord
from tracegrade.store.traces import Store

EVENT = "gen_ai.evaluation.result"


def evaluation_records(db: str | Path, trace_ids: Iterable[str]) -> dict[str, list[LogRecord]]:
    """Trace id -> its stored ``gen_ai.evaluation.result`` records, in the order received
    (traces without any are absent)."""
    with Store(db) as store:
        traces = store.load(list(trace_ids))
    found = {t.trace_id: [r for r in t.logs if r.event_name == EVENT] for t in traces}
    return {trace_id: records for trace_id, records in found.items() if records}
