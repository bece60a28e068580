"""Stored runs: each scoring run's document (:mod:`tracegrade.report.document`) kept in the
trace store's database, so later commands can list runs, compare two runs case by case, and
flag regressions against a baseline."""

from __future__ import annotations

import json
import time
from typing import Any

from tracegrade.errors import StoreError
from tracegrade.store.traces import Store


def save_run(store: Store, doc: dict[str, Any]) -> str:
    """Store a run document and its case results; returns the run id."""
    run = doc["run"]
    with store.db:
        store.db.execute(
            "INSERT INTO runs VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                run["run_id"],
                time.time(),
                (run["dataset"] or {}).get("name"),
                (run["dataset"] or {}).get("digest"),
                int(run["passed"]),
                doc["summary"]["score"],
                json.dumps({k: v for k, v in doc.items() if k != "cases"}),
            ),
        )
        store.db.executemany(
            "INSERT INTO case_results VALUES (?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    run["run_id"],
                    i,
                    c["case_id"],
                    c["trace_id"],
                    int(c["passed"]),
                    c["score"],
                    json.dumps(c),
                )
                for i, c in enumerate(doc["cases"])
            ],
        )
    return run["run_id"]


def load_run(store: Store, run_id: str) -> dict[str, Any]:
    """A stored run document, cases in their original order.

    Raises:
        StoreError: no run with that id.
    """
    row = store.db.execute("SELECT run FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.location}")
    doc = json.loads(row[0])
    doc["cases"] = [
        json.loads(r[0])
        for r in store.db.execute(
            "SELECT result FROM case_results WHERE run_id = ? ORDER BY position", (run_id,)
        )
    ]
    return doc


def list_runs(store: Store, limit: int = 20) -> list[dict[str, Any]]:
    """The most recent runs: id, dataset, passed, score."""
    rows = store.db.execute(
        "SELECT run_id, dataset_name, passed, score FROM runs ORDER BY created_at DESC, run_id DESC LIMIT ?",
        (limit,),
    )
    return [{"run_id": r[0], "dataset": r[1], "passed": bool(r[2]), "score": r[3]} for r in rows]
