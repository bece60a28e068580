"""The LLM judge's verdicts on stored traces, read back from stored runs (for
``dataset build``: a case built from a judged trace records what the judge said)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from tracegrade.store.traces import Store


def judge_verdicts(store: Store, trace_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Trace id -> ``{"score", "reason", "run_id"}`` of the latest stored run that judged it
    (traces never judged are absent)."""
    out: dict[str, dict[str, Any]] = {}
    ids = list(dict.fromkeys(trace_ids))
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        rows = store.db.execute(
            "SELECT c.trace_id, c.run_id, c.result FROM case_results c JOIN runs r"
            f" ON r.run_id = c.run_id WHERE c.trace_id IN ({','.join('?' * len(chunk))})"
            " ORDER BY r.created_at",
            chunk,
        )
        for trace_id, run_id, result in rows:
            judge = (json.loads(result).get("details") or {}).get("judge") or {}
            if judge.get("value") is not None:
                out[trace_id] = {
                    "score": judge["value"],
                    "reason": judge.get("reason"),
                    "run_id": run_id,
                }
    return out
