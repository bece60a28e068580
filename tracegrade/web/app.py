"""The ``tracegrade ui`` ASGI application: a starlette app rendering Jinja2 templates.

Pages (each HTML page has a JSON twin: the same path with ``.json``, datasette's pattern):
``/runs`` (:mod:`.runs`), ``/trends``, ``/runs/{run_id}``, ``/runs/{run_id}/cases/{n}``,
``/compare`` (:mod:`.compare_page`), ``/traces`` and ``/traces/{trace_id}`` (:mod:`.traces`),
``/datasets/...`` (the case editor, :mod:`.editor`), ``/login``. Templates and static files
ship inside the package (``tracegrade/web/templates``, ``tracegrade/web/static``); nothing is
loaded from the internet. Jinja2 autoescaping is on for every template: values from spans,
datasets and judge output are untrusted and are never marked safe.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from tracegrade.config import Config, load_config
from tracegrade.errors import DatasetError, StoreError
from tracegrade.store.traces import Store
from tracegrade.web.security import CSRF_FIELD, Guard, SecurityMiddleware

HERE = Path(__file__).parent


@dataclass
class UiConfig:
    """What ``tracegrade ui`` serves: the store (``db`` path or URL, None for the default),
    the token (None: no login), and the dataset files the case editor may read and write
    (no other file is ever opened)."""

    db: str | None = None
    token: str | None = None
    datasets: Sequence[Path] = ()


@dataclass
class Ui:
    """Per-process state: the config, the guard, the templates and the store (opened on the
    first request, on the event loop's thread; every endpoint is ``async`` and uses it there)."""

    config: UiConfig
    guard: Guard
    templates: Jinja2Templates
    _store: Store | None = field(default=None, repr=False)
    _config: Config | None = field(default=None, repr=False)

    @property
    def store(self) -> Store:
        """The trace store, opened on first use.

        Raises:
            StoreError: it cannot be opened.
        """
        if self._store is None:
            self._store = Store(self.config.db)
        return self._store

    @property
    def scoring_config(self) -> Config:
        """The scoring configuration (``tracegrade.yaml`` in the working directory, else the
        defaults), read once: pricing for waterfalls and diffs, scorers for the Traces page.

        Raises:
            ConfigError: the configuration file is invalid.
        """
        if self._config is None:
            self._config = load_config()
        return self._config

    def close(self) -> None:
        """Close the store, if open."""
        if self._store is not None:
            self._store.close()
            self._store = None


def ui_of(request: Request) -> Ui:
    """The :class:`Ui` serving ``request``."""
    ui: Ui = request.app.state.ui
    return ui


def wants_json(request: Request) -> bool:
    """True for a JSON twin (a path ending in ``.json``)."""
    return request.url.path.endswith(".json")


def render(
    request: Request, template: str, data: Mapping[str, Any], status_code: int = 200
) -> Response:
    """``data`` as the JSON twin, or rendered into ``template`` (with ``csrf_token``)."""
    if wants_json(request):
        return JSONResponse(_jsonable(data), status_code=status_code)
    ui = ui_of(request)
    context = {**data, "csrf_token": ui.guard.csrf_token(request), "csrf_field": CSRF_FIELD}
    context["logged_in"] = ui.guard.token is not None
    return ui.templates.TemplateResponse(request, template, context, status_code=status_code)


def _jsonable(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items() if not str(k).startswith("_")}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)


def twin(path: str, endpoint: Callable[..., Any], name: str | None = None) -> list[Route]:
    """The HTML route and its ``.json`` twin (the twin first: a path parameter would
    otherwise swallow the ``.json``)."""
    json_path = "/index.json" if path == "/" else path + ".json"
    return [
        Route(json_path, endpoint, name=f"{name}_json" if name else None),
        Route(path, endpoint, name=name),
    ]


def not_found(request: Request, message: str) -> Response:
    """A 404 page (or JSON) saying what was not found."""
    return render(request, "error.html", {"error": message}, status_code=404)


async def _store_error(request: Request, exc: Exception) -> Response:
    """A missing run, trace, case or dataset is 404; a bad cursor 400; anything else (the
    store or a dataset file cannot be read) 500, with the message."""
    message = str(exc)
    status = 404 if message.startswith("no ") else 400 if "cursor" in message else 500
    return render(request, "error.html", {"error": message}, status_code=status)


def _filters(templates: Jinja2Templates) -> None:
    env = templates.env
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.0f}%"
    env.filters["num"] = lambda v, d=2: "–" if v is None else f"{v:.{d}f}"
    env.filters["ms"] = lambda v: "–" if v is None else f"{v:,.0f} ms"
    env.filters["usd"] = lambda v: "–" if v is None else f"${v:.4f}"
    env.filters["unix_s"] = lambda v: (
        "–" if v is None else dt.datetime.fromtimestamp(v, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    )
    env.filters["unix_ns"] = lambda v: (
        "–" if not v else dt.datetime.fromtimestamp(v / 1e9, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    )


def routes() -> list[BaseRoute]:
    """Every route of the application."""
    from tracegrade.web import compare_page, editor, login, runs, traces

    return [
        *login.ROUTES,
        *runs.ROUTES,
        *traces.ROUTES,
        *compare_page.ROUTES,
        *editor.ROUTES,
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
    guard = Guard(config.token)
    app = Starlette(
        routes=routes(),
        middleware=[Middleware(SecurityMiddleware, guard=guard)],
        exception_handlers={StoreError: _store_error, DatasetError: _store_error},
    )
    app.state.ui = Ui(config, guard, templates)
    return app
