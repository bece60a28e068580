"""Small run documents (``tracegrade.run/1``) for the comparison's unit tests."""

from __future__ import annotations

from typing import Any


def case(
    case_id: str,
    score: float,
    *,
    passed: bool | None = None,
    attempts: list[float] | None = None,
    threshold: float = 0.7,
    duration_ms: float = 100.0,
    cost_usd: float = 0.01,
    **extra: Any,
) -> dict[str, Any]:
    """A case entry; ``attempts`` adds ``tracegrade run --repeat`` attempts with these scores."""
    entry: dict[str, Any] = {
        "case_id": case_id,
        "trace_id": f"trace-{case_id}",
        "passed": score >= threshold if passed is None else passed,
        "score": score,
        "scores": {"tool_correctness": score},
        "axes": {"correctness": score},
        "reasons": [] if score >= threshold else [f"{case_id} is below threshold"],
        "tags": [],
        "usage": {"duration_ms": duration_ms, "cost_usd": cost_usd, "input_tokens": 10},
        "details": {},
        **extra,
    }
    if attempts is not None:
        entry["attempts"] = [
            {"repeat": i, "passed": s >= threshold, "score": s} for i, s in enumerate(attempts)
        ]
        entry["flaky"] = len({s >= threshold for s in attempts}) > 1
    return entry


def run(run_id: str, cases: list[dict[str, Any]], **run_fields: Any) -> dict[str, Any]:
    """A run document around ``cases`` (summary score: their mean)."""
    scores = [c["score"] for c in cases]
    return {
        "schema_version": "tracegrade.run/1",
        "run": {"run_id": run_id, "dataset": {"name": "shop", "digest": "d1"}, **run_fields},
        "summary": {
            "score": sum(scores) / len(scores) if scores else None,
            "axes": {"correctness": sum(scores) / len(scores) if scores else None},
            "scorers": {},
        },
        "cases": cases,
    }
