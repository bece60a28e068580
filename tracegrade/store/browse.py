"""Read-only queries for the web dashboard (:mod:`tracegrade.web`): stored runs one page at a
time, a dataset's trend over runs, one case result, and recent traces.

Every listing is keyset-paginated (newest first, ``before`` a cursor from the previous page)
on an index, so a page costs the same with ten runs or ten thousand. Times are Unix seconds
(runs) or Unix nanoseconds (traces); run summaries are the stored run document's ``summary``
(:mod:`tracegrade.report.document`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tracegrade.errors import StoreError
from tracegrade.run_document import read_head
from tracegrade.store.runs import load_run_head as load_run_head
from tracegrade.store.traces import Store

PAGE_SIZE = 50
"""Rows per page of a listing."""


@dataclass(frozen=True)
class Page:
    """One page of a listing: ``rows`` newest first, ``next_before`` the cursor of the next
    page (None on the last page)."""

    rows: list[dict[str, Any]]
    next_before: str | None


def _label_expr(store: Store) -> str:
    if store.db.postgres:
        return "((run::jsonb)->'run'->>'label')"
    return "json_extract(run, '$.run.label')"


def _cursor(created_at: float, run_id: str) -> str:
    return f"{created_at!r}~{run_id}"


def _parse_cursor(before: str) -> tuple[float, str]:
    created, _, run_id = before.partition("~")
    try:
        return float(created), run_id
    except ValueError:
        raise StoreError(f"bad page cursor {before!r}") from None


def run_row(run_id: str, created_at: float, doc: dict[str, Any]) -> dict[str, Any]:
    """The listing fields of a stored run document (read through
    :func:`~tracegrade.run_document.read_head`): ids, dataset, label, versions, time
    (``created_at`` Unix s), pass rate, mean score, hallucination rate, p95 latency (ms),
    cost (USD).

    Raises:
        InputError: the stored document is not a ``tracegrade.run/1`` head (the field named).
    """
    head = read_head(doc, f"stored run {run_id}")
    run, summary = head.run, head.summary
    return {
        "run_id": run_id,
        "created_at": created_at,
        "started_at": run.started_at or run.created_at,
        "dataset": run.dataset.name if run.dataset else None,
        "label": run.label,
        "git_sha": run.git_sha,
        "agent_version": run.agent_version,
        "passed": bool(run.passed),
        "results": summary.results,
        "pass_rate": summary.pass_rate,
        "score": summary.score,
        "hallucination_rate": summary.hallucination_rate,
        "latency_p95_ms": summary.latency_p95_ms,
        "cost_usd": summary.cost_usd,
    }


def list_run_page(
    store: Store,
    *,
    dataset: str | None = None,
    label: str | None = None,
    before: str | None = None,
    limit: int = PAGE_SIZE,
) -> Page:
    """Stored runs, newest first, filtered by dataset name and/or label.

    Raises:
        StoreError: ``before`` is not a cursor this function returned.
    """
    sql, args = "SELECT run_id, created_at, run FROM runs WHERE 1=1", list[Any]()
    if dataset:
        sql += " AND dataset_name = ?"
        args.append(dataset)
    if label:
        sql += f" AND {_label_expr(store)} = ?"
        args.append(label)
    if before:
        created, run_id = _parse_cursor(before)
        sql += " AND (created_at < ? OR (created_at = ? AND run_id < ?))"
        args += [created, created, run_id]
    sql += " ORDER BY created_at DESC, run_id DESC LIMIT ?"
    rows = store.db.execute(sql, [*args, limit + 1]).fetchall()
    out = [run_row(r[0], r[1], json.loads(r[2])) for r in rows[:limit]]
    more = len(rows) > limit
    return Page(out, _cursor(rows[limit - 1][1], rows[limit - 1][0]) if more else None)


def dataset_names(store: Store) -> list[str]:
    """The dataset names of stored runs, sorted."""
    rows = store.db.execute(
        "SELECT DISTINCT dataset_name FROM runs WHERE dataset_name IS NOT NULL ORDER BY 1"
    )
    return [r[0] for r in rows]


def trend(store: Store, dataset: str, limit: int = 200) -> list[dict[str, Any]]:
    """The last ``limit`` runs of a dataset, oldest first, as :func:`run_row` dicts."""
    rows = store.db.execute(
        "SELECT run_id, created_at, run FROM runs WHERE dataset_name = ?"
        " ORDER BY created_at DESC, run_id DESC LIMIT ?",
        (dataset, limit),
    ).fetchall()
    return [run_row(r[0], r[1], json.loads(r[2])) for r in reversed(rows)]


def load_case_result(store: Store, run_id: str, position: int) -> dict[str, Any]:
    """One case result of a stored run (its ``position`` in the run, from 0).

    Raises:
        StoreError: no such run or position.
    """
    row = store.db.execute(
        "SELECT result FROM case_results WHERE run_id = ? AND position = ?", (run_id, position)
    ).fetchone()
    if row is None:
        raise StoreError(f"no case {position} in run {run_id!r}")
    result: dict[str, Any] = json.loads(row[0])
    return result


def list_trace_page(store: Store, *, before: str | None = None, limit: int = PAGE_SIZE) -> Page:
    """Stored traces, newest first by start time: trace id, start (Unix ns), span count, run
    and case ids, whether the root ended.

    Raises:
        StoreError: ``before`` is not a cursor this function returned.
    """
    sql = "SELECT trace_id, start_unix_nano, span_count, run_id, case_id, ended FROM traces"
    args: list[Any] = []
    if before:
        start, _, trace_id = before.partition("~")
        if not start.isdigit() or int(start) > 2**63 - 1:  # a signed 64-bit column
            raise StoreError(f"bad page cursor {before!r}")
        sql += " WHERE (start_unix_nano < ? OR (start_unix_nano = ? AND trace_id < ?))"
        args += [int(start), int(start), trace_id]
    sql += " ORDER BY start_unix_nano DESC, trace_id DESC LIMIT ?"
    rows = store.db.execute(sql, [*args, limit + 1]).fetchall()
    keys = ("trace_id", "start_unix_nano", "span_count", "run_id", "case_id", "ended")
    out = [dict(zip(keys, r, strict=True)) for r in rows[:limit]]
    more = len(rows) > limit
    return Page(out, f"{rows[limit - 1][1]}~{rows[limit - 1][0]}" if more else None)
