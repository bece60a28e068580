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

import datetime as dt
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tracegrade.errors import DatasetError, StoreError
from tracegrade.web import compare_page, editor, login, review, runs, traces
from tracegrade.web.base import HERE, StoreAccounts, Ui, UiConfig, render
from tracegrade.web.security import Guard, SecurityMiddleware

__all__ = ["UiConfig", "create_app", "routes"]


async def _store_error(request: Request, exc: Exception) -> Response:
    """A missing run, trace, case or dataset is 404; a bad cursor 400; anything else (the
    store or a dataset file cannot be read) 500, with the message."""
    message = str(exc)
    status = 404 if message.startswith("no ") else 400 if "cursor" in message else 500
    return render(request, "error.html", {"error": message}, status_code=status)


def _filters(templates: Jinja2Templates) -> None:
    """Number filters; a value that is None or missing (a run document without it) is "–"."""
    env = templates.env
    env.filters["pct"] = lambda v: "–" if _absent(v) else f"{100 * v:.0f}%"
    env.filters["num"] = lambda v, d=2: "–" if _absent(v) else f"{v:.{d}f}"
    env.filters["ms"] = lambda v: "–" if _absent(v) else f"{v:,.0f} ms"
    env.filters["usd"] = lambda v: "–" if _absent(v) else f"${v:.4f}"
    env.filters["unix_s"] = lambda v: (
        "–" if _absent(v) else dt.datetime.fromtimestamp(v, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    )
    env.filters["unix_ns"] = lambda v: (
        "–"
        if _absent(v) or not v
        else dt.datetime.fromtimestamp(v / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    )


def _absent(value: Any) -> bool:
    return value is None or isinstance(value, jinja2.Undefined)


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
    )
    app.state.ui = Ui(config, guard, templates)
    guard.accounts = StoreAccounts(app.state.ui)
    return app
