"""What every page of ``tracegrade ui`` shares (datasette's ``views/base.py``): the
per-process state (:class:`Ui`: the store, the scoring config, the guard, the templates),
rendering a page or its JSON twin, the twin routes, the 404 page.

Pages import this module; :mod:`.app` assembles the pages into the application, and no page
imports it. Jinja2 autoescaping is on for every template: values from spans, datasets and
judge output are untrusted and are never marked safe.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from tracegrade.config import Config, load_config
from tracegrade.store.traces import Store
from tracegrade.web.accounts import check_password, has_accounts, password_stamp
from tracegrade.web.security import CSRF_FIELD, LOOPBACK_NAMES, Guard

HERE = Path(__file__).parent
LOOPBACK_HOSTS = frozenset(LOOPBACK_NAMES)
WORKERS = 4
"""Pipeline calls (:meth:`Ui.offload`) running at once, each on its own store connection."""

P = ParamSpec("P")
T = TypeVar("T")


def utc_text(unix_s: float, form: str = "%Y-%m-%d %H:%M:%S") -> str:
    """A Unix time (s) as UTC text in ``form``; one no calendar holds (a label stored with
    ``created_at: 1e300`` before labels were checked) as the number."""
    try:
        return dt.datetime.fromtimestamp(unix_s, dt.UTC).strftime(form)
    except (OverflowError, ValueError, OSError):
        return f"{unix_s!r} (not a time)"


@dataclass
class UiConfig:
    """What ``tracegrade ui`` serves: the store (``db`` path or URL, None for the default),
    the token (None: no login), the dataset files the case editor may read and write (no
    other file is ever opened), and the ``Host`` names it answers to (None: any; see
    :func:`.security.allowed_hosts`)."""

    db: str | None = None
    token: str | None = None
    datasets: Sequence[Path] = ()
    hosts: frozenset[str] | None = LOOPBACK_HOSTS
    user_header: str | None = None
    """A trusted proxy's header naming the user (e.g. ``X-Forwarded-User``); None: none."""
    trusted_proxies: frozenset[str] = frozenset()
    """TCP peer addresses of trusted reverse proxies: their ``user_header`` and
    ``X-Forwarded-For`` are believed (no other peer's are); empty: no proxy."""
    local_user: str = "local"
    """Who uses a server that asks nobody to log in (no token, account or proxy header)."""
    index_traces: bool = True
    """Keep the trace index up to date in the background while serving (searches index a
    bounded number of pending traces themselves either way)."""


@dataclass
class Ui:
    """Per-process state: the config, the guard, the templates and the store (opened on the
    first request, on the event loop's thread; every endpoint is ``async`` and uses it there),
    and :data:`WORKERS` more store connections for the pipeline calls that normalise traces,
    which run in worker threads (:meth:`offload`), never on the event loop: a hostile trace
    slows its own page only."""

    config: UiConfig
    guard: Guard
    templates: Jinja2Templates
    _store: Store | None = field(default=None, repr=False)
    _config: Config | None = field(default=None, repr=False)
    _idle: list[Store] = field(default_factory=list, repr=False)
    _slots: asyncio.Semaphore | None = field(default=None, repr=False)

    async def offload(
        self, function: Callable[Concatenate[Store, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """``function(store, *args, **kwargs)`` in a worker thread, with a store connection
        of its own (at most :data:`WORKERS` at once; the others wait).

        Raises:
            StoreError: a store connection cannot be opened; what ``function`` raises.
        """
        if self._slots is None:
            self._slots = asyncio.Semaphore(WORKERS)
        async with self._slots:
            store = self._idle.pop() if self._idle else Store(self.config.db)
            try:
                return await run_in_threadpool(function, store, *args, **kwargs)
            finally:
                self._idle.append(store)

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
        """Close the stores, if open."""
        if self._store is not None:
            self._store.close()
            self._store = None
        while self._idle:
            self._idle.pop().close()


@dataclass
class StoreAccounts:
    """The named accounts in the store (:mod:`tracegrade.web.accounts`), for the guard;
    whether any exists is read again at most every :attr:`RECHECK_S` seconds."""

    ui: Ui
    RECHECK_S = 5.0
    CHECKS_AT_ONCE = 2
    """Password checks running at once (the others wait; pages keep their worker slots)."""
    _known: tuple[float, bool] = (-RECHECK_S, False)
    _checks: asyncio.Semaphore | None = field(default=None, repr=False)

    def exist(self) -> bool:
        now = time.monotonic()
        if now - self._known[0] >= self.RECHECK_S:
            self._known = (now, has_accounts(self.ui.store))
        return self._known[1]

    async def check(self, name: str, password: str) -> str | None:
        """The password check (:func:`~tracegrade.web.accounts.check_password`) in a worker
        thread with a store connection of its own, at most :attr:`CHECKS_AT_ONCE` at once:
        Argon2id takes ~0.1-0.3 s of CPU and 64 MiB per check, which on the event loop held
        every page, even ``/static/``, for as long (issue 40 item 10's guesser)."""
        if self._checks is None:
            self._checks = asyncio.Semaphore(self.CHECKS_AT_ONCE)
        async with self._checks:
            return await self.ui.offload(check_password, name, password)

    def stamp(self, name: str) -> str | None:
        return password_stamp(self.ui.store, name)


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
    user = getattr(request.state, "user", None)  # None: not logged in (the login page)
    context["logged_in"] = ui.guard.required and user is not None
    context["user"] = user
    return ui.templates.TemplateResponse(request, template, context, status_code=status_code)


async def render_offloaded(
    request: Request, template: str, data: Mapping[str, Any], status_code: int = 200
) -> Response:
    """:func:`render` in a worker thread: for pages whose templates render trace text as
    Markdown (chats, answers), so a hostile message slows its own page only, never the
    event loop (which meanwhile serves every other request)."""
    return await run_in_threadpool(render, request, template, data, status_code)


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
