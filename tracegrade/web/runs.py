"""Pages about stored runs: the Runs list, a dataset's Trends, one Run, one Case result.

Runs come from :mod:`tracegrade.store.browse` (the stored run documents,
:mod:`tracegrade.report.document`); the Run and Case pages are
:func:`tracegrade.web.pages.run_page` and :func:`~tracegrade.web.pages.case_page`
(the case's traces normalised, drawn as waterfalls and as a chat), run in a worker thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tracegrade.pipeline.run_history import marked_runs
from tracegrade.run_document import CaseEntry
from tracegrade.store import browse
from tracegrade.web.base import not_found, render, render_offloaded, twin, ui_of
from tracegrade.web.charts import trend_charts
from tracegrade.web.pages import case_page as case_view
from tracegrade.web.pages import run_page as run_view

SORTS: dict[str, Callable[[CaseEntry], Any]] = {
    "failed": lambda c: (c.passed, c.score if c.score is not None else -1),
    "score": lambda c: c.score if c.score is not None else -1,
    "case": lambda c: str(c.case_id),
    "duration": lambda c: (c.usage.duration_ms if c.usage else None) or 0,
    "cost": lambda c: (c.usage.cost_usd if c.usage else None) or 0,
}
"""Sort keys of the Run page's case table (``?sort=KEY&desc=1``); ``failed`` (the default)
puts failed cases first, lowest score first."""


async def runs_page(request: Request) -> Response:
    """The stored runs, newest first; ``?dataset=``, ``?label=``, ``?before=`` (page cursor).
    Each dataset's baseline is marked, and a run scored with ``--baseline`` says how its gate
    went ("regressed vs baseline (N cases)") with a link to that comparison."""
    store = ui_of(request).store
    query = request.query_params
    page = browse.list_run_page(
        store,
        dataset=query.get("dataset") or None,
        label=query.get("label") or None,
        before=query.get("before") or None,
    )
    data = {
        "runs": marked_runs(store, page.rows),
        "next_before": page.next_before,
        "datasets": browse.dataset_names(store),
        "dataset": query.get("dataset") or "",
        "label": query.get("label") or "",
    }
    return render(request, "runs.html", data)


async def home(request: Request) -> Response:
    """``/`` shows the Runs page."""
    return await runs_page(request)


async def trends_page(request: Request) -> Response:
    """Score, pass rate, hallucination rate, p95 latency and cost over a dataset's runs
    (``?dataset=``, default the first dataset with runs)."""
    store = ui_of(request).store
    names = browse.dataset_names(store)
    dataset = request.query_params.get("dataset") or (names[0] if names else "")
    runs = browse.trend(store, dataset) if dataset else []
    data = {"datasets": names, "dataset": dataset, "runs": runs, "charts": trend_charts(runs)}
    return render(request, "trends.html", data)


async def run_page(request: Request) -> Response:
    """One run: summary, axes, per-tag/category breakdown, the case table with reasons."""
    sort = request.query_params.get("sort", "failed")
    data = await ui_of(request).offload(
        run_view,
        request.path_params["run_id"],
        SORTS.get(sort, SORTS["failed"]),
        request.query_params.get("desc") == "1",
    )
    data["sort"] = sort if sort in SORTS else "failed"
    return render(request, "run.html", data)


async def case_page(request: Request) -> Response:
    """One case result: inputs, final answer, the conversation as a chat, scorers, judge,
    follow-ups, waterfalls (or why the traces are not shown)."""
    ui = ui_of(request)
    try:
        position = int(request.path_params["position"])
    except ValueError:
        return not_found(request, "a case position is a number")
    data = await ui.offload(
        case_view, request.path_params["run_id"], position, ui.scoring_config.pricing
    )
    return await render_offloaded(request, "case.html", data)


ROUTES = [
    *twin("/", home),
    *twin("/runs", runs_page),
    *twin("/trends", trends_page),
    *twin("/runs/{run_id}", run_page),
    *twin("/runs/{run_id}/cases/{position}", case_page),
]
