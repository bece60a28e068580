"""The ``tracegrade ui`` ASGI application: the pages (:mod:`.runs`, :mod:`.traces`,
:mod:`.compare_page`, :mod:`.editor`, :mod:`.login`) assembled into a starlette app rendering
Jinja2 templates, behind the security middleware (:mod:`.security`).

Pages (each HTML page has a JSON twin: the same path with ``.json``, datasette's pattern):
``/runs``, ``/trends``, ``/runs/{run_id}``, ``/runs/{run_id}/cases/{n}``, ``/compare``,
``/traces`` and ``/traces/{trace_id}``, ``/datasets/...`` (the case editor), ``/review/...``
(review queues, :mod:`.review`), ``/agreement``, ``/login``.
Templates and static files ship inside the package (``tracegrade/web/templates``,
``tracegrade/web/static``); nothing is loaded from the internet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from tracegrade._util.extras import extra_error

try:
    import jinja2
except ModuleNotFoundError as exc:  # the [ui] extra
    raise extra_error(exc, "the dashboard") from exc
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tracegrade.errors import DatasetError, StoreError
from tracegrade.pipeline.run_history import scorer_label
from tracegrade.report.comparison import METRIC_NAMES, better, signed
from tracegrade.report.comparison import value as comparison_value
from tracegrade.web import compare_page, editor, login, review, runs, traces
from tracegrade.web.base import HERE, StoreAccounts, Ui, UiConfig, render, utc_text
from tracegrade.web.markdown import render_markdown
from tracegrade.web.security import Guard, SecurityMiddleware
from tracegrade.web.trace_search import INDEX_BATCH, index_traces

INDEX_IDLE_S = 5.0
"""Seconds the background indexer waits when no trace is pending."""
_log = logging.getLogger("tracegrade.ui")

__all__ = ["UiConfig", "create_app", "routes"]


async def _store_error(request: Request, exc: Exception) -> Response:
    """A missing run, trace, case or dataset is 404; a bad cursor or filter ("bad ...") 400;
    anything else (the store or a dataset file cannot be read) 500, with the message."""
    message = str(exc)
    bad = message.startswith("bad ") or "cursor" in message
    status = 404 if message.startswith("no ") else 400 if bad else 500
    return render(request, "error.html", {"error": message}, status_code=status)


def _filters(templates: Jinja2Templates) -> None:
    """Number filters; a value that is None or missing (a run document without it) is "–"."""
    env = templates.env
    env.filters["pct"] = lambda v: "–" if _absent(v) else f"{100 * v:.0f}%"
    env.filters["num"] = lambda v, d=2: "–" if _absent(v) else f"{v:.{d}f}"
    env.filters["ms"] = lambda v: "–" if _absent(v) else _ms(v)
    env.filters["usd"] = lambda v: "–" if _absent(v) else _usd(v)
    env.filters["unix_s"] = lambda v: "–" if _absent(v) else utc_text(v)
    env.filters["markdown"] = render_markdown
    env.filters["metric"] = metric_value
    env.filters["metric_delta"] = metric_delta
    env.filters["delta_class"] = delta_class
    env.filters["metric_name"] = lambda m: METRIC_NAMES.get(m, m)
    env.filters["scorer_label"] = scorer_label
    env.filters["unix_ns"] = lambda v: "–" if _absent(v) or not v else utc_text(v / 1e9)


def _ms(value: float) -> str:
    """A duration in ms: whole ms from 10 ms, else 1 or 2 decimals (a sub-ms tool call is not
    "0 ms")."""
    if abs(value) >= 10 or value == 0:
        return f"{value:,.0f} ms"
    return f"{value:.1f} ms" if abs(value) >= 1 else f"{value:.2f} ms"


async def keep_indexed(ui: Ui, stop: asyncio.Event) -> None:
    """Index pending traces (:func:`tracegrade.web.trace_search.index_traces`) a batch
    at a time until ``stop`` is set, waiting :data:`INDEX_IDLE_S` when none is pending or the
    store cannot be read (said once in the log)."""
    warned = False
    while not stop.is_set():
        try:
            done = await ui.offload(index_traces, INDEX_BATCH)
        except Exception as exc:  # the store is unreadable: the pages say why
            if not warned:
                _log.warning("tracegrade ui: cannot index traces: %s", exc)
                warned = True
            done = 0
        if done < INDEX_BATCH:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), INDEX_IDLE_S)


@contextlib.asynccontextmanager
async def lifespan(app: Starlette) -> AsyncIterator[None]:
    """Run :func:`keep_indexed` while the application serves; on shutdown, let the batch in
    progress finish (its thread holds a store connection)."""
    stop = asyncio.Event()
    task = asyncio.create_task(keep_indexed(app.state.ui, stop))
    try:
        yield
    finally:
        stop.set()
        await task


def _absent(value: Any) -> bool:
    return value is None or isinstance(value, jinja2.Undefined)


def _usd(number: float, sign: str = "") -> str:
    """Dollars: 4 decimals, 6 under a cent (an eval run of a small model costs $0.0001)."""
    digits = 6 if abs(number) < 0.01 else 4
    return f"{'-' if number < 0 else '+' if sign else ''}${abs(number):,.{digits}f}"


def metric_value(number: Any, metric: str) -> str:
    """A run metric in its unit, as the console's comparison shows it (rates as %, latency
    in ms, cost in USD, scores to 3 decimals); "–" when absent."""
    if _absent(number):
        return "–"
    return _usd(number) if metric.endswith("_usd") else comparison_value(metric, number)


def metric_delta(delta: Any, metric: str) -> str:
    """A metric's change with its sign (rates in percentage points); "–" when absent."""
    if _absent(delta) or _absent(delta.delta):
        return "–"
    return _usd(delta.delta, "+") if metric.endswith("_usd") else signed(metric, delta)


def delta_class(delta: Any, metric: str) -> str:
    """``better`` / ``worse`` for a change of ``metric`` beyond noise (coloured green / red, as
    the console's comparison and the Markdown do: :func:`~tracegrade.report.comparison.better`),
    else ``""``."""
    if _absent(delta) or _absent(delta.delta):
        return ""
    return {True: "better", False: "worse", None: ""}[better(metric, delta)]


def routes() -> list[BaseRoute]:
    """Every route of the application."""
    return [
        *login.ROUTES,
        *runs.ROUTES,
        *traces.ROUTES,
        *compare_page.ROUTES,
        *editor.ROUTES,
        *review.ROUTES,
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]


def create_app(config: UiConfig) -> Starlette:
    """The application for ``config`` (see the module docstring)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(HERE / "templates"),
        autoescape=True,
        undefined=jinja2.Undefined,
    )
    templates = Jinja2Templates(env=env)
    _filters(templates)
    guard = Guard(
        config.token,
        config.hosts,
        user_header=config.user_header,
        trusted_proxies=config.trusted_proxies,
        local_user=config.local_user,
    )
    app = Starlette(
        routes=routes(),
        middleware=[Middleware(SecurityMiddleware, guard=guard)],
        exception_handlers={StoreError: _store_error, DatasetError: _store_error},
        lifespan=lifespan if config.index_traces else None,
    )
    app.state.ui = Ui(config, guard, templates)
    guard.accounts = StoreAccounts(app.state.ui)
    return app
