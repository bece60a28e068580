"""The Compare page: two stored runs side by side, case by case (improved / regressed /
unchanged, ...), with the structural diff of a changed case's two traces.

The comparison itself is :func:`tracegrade.compare.compare_runs` (the same one ``tracegrade
compare`` and ``--baseline`` use); this module only loads the runs and the traces of the
changed cases from the store and lays the result out.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tracegrade.compare import Comparison, compare_runs
from tracegrade.config import Pricing
from tracegrade.normalize import normalize_trace
from tracegrade.store import browse
from tracegrade.store.runs import load_run
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace
from tracegrade.web.app import render, twin, ui_of
from tracegrade.web.runs import trace_ids_of

CHANGED = ("regressed", "improved")


def _changed_traces(
    store: Store, docs: tuple[dict[str, Any], dict[str, Any]], comparison: Comparison
) -> dict[str, AgentTrace]:
    """The normalised traces of the cases whose status changed, by trace id."""
    changed = {c.case_id for c in comparison.cases if c.status in CHANGED}
    ids = [
        trace_id
        for doc in docs
        for case in doc["cases"]
        if str(case.get("case_id")) in changed
        for trace_id in trace_ids_of(case)
    ]
    return {t.trace_id: normalize_trace(t) for t in store.load(ids) if t.spans}


def compare(
    store: Store, base_id: str, current_id: str, pricing: Pricing
) -> tuple[Comparison, dict[str, Any]]:
    """The comparison of two stored runs (structural diffs from their traces when stored),
    and per side the case id -> position map for links.

    Raises:
        StoreError: either run is not stored.
    """
    base, current = load_run(store, base_id), load_run(store, current_id)
    first = compare_runs(base, current)
    traces = _changed_traces(store, (base, current), first)
    comparison = compare_runs(base, current, traces=traces, pricing=pricing) if traces else first
    positions = {
        side: {str(c.get("case_id")): i for i, c in enumerate(doc["cases"])}
        for side, doc in (("base", base), ("current", current))
    }
    return comparison, positions


_ORDER = {"regressed": 0, "flaky": 1, "improved": 2, "new": 3, "removed": 4, "unchanged": 5}


async def compare_page(request: Request) -> Response:
    """``?base=RUN&current=RUN``; without both, a form to pick the runs."""
    ui = ui_of(request)
    store = ui.store
    base_id = request.query_params.get("base") or ""
    current_id = request.query_params.get("current") or ""
    choices = browse.list_run_page(store, limit=100).rows
    data: dict[str, Any] = {"base": base_id, "current": current_id, "choices": choices}
    if base_id and current_id:
        comparison, positions = compare(store, base_id, current_id, ui.scoring_config.pricing)
        data["comparison"] = comparison
        data["cases"] = sorted(comparison.cases, key=lambda c: _ORDER.get(c.status, 9))
        data["positions"] = positions
    if request.url.path.endswith(".json"):
        comparison_json = data["comparison"].to_json() if "comparison" in data else None
        return render(request, "compare.html", {"comparison": comparison_json})
    return render(request, "compare.html", data)


ROUTES = [*twin("/compare", compare_page)]
