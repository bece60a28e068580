"""Pages about stored runs: the Runs list, a dataset's Trends, one Run, one Case result.

Runs come from :mod:`tracegrade.store.runs` and :mod:`tracegrade.store.browse` (the stored
run documents, :mod:`tracegrade.report.document`); a case result's traces are read from the
store and drawn as waterfalls (:mod:`.waterfall`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from tracegrade.config import Pricing
from tracegrade.normalize import normalize_trace
from tracegrade.pipeline.views import trace_ids_of
from tracegrade.spans import TraceData
from tracegrade.store import browse
from tracegrade.store.runs import load_run
from tracegrade.trace import AgentTrace
from tracegrade.web import waterfall
from tracegrade.web.base import not_found, render, twin, ui_of
from tracegrade.web.charts import trend_charts

SORTS = {
    "failed": lambda c: (c["passed"], c["score"] if c["score"] is not None else -1),
    "score": lambda c: c["score"] if c["score"] is not None else -1,
    "case": lambda c: str(c["case_id"]),
    "duration": lambda c: (c.get("usage") or {}).get("duration_ms") or 0,
    "cost": lambda c: (c.get("usage") or {}).get("cost_usd") or 0,
}
"""Sort keys of the Run page's case table (``?sort=KEY&desc=1``); ``failed`` (the default)
puts failed cases first, lowest score first."""


async def runs_page(request: Request) -> Response:
    """The stored runs, newest first; ``?dataset=``, ``?label=``, ``?before=`` (page cursor)."""
    store = ui_of(request).store
    query = request.query_params
    page = browse.list_run_page(
        store,
        dataset=query.get("dataset") or None,
        label=query.get("label") or None,
        before=query.get("before") or None,
    )
    data = {
        "runs": page.rows,
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


def breakdown(cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tag and per ``metadata.category``: cases, passed, pass rate, mean score."""
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for case in cases:
        for tag in case.get("tags") or ():
            groups[f"tag: {tag}"].append(case)
        category = (case.get("metadata") or {}).get("category") or case.get("category")
        if category:
            groups[f"category: {category}"].append(case)
    out = []
    for name in sorted(groups):
        members = groups[name]
        scores = [c["score"] for c in members if c.get("score") is not None]
        passed = sum(bool(c.get("passed")) for c in members)
        out.append(
            {
                "group": name,
                "cases": len(members),
                "passed": passed,
                "pass_rate": passed / len(members),
                "score": sum(scores) / len(scores) if scores else None,
            }
        )
    return out


async def run_page(request: Request) -> Response:
    """One run: summary, axes, per-tag/category breakdown, the case table with reasons."""
    doc = load_run(ui_of(request).store, request.path_params["run_id"])
    cases = [{**c, "position": i} for i, c in enumerate(doc["cases"])]
    sort = request.query_params.get("sort", "failed")
    key = SORTS.get(sort, SORTS["failed"])
    cases.sort(key=key, reverse=request.query_params.get("desc") == "1")
    dataset = (doc["run"].get("dataset") or {}).get("name")
    others = browse.list_run_page(ui_of(request).store, dataset=dataset, limit=100).rows
    data = {
        "run": doc["run"],
        "summary": doc["summary"],
        "others": others,
        "cases": cases,
        "breakdown": breakdown(doc["cases"]),
        "sort": sort if sort in SORTS else "failed",
    }
    return render(request, "run.html", data)


async def case_page(request: Request) -> Response:
    """One case result: inputs, final answer, scorers, judge, follow-ups, waterfalls."""
    ui = ui_of(request)
    run_id = request.path_params["run_id"]
    try:
        position = int(request.path_params["position"])
    except ValueError:
        return not_found(request, "a case position is a number")
    head = browse.load_run_head(ui.store, run_id)
    case = browse.load_case_result(ui.store, run_id, position)
    traces = [t for t in ui.store.load(trace_ids_of(case)) if t.spans]
    pricing = ui.scoring_config.pricing
    # normalised and drawn in a worker thread, never on the event loop
    normalized, waterfalls = await run_in_threadpool(_drawn, traces, pricing)
    data = {
        "run": head["run"],
        "case": case,
        "position": position,
        "inputs": [i for t in normalized for i in t.user_inputs],
        "final_output": normalized[-1].final_output if normalized else None,
        "judge": (case.get("details") or {}).get("judge"),
        "followups": [
            {"repeat": a.get("repeat"), **m}
            for a in case.get("attempts") or ()
            for m in a.get("followup_messages") or ()
        ],
        "waterfalls": waterfalls,
    }
    return render(request, "case.html", data)


def _drawn(traces: list[TraceData], pricing: Pricing) -> tuple[list[AgentTrace], list[Any]]:
    """The traces normalised, and their waterfalls."""
    return [normalize_trace(t) for t in traces], [waterfall.build(t, pricing) for t in traces]


ROUTES = [
    *twin("/", home),
    *twin("/runs", runs_page),
    *twin("/trends", trends_page),
    *twin("/runs/{run_id}", run_page),
    *twin("/runs/{run_id}/cases/{position}", case_page),
]
