"""Pages about stored traces (eval runs and production traffic alike): the Traces list with its
search (service, time range, verdict, tool, text), and one trace as a waterfall with its
conversation as a chat, its reference-free scores, the evaluation results and end-user feedback
others recorded about it (``gen_ai.evaluation.result`` log records, a feedback span attribute,
``POST /v1/feedback``: :mod:`tracegrade.store.feedback`), lint findings, and a form to start a
golden case from it. The search is :func:`tracegrade.web.trace_search.find_traces`, the
trace :func:`tracegrade.web.pages.trace_page`; both run in a worker thread."""

from __future__ import annotations

import datetime as dt
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from tracegrade._util.unix_time import unix_nano_of
from tracegrade.errors import StoreError
from tracegrade.store.search import UNIX_NANO_MAX, VERDICTS, TraceQuery
from tracegrade.web.base import not_found, render, render_offloaded, twin, ui_of
from tracegrade.web.editor import dataset_choices
from tracegrade.web.pages import trace_page as trace_view
from tracegrade.web.trace_search import find_traces

FILTERS = ("service", "since", "until", "verdict", "tool", "q")
"""The Traces page's query parameters (``since``/``until``: UTC, ``YYYY-MM-DDTHH:MM``)."""


def _unix_nano(name: str, text: str) -> int | None:
    if not text:
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        raise StoreError(
            f"bad {name} time {text!r}: use YYYY-MM-DDTHH:MM (UTC), e.g. 2026-11-27T09:30"
        ) from None
    nano = unix_nano_of(moment)
    if not 0 <= nano <= UNIX_NANO_MAX:
        raise StoreError(
            f"bad {name} time {text!r}: out of range, use a time between 1970-01-01 and"
            " 2262-04-11 (UTC)"
        )
    return nano


def parse_query(params: Any) -> TraceQuery:
    """The search in the query string (see :data:`FILTERS`).

    Raises:
        StoreError: a time that is not ISO 8601 or is outside 1970-01-01 .. 2262-04-11, or an
            unknown verdict (a 400 page).
    """
    verdict = params.get("verdict") or None
    if verdict is not None and verdict not in VERDICTS:
        raise StoreError(f"bad verdict {verdict!r}: use one of {', '.join(VERDICTS)}")
    return TraceQuery(
        service=params.get("service") or None,
        since_unix_nano=_unix_nano("since", params.get("since") or ""),
        until_unix_nano=_unix_nano("until", params.get("until") or ""),
        verdict=verdict,
        tool=params.get("tool") or None,
        text=(params.get("q") or "").strip() or None,
    )


async def traces_page(request: Request) -> Response:
    """The store's traces, newest first, filtered (:data:`FILTERS`); ``?before=`` is the page
    cursor."""
    params = request.query_params
    query = parse_query(params)
    found = await ui_of(request).offload(find_traces, query, params.get("before") or None)
    data = {
        "traces": found.rows,
        "next_before": found.next_before,
        "pending": found.pending,
        "services": found.services,
        "tools": found.tools,
        "filters": {name: params.get(name) or "" for name in FILTERS},
        "uses_index": query.uses_index,
    }
    return render(request, "traces.html", data)


async def trace_page(request: Request) -> Response:
    """One trace: waterfall, chat, reference-free scores, recorded evaluations, lint, "new case
    from this trace"."""
    trace_id = request.path_params["trace_id"].lower()
    ui = ui_of(request)
    data = await ui.offload(trace_view, trace_id, ui.scoring_config)
    if data is None:
        return not_found(request, f"no trace {trace_id!r} in the store")
    data["datasets"] = dataset_choices(ui)
    return await render_offloaded(request, "trace.html", data)


ROUTES = [*twin("/traces", traces_page), *twin("/traces/{trace_id}", trace_page)]
