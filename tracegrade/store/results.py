"""Each trace's *current* result, and the results a window counts.

A trace may hold several stored results (``follow_results``): one per version a worker
scored (late spans make a new version, scored again) and per evaluator (a backfill with a new
dataset version scores it again). Its **current result** is the one of its highest version,
the latest scored among those; an ``excluded`` row as current result (a trace found to be an
eval run's after it was scored) means the trace counts nowhere. Everything that counts traces
(windows, alerts, exported figures, the dashboard's verdicts) counts each trace once, by its
current result.

**Windows** count *live* results only (those ``score --follow`` stored; a backfill scores
stored traffic, not a window's): a trace belongs to the window in which a follower first
scored it, its **anchor**, and counts there by its current live result. A trace re-scored
after its window closed changes that closed window, never the current one:
:func:`late_anchors` names the windows whose traces changed, so followers re-aggregate them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracegrade.store.database import Database
from tracegrade.store.follow import ResultRow

_BATCH = 500
_ROW = (
    "f.service, f.passed, f.score, f.hallucinated, f.tool_calls, f.failed_tool_calls,"
    " f.duration_ms, f.cost_usd, f.evaluator, f.judge_cost_usd, f.judge_skipped, f.excluded,"
    " f.trace_id"
)
_NEWER = (
    "SELECT 1 FROM follow_results g WHERE g.trace_id = f.trace_id{live}"
    " AND (g.version > f.version OR (g.version = f.version AND (g.scored_at > f.scored_at"
    " OR (g.scored_at = f.scored_at AND g.evaluator > f.evaluator))))"
)
"""A result of the same trace that supersedes ``f`` (``{live}``: among live results only)."""
CURRENT = f"NOT EXISTS ({_NEWER.format(live='')})"
"""SQL: ``f`` (a ``follow_results`` row) is its trace's current result."""
CURRENT_LIVE = f"f.live = 1 AND NOT EXISTS ({_NEWER.format(live=' AND g.live = 1')})"
"""SQL: ``f`` is its trace's current live result (what windows count)."""


def _row(r: Sequence[Any]) -> ResultRow:
    return ResultRow(
        service=r[0],
        passed=bool(r[1]),
        score=r[2],
        hallucinated=bool(r[3]),
        tool_calls=int(r[4]),
        failed_tool_calls=int(r[5]),
        duration_ms=r[6],
        cost_usd=r[7],
        result={},
        evaluator=r[8],
        judge_cost_usd=r[9],
        judge_skipped=bool(r[10]),
        excluded=bool(r[11]),
        trace_id=r[12],
    )


def window_results(db: Database, start_s: float, end_s: float) -> list[ResultRow]:
    """The current live results (without their JSON) of the traces anchored in
    [start_s, end_s) (Unix s; see the module docstring), excluded traces left out."""
    rows = db.execute(
        f"SELECT {_ROW} FROM follow_results f WHERE {CURRENT_LIVE} AND f.excluded = 0"
        " AND f.trace_id IN (SELECT a.trace_id FROM follow_results a WHERE a.live = 1"
        " AND a.scored_at >= ? AND a.scored_at < ? AND NOT EXISTS (SELECT 1 FROM"
        " follow_results b WHERE b.trace_id = a.trace_id AND b.live = 1 AND b.scored_at < ?))"
        " ORDER BY f.trace_id",
        (start_s, end_s, start_s),
    )
    return [_row(r) for r in rows]


def late_anchors(db: Database, after_s: float, until_s: float) -> list[float]:
    """The anchors (Unix s) of the traces that got a live result scored in (after_s,
    until_s] which is not their first: the windows holding them changed."""
    rows = db.execute(
        "SELECT DISTINCT (SELECT MIN(b.scored_at) FROM follow_results b"
        " WHERE b.trace_id = a.trace_id AND b.live = 1)"
        " FROM follow_results a WHERE a.live = 1 AND a.scored_at > ? AND a.scored_at <= ?"
        " AND EXISTS (SELECT 1 FROM follow_results c WHERE c.trace_id = a.trace_id"
        " AND c.live = 1 AND c.scored_at < a.scored_at)",
        (after_s, until_s),
    )
    return sorted(float(r[0]) for r in rows if r[0] is not None)


def current_results(db: Database, trace_ids: Sequence[str]) -> dict[str, ResultRow]:
    """Trace id -> its current result (module docstring; excluded ones included, marked),
    for those of ``trace_ids`` that have one."""
    out: dict[str, ResultRow] = {}
    ids = sorted(set(trace_ids))
    for start in range(0, len(ids), _BATCH):
        part = ids[start : start + _BATCH]
        rows = db.execute(
            f"SELECT {_ROW} FROM follow_results f WHERE f.trace_id IN"
            f" ({','.join('?' * len(part))}) AND {CURRENT}",
            part,
        )
        out.update((r[12], _row(r)) for r in rows)
    return out


def save_evaluator(db: Database, evaluator_id: str, identity: dict[str, Any]) -> None:
    """Record an evaluator's identity (:mod:`tracegrade.scoring.identity`) under its id,
    once; its results name it by id."""
    with db:
        db.execute(
            f"INSERT INTO evaluators (evaluator_id, identity, first_seen) VALUES (?, ?, {db.clock})"
            " ON CONFLICT (evaluator_id) DO NOTHING",
            (evaluator_id, json.dumps(identity, sort_keys=True)),
        )


def evaluators(db: Database) -> dict[str, dict[str, Any]]:
    """Every recorded evaluator: id -> identity."""
    rows = db.execute("SELECT evaluator_id, identity FROM evaluators ORDER BY first_seen")
    return {r[0]: json.loads(r[1]) for r in rows}
