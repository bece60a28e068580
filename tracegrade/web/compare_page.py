"""The Compare page: two stored runs side by side, case by case (improved / regressed /
unchanged, ...), with the structural diff of a changed case's two traces; and one case of two
runs side by side (:func:`tracegrade.web.pages.side_by_side`: the answers and the
conversations, each run's verdict and reasons).

The comparison itself is :func:`tracegrade.compare.compare_runs` (the same one ``tracegrade
compare`` and ``--baseline`` use); this module only loads the runs and the traces of the
changed cases from the store and lays the result out.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tracegrade.errors import StoreError
from tracegrade.pipeline.run_history import compare_stored, resolve_pair
from tracegrade.store import browse
from tracegrade.store.runs import baselines
from tracegrade.web.base import not_found, render, render_offloaded, twin, ui_of
from tracegrade.web.pages import side_by_side

_ORDER = {"regressed": 0, "flaky": 1, "improved": 2, "new": 3, "removed": 4, "unchanged": 5}


async def compare_page(request: Request) -> Response:
    """``?base=REF&current=REF`` (a run id or prefix, ``baseline``, ``latest``, ``latest~N``,
    as ``tracegrade compare`` takes them); without either, the baseline of the latest run's
    dataset against the latest run, when there is one; else the form to pick two runs."""
    ui = ui_of(request)
    store = ui.store
    base_ref = request.query_params.get("base") or ""
    current_ref = request.query_params.get("current") or ""
    marked = set(baselines(store).values())
    choices = browse.list_run_page(store, limit=100).rows
    data: dict[str, Any] = {"choices": choices, "marked": marked, "base": "", "current": ""}
    defaulted = not base_ref and not current_ref
    try:
        base_id, current_id = resolve_pair(store, base_ref or "baseline", current_ref or "latest")
    except StoreError as exc:
        if not defaulted:
            data["error"] = str(exc)
        return _render(request, data)
    data.update(base=base_id, current=current_id, refs=(base_ref, current_ref))
    comparison, positions = compare_stored(store, base_id, current_id, ui.scoring_config.pricing)
    data["comparison"] = comparison
    data["cases"] = sorted(comparison.cases, key=lambda c: _ORDER.get(c.status, 9))
    data["positions"] = positions
    return _render(request, data)


def _render(request: Request, data: dict[str, Any]) -> Response:
    if request.url.path.endswith(".json"):
        comparison_json = data["comparison"].to_json() if "comparison" in data else None
        return render(request, "compare.html", {"comparison": comparison_json})
    return render(request, "compare.html", data)


async def case_side_by_side(request: Request) -> Response:
    """``?base=RUN&current=RUN&case=CASE_ID``: one case's answers and conversations in two
    runs, side by side."""
    params = request.query_params
    base, current, case_id = params.get("base"), params.get("current"), params.get("case")
    if not (base and current and case_id):
        return not_found(request, "no case to compare: give base, current and case")
    data = await ui_of(request).offload(side_by_side, base, current, case_id)
    return await render_offloaded(request, "side_by_side.html", data)


ROUTES = [*twin("/compare/case", case_side_by_side), *twin("/compare", compare_page)]
