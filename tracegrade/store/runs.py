"""Stored runs: each scoring run's document (:mod:`tracegrade.report.document`) kept in the
trace store's database, so later commands can list runs, compare two runs case by case, and
flag regressions against a baseline.

Run references (:func:`resolve_run`): a run id (or a unique prefix of one), ``latest``,
``latest~N`` (the N-th run before the latest), or ``baseline`` (the dataset's baseline, marked
with :func:`set_baseline`: one per dataset name, replaced when set again).
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from tracegrade.errors import StoreError
from tracegrade.run_document import (
    CaseEntry,
    StreamedDocument,
    case_with_current_names,
    head_json,
    read_head,
    with_current_names,
)
from tracegrade.store.database import query_batches

if TYPE_CHECKING:
    from tracegrade.store.traces import Store


def case_trace_ids(case: CaseEntry | Mapping[str, Any]) -> list[str]:
    """The trace ids a case result scored: every attempt's (a conversation or repeats span
    several traces), else the case's ``trace_id``; each once, in order. ``case`` is a
    :class:`~tracegrade.run_document.CaseEntry`, or an entry being written (JSON-ready data)."""
    if isinstance(case, CaseEntry):
        ids = [t for a in case.attempts for t in a.trace_ids]
        trace_id = case.trace_id
    else:
        ids = [t for a in case.get("attempts") or [] for t in a.get("trace_ids") or ()]
        trace_id = case.get("trace_id")
    if not ids and trace_id:
        ids = [trace_id]
    return list(dict.fromkeys(ids))


_CaseRow = tuple[str | None, str | None, bool, float | None, str, list[str]]
"""A case result as stored: case id, trace id, passed, score, its JSON, the traces it scored."""


def save_run(store: Store, doc: StreamedDocument | Mapping[str, Any]) -> str:
    """Store a run document (one being written, or JSON-ready data) and its case results (one
    transaction; its cases are read once, :data:`_CHUNK` at a time; a written entry is stored
    as the JSON it was written as), and which traces each case result scored
    (``result_traces``, the dashboard's verdict filter); returns the run id."""
    if isinstance(doc, StreamedDocument):
        run, summary = doc.head.run, doc.head.summary
        dataset = run.dataset.model_dump() if run.dataset else {}
        head = (run.run_id, dataset, bool(run.passed), summary.score, head_json(doc.head))
        rows: Iterator[_CaseRow] = (_case_row(line) for line in doc.cases.lines())
    else:
        data = doc["run"]
        document = {k: v for k, v in doc.items() if k != "cases"}
        head = (
            data["run_id"],
            data["dataset"] or {},
            data["passed"],
            doc["summary"]["score"],
            document,
        )
        rows = (
            (c["case_id"], c["trace_id"], c["passed"], c["score"], json.dumps(c), case_trace_ids(c))
            for c in doc["cases"]
        )
    return _insert(store, head, rows)


def _case_row(line: bytes) -> _CaseRow:
    """A case result as stored, of its entry's JSON line (kept as it was written)."""
    case = CaseEntry.model_validate_json(line)
    return (
        case.case_id,
        case.trace_id,
        case.passed,
        case.score,
        line.decode(),
        case_trace_ids(case),
    )


def _insert(
    store: Store,
    head: tuple[str, Mapping[str, Any], bool, float | None, dict[str, Any]],
    rows: Iterator[_CaseRow],
) -> str:
    run_id, dataset, passed, score, document = head
    with store.db:
        store.db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run_id,
                time.time(),
                dataset.get("name"),
                dataset.get("digest"),
                int(passed),
                score,
                json.dumps(document),
            ),
        )
        cases = enumerate(rows)
        while chunk := list(itertools.islice(cases, _CHUNK)):  # cases may outnumber memory
            store.db.executemany(
                "INSERT INTO case_results VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(run_id, i, c[0], c[1], int(c[2]), c[3], c[4]) for i, c in chunk],
            )
            scored = {(t, run_id, i, int(c[2])) for i, c in chunk for t in c[5]}
            if scored:
                store.db.executemany("INSERT INTO result_traces VALUES (?, ?, ?, ?)", scored)
    return str(run_id)


_CHUNK = 500
"""Case rows per ``executemany`` when a run is saved."""


def load_run_head(store: Store, run_id: str) -> dict[str, Any]:
    """A stored run document without its cases.

    Raises:
        StoreError: no run with that id.
    """
    row = store.db.execute("SELECT run FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.location}")
    return with_current_names(json.loads(row[0]))


def load_run(store: Store, run_id: str) -> dict[str, Any]:
    """A stored run document, cases in their original order.

    Raises:
        StoreError: no run with that id.
    """
    doc = load_run_head(store, run_id)
    doc["cases"] = [
        case_with_current_names(orjson.loads(r[0]))
        for r in store.db.execute(
            "SELECT result FROM case_results WHERE run_id = ? ORDER BY position", (run_id,)
        )
    ]
    return doc


def iter_run_cases(store: Store, run_id: str, batch_size: int = 500) -> Iterator[dict[str, Any]]:
    """The case entries of a stored run in their original order, read ``batch_size`` at a
    time through a cursor (:func:`~tracegrade.store.scan.query_batches`): never all held."""
    sql = "SELECT result FROM case_results WHERE run_id = ? ORDER BY position"
    for rows in query_batches(store.db, sql, (run_id,), batch_size, "tracegrade_run_cases"):
        yield from (case_with_current_names(orjson.loads(row[0])) for row in rows)


def list_runs(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    """The most recent runs: id, dataset, passed, score."""
    rows = store.db.execute(
        "SELECT run_id, dataset_name, passed, score FROM runs"
        " ORDER BY created_at DESC, run_id DESC LIMIT ?",
        (limit,),
    )
    return [{"run_id": r[0], "dataset": r[1], "passed": bool(r[2]), "score": r[3]} for r in rows]


def set_baseline(store: Store, run_id: str) -> str:
    """Mark run ``run_id`` as its dataset's baseline (replacing the previous one); returns the
    dataset name.

    Raises:
        StoreError: no such run, or the run has no dataset (reference-free scoring).
    """
    row = store.db.execute("SELECT dataset_name FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.location}")
    if row[0] is None:
        raise StoreError(f"run {run_id} was scored without a dataset; a baseline needs one")
    with store.db:
        store.db.execute(
            "INSERT INTO run_baselines VALUES (?, ?, ?) ON CONFLICT (dataset_name) "
            "DO UPDATE SET run_id = excluded.run_id, set_at = excluded.set_at",
            (row[0], run_id, time.time()),
        )
    return str(row[0])


def baselines(store: Store) -> dict[str, str]:
    """Dataset name -> its baseline run id."""
    rows = store.db.execute("SELECT dataset_name, run_id FROM run_baselines").fetchall()
    return {str(name): str(run_id) for name, run_id in rows}


@dataclass(frozen=True)
class Gate:
    """The regression gate of a run scored with ``--baseline``: the run it was compared with
    (``base_run_id``; whether it was its dataset's baseline), the verdict, how many cases
    regressed, and the verdict's reasons."""

    base_run_id: str
    base_is_baseline: bool
    regression: bool
    regressed: int
    reasons: tuple[str, ...] = ()


def save_gate(store: Store, run_id: str, gate: Gate) -> None:
    """Record the gate of the stored run ``run_id`` (replacing an earlier one)."""
    with store.db:
        store.db.execute(
            "INSERT INTO run_gates VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO UPDATE "
            "SET base_run_id = excluded.base_run_id, base_is_baseline = excluded.base_is_baseline,"
            " regression = excluded.regression, regressed = excluded.regressed,"
            " reasons = excluded.reasons, gated_at = excluded.gated_at",
            (
                run_id,
                gate.base_run_id,
                int(gate.base_is_baseline),
                int(gate.regression),
                gate.regressed,
                json.dumps(list(gate.reasons)),
                time.time(),
            ),
        )


def gates(store: Store, run_ids: Sequence[str]) -> dict[str, Gate]:
    """Run id -> its :class:`Gate`, for the runs of ``run_ids`` that were gated."""
    found: dict[str, Gate] = {}
    for start in range(0, len(run_ids), 500):
        chunk = list(run_ids[start : start + 500])
        marks = ", ".join("?" for _ in chunk)
        rows = store.db.execute(
            "SELECT run_id, base_run_id, base_is_baseline, regression, regressed, reasons"
            f" FROM run_gates WHERE run_id IN ({marks})",
            tuple(chunk),
        )
        for run_id, base, is_baseline, regression, regressed, reasons in rows:
            found[str(run_id)] = Gate(
                str(base), bool(is_baseline), bool(regression), int(regressed),
                tuple(json.loads(reasons)),
            )  # fmt: skip
    return found


def run_datasets(store: Store) -> list[str | None]:
    """The dataset names of the stored runs, the most recently run first (None: the runs
    scored without a dataset)."""
    rows = store.db.execute(
        "SELECT dataset_name FROM runs GROUP BY dataset_name ORDER BY MAX(created_at) DESC"
    )
    return [None if r[0] is None else str(r[0]) for r in rows]


def run_headers(
    store: Store,
    *,
    dataset: str | None = None,
    label: str | None = None,
    limit: int = 20,
    reference_free: bool = False,
) -> list[dict[str, Any]]:
    """Stored runs newest first, each its document without ``cases`` (``run`` and
    ``summary``), filtered by dataset name (``reference_free``: only the runs scored without
    a dataset) and by label (exact, or a substring when it is not an exact match of any
    run)."""
    sql, params = "SELECT run FROM runs", []
    if reference_free:
        sql += " WHERE dataset_name IS NULL"
    elif dataset is not None:
        sql, params = sql + " WHERE dataset_name = ?", [dataset]
    rows = store.db.execute(sql + " ORDER BY created_at DESC, run_id DESC", tuple(params))
    headers = [with_current_names(json.loads(r[0])) for r in rows]
    if label is not None:
        labels = [read_head(h).run.label for h in headers]
        exact = [h for h, found in zip(headers, labels, strict=True) if found == label]
        headers = exact or [
            h for h, found in zip(headers, labels, strict=True) if label in (found or "")
        ]
    return headers[:limit]


def recent_runs(
    store: Store,
    *,
    dataset: str | None = None,
    label: str | None = None,
    limit: int = 20,
    reference_free: bool = False,
) -> list[dict[str, Any]]:
    """Whole run documents (with ``cases``) of :func:`run_headers`, newest first."""
    headers = run_headers(
        store, dataset=dataset, label=label, limit=limit, reference_free=reference_free
    )
    return [load_run(store, read_head(h).run.run_id) for h in headers]


_LATEST = re.compile(r"^latest(?:~(\d+))?$")


def resolve_run(store: Store, ref: str, *, dataset: str | None = None) -> str:
    """The run id a reference names (see the module docstring); ``latest`` and ``baseline``
    are taken within ``dataset`` when given.

    Raises:
        StoreError: nothing matches, the prefix is ambiguous, or ``baseline`` without one set
            (or, without ``dataset``, with baselines for several datasets).
    """
    if match := _LATEST.match(ref):
        back = int(match.group(1) or 0)
        found = run_headers(store, dataset=dataset, limit=back + 1)
        if len(found) <= back:
            where = f" of dataset {dataset!r}" if dataset else ""
            raise StoreError(f"{ref}: only {len(found)} stored run(s){where} in {store.location}")
        return read_head(found[back]).run.run_id
    if ref == "baseline":
        return _baseline(store, dataset)
    rows = store.db.execute(
        "SELECT run_id FROM runs WHERE substr(run_id, 1, ?) = ? ORDER BY run_id",
        (len(ref), ref),
    ).fetchall()
    ids = [str(r[0]) for r in rows]
    if ref in ids:
        return ref
    if len(ids) != 1:
        what = "no run" if not ids else f"{len(ids)} runs ({', '.join(ids[:5])})"
        raise StoreError(f"{ref!r}: {what} match in {store.location} (see `tracegrade runs`)")
    return ids[0]


def _baseline(store: Store, dataset: str | None) -> str:
    marked = baselines(store)
    if dataset is not None:
        if dataset not in marked:
            raise StoreError(
                f"dataset {dataset!r} has no baseline in {store.location}; set one with "
                "`tracegrade runs baseline RUN`"
            )
        return marked[dataset]
    if len(marked) != 1:
        raise StoreError(
            "baseline: "
            + ("no baseline set" if not marked else f"{len(marked)} datasets have one")
            + f" in {store.location}; use `tracegrade runs baseline RUN` or give a run id"
        )
    return next(iter(marked.values()))
