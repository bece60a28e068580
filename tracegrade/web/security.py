"""Who may use ``tracegrade ui`` and how a request proves it is not forged.

- **Host**: a request whose ``Host`` is not one of the names the server answers to
  (:attr:`Guard.hosts`: the loopback names when bound to loopback, plus ``--allow-host``) is
  refused (400) before anything else, so a DNS-rebinding page (``Host: evil.example``
  resolving to 127.0.0.1) reads and changes nothing.
- **Who**: when the server has a token (``--token`` / ``TRACEGRADE_UI_TOKEN``; blank tokens
  are refused), named accounts (``tracegrade users``: a name and an Argon2id password hash,
  :mod:`tracegrade.web.accounts`) or a trusted proxy's user header (``--user-header``,
  honoured only when the TCP peer is a ``--trusted-proxy`` address, loopback by default
  with ``--user-header``), every request needs
  to say who it is: a session cookie that ``/login`` sets for an account or the token
  (HttpOnly, SameSite=Strict; a random id kept server-side with the user's name, which
  ``/logout``, its expiry, and a change of its account's password or the account's removal
  end: :class:`~.logins.LoginSessions`), an ``Authorization: Bearer TOKEN`` header
  (scripts reading the JSON twins and automation: the user ``token``), or the proxy's header.
  Without any, HTML pages redirect to the login form and everything else answers 401. Wrong
  tokens and passwords are throttled per address and per account
  (:class:`~.logins.LoginThrottle`); the address is the TCP peer's, or ``X-Forwarded-For``'s
  only when the peer is a trusted proxy (:meth:`Guard.client_address`). A server with none
  of the three is open, and its one user is the local login name (``local_user``). The
  user's name is :func:`user_of` a request: who labels and promotes.
- **CSRF**: every state-changing request (POST) carries a ``csrf_token`` form field that is an
  HMAC of the browser's random ``tg_csrf`` cookie under a per-process secret (signed double
  submit), and, when the browser sends ``Origin``, comes from this server's own origin (whose
  host passed the Host check); otherwise 403.
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
from collections.abc import Awaitable, Callable, Iterable
from functools import wraps
from typing import Any, Protocol
from urllib.parse import quote, urlsplit

from starlette.datastructures import FormData
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response

from tracegrade import environment
from tracegrade.web.logins import LoginSessions, LoginThrottle

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
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""Host names a server bound to loopback answers to (with the bound address itself)."""


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(bound: str, extra: Iterable[str] = ()) -> frozenset[str] | None:
    """The ``Host`` names a server bound to ``bound`` answers to: the loopback names and
    ``bound`` when it is loopback, plus ``extra`` (``--allow-host``); None (any name: the
    token guards it) for another address without ``extra``. Names are lower-case, IPv6
    addresses without brackets."""
    names = {h.strip().strip("[]").lower() for h in extra if h.strip()}
    if is_loopback(bound):
        names |= {*LOOPBACK_NAMES, bound.strip("[]").lower()}
    return frozenset(names) or None


def host_name(netloc: str) -> str:
    """The host part of a ``Host`` header or an origin's netloc, lower-case, without port
    or IPv6 brackets (``"[::1]:8765"`` -> ``"::1"``); ``""`` when it has none."""
    try:
        return (urlsplit(f"//{netloc}").hostname or "").lower()
    except ValueError:
        return ""


class Accounts(Protocol):
    """The named accounts a :class:`Guard` checks (the store's, in :mod:`.base`)."""

    def exist(self) -> bool:
        """Whether any account exists."""
        ...  # pragma: no cover

    async def check(self, name: str, password: str) -> str | None:
        """Account ``name``'s password stamp when ``password`` is its password, else None
        (off the event loop: a password hash takes a few hundred milliseconds of CPU)."""
        ...  # pragma: no cover

    def stamp(self, name: str) -> str | None:
        """A value that changes when account ``name``'s password does; None when the account
        does not exist (any more)."""
        ...  # pragma: no cover


class Guard:
    """The host check, who is asking (token, accounts, proxy header), sessions and CSRF tokens
    of one server process (see the module docstring). ``hosts`` None accepts any ``Host``.

    Raises:
        ValueError: ``token`` is blank (empty or only whitespace).
    """

    def __init__(
        self,
        token: str | None,
        hosts: frozenset[str] | None = None,
        *,
        user_header: str | None = None,
        trusted_proxies: frozenset[str] = frozenset(),
        local_user: str = "local",
    ):
        if token is not None and token != "" and not token.strip():
            raise ValueError("the UI token is blank: set a non-blank --token")
        self.token = token or None
        self.hosts = hosts
        self.user_header = user_header.lower() if user_header else None
        self.trusted_proxies = trusted_proxies
        self.local_user = local_user
        self.accounts: Accounts | None = None
        self._had_accounts = False
        self._secret = secrets.token_bytes(32)
        self.sessions = LoginSessions()
        self.throttle = LoginThrottle()

    @property
    def required(self) -> bool:
        """Whether requests must say who they are (a token, accounts or a proxy header). Once
        an account has existed it stays so for the process: removing the last account
        (``users remove``) leaves a server nobody can log in to until it restarts, never an
        open one (which, bound off loopback, would serve anyone)."""
        if self.token or self.user_header or self._had_accounts:
            return True
        self._had_accounts = bool(self.accounts and self.accounts.exist())
        return self._had_accounts

    def _mac(self, purpose: str, value: str) -> str:
        return hmac.new(self._secret, f"{purpose}:{value}".encode(), hashlib.sha256).hexdigest()

    def host_allowed(self, request: Request) -> bool:
        """True when the request's ``Host`` is one this server answers to."""
        if self.hosts is None:
            return True
        return host_name(request.headers.get("host", "")) in self.hosts

    def new_session(self, user: str = "token", stamp: str | None = None) -> str:
        """Start a session for ``user`` (after a correct token or password; ``stamp``: the
        account's password stamp, see :class:`Accounts`); returns its id, the cookie's value."""
        return self.sessions.start(user, stamp)

    def end_session(self, session: str | None) -> None:
        """End a session (logout): its cookie opens nothing any more, wherever it was copied."""
        self.sessions.end(session)

    def _session_user(self, session: str) -> str | None:
        """The user of a live session whose account (when it has one) still exists with the
        password it was started with; a session whose account changed is ended."""
        found = self.sessions.find(session)
        if found is None:
            return None
        user, stamp = found
        if stamp is None or (self.accounts is not None and self.accounts.stamp(user) == stamp):
            return user
        self.sessions.end(session)
        return None

    def client_address(self, request: Request) -> str:
        """The address a request comes from: the TCP peer's, or, when the peer is a trusted
        proxy, the last ``X-Forwarded-For`` address that is not a trusted proxy (the one the
        proxy itself saw). A forwarded header from any other peer is ignored (round three:
        rotating it defeated the login throttle)."""
        peer = request.client.host if request.client else ""
        if peer not in self.trusted_proxies:
            return peer
        # every X-Forwarded-For line, in order: a proxy may append its own line (HAProxy's
        # forwardfor) after one the client sent
        forwarded = ",".join(request.headers.getlist("x-forwarded-for"))
        for address in reversed([a.strip() for a in forwarded.split(",")]):
            if address and address not in self.trusted_proxies:
                return address
        return peer

    def token_matches(self, candidate: str) -> bool:
        """Constant-time comparison with the server's token."""
        return self.token is not None and hmac.compare_digest(
            candidate.encode(), self.token.encode()
        )

    def user(self, request: Request) -> str | None:
        """Who the request is from (see the module docstring); None when it must log in."""
        peer = request.client.host if request.client else ""
        if self.user_header and peer in self.trusted_proxies:
            named = request.headers.get(self.user_header, "").strip()
            if named:
                return named
        cookie = request.cookies.get(SESSION_COOKIE, "")
        if cookie and (user := self._session_user(cookie)) is not None:
            return user
        scheme, _, value = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and self.token_matches(value.strip()):
            return "token"
        return None if self.required else self.local_user

    def authenticated(self, request: Request) -> bool:
        """True when the request says who it is, or none needs to (see :meth:`user`)."""
        return self.user(request) is not None

    def csrf_token(self, request: Request) -> str:
        """The CSRF token for this browser's ``tg_csrf`` cookie (set by the middleware)."""
        return self._mac("csrf", request.state.csrf_nonce)

    def csrf_valid(self, request: Request, form: FormData) -> bool:
        """True when the form's token matches the cookie and any ``Origin`` is this server."""
        origin = request.headers.get("origin")
        own = f"{request.url.scheme}://{request.headers.get('host', '')}"
        if origin is not None and (origin.lower() != own.lower() or not self.host_allowed(request)):
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
        if not self.guard.host_allowed(request):
            return PlainTextResponse(
                f"refused: this server does not answer to Host {request.headers.get('host')!r} "
                "(start it with --allow-host NAME to add a name)",
                status_code=400,
            )
        nonce = request.cookies.get(CSRF_COOKIE)
        fresh = not nonce or len(nonce) != 32
        request.state.csrf_nonce = secrets.token_hex(16) if fresh else nonce
        open_path = request.url.path.startswith(OPEN_PATHS)
        request.state.user = self.guard.user(request)
        if open_path or request.state.user is not None:
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


def user_of(request: Request) -> str:
    """The name of who sent ``request`` (set by :class:`SecurityMiddleware`; ``anonymous`` on
    an open path before login)."""
    return getattr(request.state, "user", None) or "anonymous"
