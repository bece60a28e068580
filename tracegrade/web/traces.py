"""Pages about stored traces (eval runs and production traffic alike): the Traces list and one
trace as a waterfall with its reference-free scores, the evaluation results and end-user
feedback others recorded about it (``gen_ai.evaluation.result`` log records, a feedback span
attribute, ``POST /v1/feedback``: :mod:`tracegrade.store.feedback`), lint findings, and a form
to start a golden case from it."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from tracegrade.config import Config
from tracegrade.normalize import normalize_trace
from tracegrade.normalize.lint import lint
from tracegrade.pipeline.conversations import conversation_feedback
from tracegrade.pipeline.views import reference_free
from tracegrade.spans import TraceData
from tracegrade.store import browse
from tracegrade.web import waterfall
from tracegrade.web.base import not_found, render, twin, ui_of
from tracegrade.web.editor import dataset_choices


async def traces_page(request: Request) -> Response:
    """The store's traces, newest first; ``?before=`` is the page cursor."""
    page = browse.list_trace_page(
        ui_of(request).store, before=request.query_params.get("before") or None
    )
    return render(request, "traces.html", {"traces": page.rows, "next_before": page.next_before})


async def trace_page(request: Request) -> Response:
    """One trace: waterfall, reference-free scores, recorded evaluations, lint findings, "new
    case from this trace"."""
    trace_id = request.path_params["trace_id"].lower()
    ui = ui_of(request)
    loaded = ui.store.load([trace_id])
    if not loaded or not loaded[0].spans:
        return not_found(request, f"no trace {trace_id!r} in the store")
    data = await run_in_threadpool(analysed, loaded[0], ui.scoring_config)
    data["trace_id"] = trace_id
    data["evaluations"] = [f.to_dict() for f in conversation_feedback(ui.store, [trace_id])]
    data["datasets"] = dataset_choices(ui)
    return render(request, "trace.html", data)


def analysed(trace_data: TraceData, config: Config) -> dict[str, Any]:
    """One stored trace normalised, drawn, scored and linted: run in a worker thread, never
    on the event loop, so a hostile trace slows its own page only."""
    trace = normalize_trace(trace_data)
    return {
        "inputs": list(trace.user_inputs),
        "final_output": trace.final_output,
        "waterfall": waterfall.build(trace_data, config.pricing),
        "scores": reference_free(trace, config),
        "lint": lint(trace).to_dict(),
    }


ROUTES = [*twin("/traces", traces_page), *twin("/traces/{trace_id}", trace_page)]
