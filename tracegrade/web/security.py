"""Who may use ``tracegrade ui`` and how a request proves it is not forged.

- **Token**: when the server has a token (``--token`` / ``TRACEGRADE_UI_TOKEN``; required
  when listening beyond loopback), every request needs the session cookie that ``/login``
  sets (HttpOnly, SameSite=Strict) or an ``Authorization: Bearer TOKEN`` header (scripts
  reading the JSON twins). Without either, HTML pages redirect to the login form and
  everything else answers 401.
- **CSRF**: every state-changing request (POST) carries a ``csrf_token`` form field that is an
  HMAC of the browser's random ``tg_csrf`` cookie under a per-process secret (signed double
  submit), and, when the browser sends ``Origin``, comes from this server's own origin;
  otherwise 403.
- **Headers**: a Content-Security-Policy allowing only this server's own scripts and styles
  (no inline script), ``nosniff``, referrers only to this server (``no-referrer``
  would make browsers send ``Origin: null`` and withhold the SameSite cookies on form
  posts), no framing.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from collections.abc import Awaitable, Callable
from functools import wraps
from typing import Any
from urllib.parse import quote

from starlette.datastructures import FormData
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from tracegrade import environment

SESSION_COOKIE = "tg_session"
CSRF_COOKIE = "tg_csrf"
CSRF_FIELD = "csrf_token"
TOKEN_ENV = environment.TRACEGRADE_UI_TOKEN
"""Environment variable holding the UI token (overridden by ``--token``)."""
OPEN_PATHS = ("/login", "/static/")
"""Paths served without the token (the login form and its stylesheet)."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class Guard:
    """The token check and CSRF tokens of one server process (see the module docstring)."""

    def __init__(self, token: str | None):
        self.token = token or None
        self._secret = secrets.token_bytes(32)

    def _mac(self, purpose: str, value: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()

    @property
    def session_value(self) -> str:
        """The session cookie's value: an HMAC of the token (the token itself never leaves
        the login form)."""
        return self._mac("session", self.token or "")

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison with the server's token."""
        return self.token is not None and hmac.compare_digest(
            candidate.encode(), self.token.encode()
        )

    def authenticated(self, request: Request) -> bool:
        """True when no token is set, or the request carries the session cookie or the
        bearer token."""
        if self.token is None:
            return True
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie and hmac.compare_digest(cookie, self.session_value):
            return True
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and self.token_matches(value.strip())

    def csrf_token(self, request: Request) -> str:
        """The CSRF token for this browser's ``tg_csrf`` cookie (set by the middleware)."""
        return self._mac("csrf", request.state.csrf_nonce)

    def csrf_valid(self, request: Request, form: FormData) -> bool:
        """True when the form's token matches the cookie and any ``Origin`` is this server."""
        origin = request.headers.get("origin")
        if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
            return False
        nonce = request.cookies.get(CSRF_COOKIE)
        sent = form.get(CSRF_FIELD)
        if not nonce or not isinstance(sent, str):
            return False
        return hmac.compare_digest(sent, self._mac("csrf", nonce))


class SecurityMiddleware(BaseHTTPMiddleware):
    """Sets the CSRF cookie, enforces the token, and adds the security headers."""

    def __init__(self, app: Any, guard: Guard):
        super().__init__(app)
        self.guard = guard

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        nonce = request.cookies.get(CSRF_COOKIE)
        fresh = not nonce or len(nonce) != 32
        request.state.csrf_nonce = secrets.token_hex(16) if fresh else nonce
        open_path = request.url.path.startswith(OPEN_PATHS)
        if open_path or self.guard.authenticated(request):
            response = await call_next(request)
        else:
            response = _refuse(request)
        if fresh:
            response.set_cookie(
                CSRF_COOKIE, request.state.csrf_nonce, httponly=True, samesite="strict"
            )
        response.headers["content-security-policy"] = CSP
        response.headers["x-content-type-options"] = "nosniff"
        response.headers["referrer-policy"] = "same-origin"
        response.headers["x-frame-options"] = "DENY"
        return response


def _refuse(request: Request) -> Response:
    wants_html = request.method == "GET" and "text/html" in request.headers.get("accept", "")
    if wants_html and not request.url.path.endswith(".json"):
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
    return JSONResponse(
        {"error": "a token is required: log in at /login or send Authorization: Bearer TOKEN"},
        status_code=401,
        headers={"www-authenticate": 'Bearer realm="tracegrade ui"'},
    )


def safe_next(target: str | None) -> str:
    """A post-login redirect target: a local path only (never ``//host`` or a URL)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


Endpoint = Callable[[Request], Awaitable[Response]]


def state_changing(endpoint: Callable[[Request, FormData], Awaitable[Response]]) -> Endpoint:
    """Wrap a POST endpoint: parse its form, refuse it (403) without a valid CSRF token; the
    endpoint receives the request and the parsed form."""

    @wraps(endpoint)
    async def checked(request: Request) -> Response:
        form = await request.form()
        guard: Guard = request.app.state.ui.guard
        if not guard.csrf_valid(request, form):
            return PlainTextResponse(
                "refused: missing or invalid CSRF token (reload the page and submit again)",
                status_code=403,
            )
        return await endpoint(request, form)

    return checked
