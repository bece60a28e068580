"""The Review pages: queues of stored conversations, one conversation at a time (the chat,
tracegrade's scores and reasons, end-user feedback, earlier labels) with a verdict form, skip,
progress, and "promote to a golden case"; and the Agreement page (every rater against the
labels and the feedback, and over time).

Who labels is the logged-in user (:func:`~.security.user_of`). Each page has its JSON twin.
Heavy work (reading, grouping and scoring conversations) runs in a worker thread.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tracegrade.curate.promote import CHOICES, CaseEdits
from tracegrade.errors import ConfigError, DatasetError
from tracegrade.pipeline._agreement import AgreementOptions, agreement, over_time
from tracegrade.pipeline._promote import STORE_PREFIX, promote
from tracegrade.pipeline.review import (
    LabelInput,
    QueueRule,
    build_queue,
    list_queues,
    next_item,
    queue_item,
    queue_progress,
    record_label,
    skip_item,
)
from tracegrade.store.review import AXES
from tracegrade.web.base import render, render_offloaded, twin, ui_of, utc_text
from tracegrade.web.charts import line_chart
from tracegrade.web.editor import editable_datasets
from tracegrade.web.pages import review_view
from tracegrade.web.security import state_changing, user_of


def _lines(form: FormData, name: str) -> list[str]:
    return [line.strip() for line in str(form.get(name) or "").splitlines() if line.strip()]


def _number(form: FormData, name: str) -> float | None:
    text = str(form.get(name) or "").strip()
    return float(text) if text else None


async def queues_page(request: Request, error: str | None = None, status: int = 200) -> Response:
    """The queues with their progress, and a form to build one from a rule."""
    queues = list_queues(ui_of(request).store)
    return render(request, "review.html", {"queues": queues, "error": error}, status_code=status)


def _rule(form: FormData) -> QueueRule:
    where = dict(item.split("=", 1) for item in _lines(form, "where") if "=" in item)
    values: dict[str, Any] = {
        "since": str(form.get("since") or "").strip() or None,
        "service": str(form.get("service") or "").strip() or None,
        "where": where,
        "failed": form.get("failed") == "on",
        "score_below": _number(form, "score_below"),
        "feedback": str(form.get("feedback") or "") or None,
        "sample": _number(form, "sample"),
    }
    return QueueRule.model_validate({k: v for k, v in values.items() if v not in (None, {}, False)})


@state_changing
async def create_queue(request: Request, form: FormData) -> Response:
    """Build a queue from the form's rule; back to the queues (with the error, if any)."""
    ui = ui_of(request)
    name = str(form.get("name") or "").strip()
    try:
        if not name:
            raise ConfigError("give the queue a name")
        rule = _rule(form)
        await run_in_threadpool(
            build_queue, ui.config.db, name, rule, user_of(request), ui.scoring_config
        )
    except (ConfigError, ValueError) as exc:
        return await queues_page(request, str(exc), 400)
    return RedirectResponse(f"/review/{quote(name, safe='')}", status_code=303)


async def next_page(request: Request) -> Response:
    """Claim the next conversation of the queue for this user and show it (or say it is done)."""
    queue = request.path_params["queue"]
    store = ui_of(request).store
    item = next_item(store, queue, user_of(request))
    if item is None:
        data = {"queue": queue, "progress": queue_progress(store, queue)}
        return render(request, "review_done.html", data)
    target = f"/review/{quote(queue, safe='')}/item?c={quote(item.conversation, safe='')}"
    return RedirectResponse(target, status_code=303)


async def item_page(request: Request) -> Response:
    """One conversation of a queue: chat, scores, feedback, labels, the forms."""
    ui = ui_of(request)
    queue = request.path_params["queue"]
    item = queue_item(ui.store, queue, request.query_params.get("c", ""))
    view = await run_in_threadpool(review_view, ui.store, item.trace_ids, ui.scoring_config)
    data = {
        "queue": queue,
        "item": {
            "conversation": item.conversation,
            "reason": item.reason,
            "state": item.state,
            "claimed_by": item.claimed_by,
            "position": item.position,
        },
        "progress": queue_progress(ui.store, queue),
        "view": view,
        "axes": AXES,
        "choices": CHOICES,
        "datasets": [{"key": k, "label": s.label} for k, s in editable_datasets(ui).items()],
        "promoted": request.query_params.get("promoted"),
        "promoted_to": request.query_params.get("to"),
        "error": request.query_params.get("error"),
    }
    return await render_offloaded(request, "review_item.html", data)


def _item_url(queue: str, conversation: str, **extra: str) -> str:
    query = "".join(f"&{k}={quote(v, safe='')}" for k, v in extra.items())
    return f"/review/{quote(queue, safe='')}/item?c={quote(conversation, safe='')}{query}"


@state_changing
async def label(request: Request, form: FormData) -> Response:
    """Record the verdict (per axis, note, corrected expectation) and go to the next item."""
    ui = ui_of(request)
    queue = request.path_params["queue"]
    item = queue_item(ui.store, queue, str(form.get("c") or ""))
    expectation = {
        key: value
        for key, value in (
            ("must_contain", _lines(form, "expect_must_contain")),
            ("must_not_contain", _lines(form, "expect_must_not_contain")),
            ("reference", str(form.get("expect_reference") or "").strip()),
        )
        if value
    }
    axes = {axis: str(form.get(f"axis_{axis}") or "") for axis in AXES}
    try:
        record_label(
            ui.store,
            LabelInput(
                item.trace_ids,
                user_of(request),
                str(form.get("verdict") or ""),
                {k: v for k, v in axes.items() if v},
                str(form.get("note") or "").strip() or None,
                expectation or None,
                queue,
                item.conversation,
            ),
        )
    except ConfigError as exc:
        return RedirectResponse(
            _item_url(queue, item.conversation, error=str(exc)), status_code=303
        )
    return RedirectResponse(f"/review/{quote(queue, safe='')}", status_code=303)


@state_changing
async def skip(request: Request, form: FormData) -> Response:
    """Give the item back (never offered to this user again) and go to the next."""
    queue = request.path_params["queue"]
    skip_item(ui_of(request).store, queue, str(form.get("c") or ""), user_of(request))
    return RedirectResponse(f"/review/{quote(queue, safe='')}", status_code=303)


def _edits(form: FormData) -> CaseEdits:
    picks = {}
    for key, value in form.multi_items():
        if key.startswith("call_") and key[5:].isdigit() and value in CHOICES:
            picks[int(key[5:])] = value
    label = str(form.get("label") or "")
    return CaseEdits(
        case_id=str(form.get("case_id") or "").strip() or None,
        tool_calls=picks,
        must_contain=_lines(form, "must_contain"),
        must_not_contain=_lines(form, "must_not_contain"),
        reference=str(form.get("reference") or "").strip() or None,
        label=label if label in ("pass", "fail") else None,  # type: ignore[arg-type]
    )


@state_changing
async def promote_case(request: Request, form: FormData) -> Response:
    """Append the conversation to the chosen dataset as a golden case; back to the item."""
    ui = ui_of(request)
    queue = request.path_params["queue"]
    item = queue_item(ui.store, queue, str(form.get("c") or ""))
    source = editable_datasets(ui).get(str(form.get("dataset") or ""))
    try:
        if source is None:
            raise DatasetError("choose a dataset to add the case to")
        target = str(source.path) if source.path is not None else STORE_PREFIX + str(source.name)
        promoted = await run_in_threadpool(
            promote, ui.store, item.trace_ids, target, user_of(request), _edits(form)
        )
    except DatasetError as exc:
        return RedirectResponse(
            _item_url(queue, item.conversation, error=str(exc)), status_code=303
        )
    extra = {"promoted": str(promoted.case["id"]), "to": source.key}
    return RedirectResponse(_item_url(queue, item.conversation, **extra), status_code=303)


async def agreement_page(request: Request) -> Response:
    """Every rater against the labels and the feedback, and each rater's accuracy over time."""
    ui = ui_of(request)
    options = AgreementOptions(db=ui.config.db, config=ui.scoring_config)
    try:
        report = await run_in_threadpool(agreement, options)
    except ConfigError as exc:
        return render(request, "agreement.html", {"report": None, "error": str(exc), "charts": []})
    charts = []
    for series in over_time(report, bucket_s=86400.0):
        rows = [
            {
                "run_id": f"{b['start_s']:.0f}",
                "label": f"{_day(b['start_s'])} (n={b['n']})",
                "accuracy": b["accuracy"],
            }
            for b in series["buckets"]
        ]
        charts.append(line_chart("accuracy", series["rater"], "fraction", rows))
    data = {"report": report.to_dict(), "rows": report.rows, "charts": charts, "error": None}
    return render(request, "agreement.html", data)


def _day(start_s: float) -> str:
    return utc_text(start_s, "%Y-%m-%d")


ROUTES = [
    *twin("/review", queues_page),
    Route("/review/queues", create_queue, methods=["POST"]),
    *twin("/agreement", agreement_page),
    Route("/review/{queue}/item", item_page, methods=["GET"]),
    Route("/review/{queue}/item.json", item_page, methods=["GET"]),
    Route("/review/{queue}/label", label, methods=["POST"]),
    Route("/review/{queue}/skip", skip, methods=["POST"]),
    Route("/review/{queue}/promote", promote_case, methods=["POST"]),
    Route("/review/{queue}", next_page, methods=["GET"]),
]
