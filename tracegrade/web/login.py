"""The login form: ``GET /login`` shows it, ``POST /login`` checks a name and password (a named
account) or the token (both throttled per address and per account:
:class:`~.logins.LoginThrottle`) and sets the HttpOnly session cookie (see :mod:`.security`),
``POST /logout`` ends the session and clears the cookie."""

from __future__ import annotations

import math

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import Route

from tracegrade.web.base import render, ui_of
from tracegrade.web.security import SESSION_COOKIE, Guard, safe_next, state_changing


async def login_form(request: Request) -> Response:
    """The login form; ``next`` is where to go afterwards (a local path)."""
    return render(request, "login.html", _form(request, request.query_params.get("next"), None))


def _form(request: Request, target: str | None, error: str | None) -> dict[str, object]:
    guard = ui_of(request).guard
    accounts = bool(guard.accounts and guard.accounts.exist())
    return {
        "next": safe_next(target),
        "error": error,
        "accounts": accounts,
        "token": bool(guard.token),
    }


@state_changing
async def login(request: Request, form: FormData) -> Response:
    """Check the submitted name and password, or token; on success start a session, set its
    cookie and redirect to ``next``, else show the form again with 401 (429 + Retry-After
    while this address or this account is throttled: :class:`~.logins.LoginThrottle`)."""
    guard = ui_of(request).guard
    address, account = guard.client_address(request), _account(form)
    wait_s = guard.throttle.retry_after_s(address, account)
    if wait_s > 0:
        return PlainTextResponse(
            f"too many wrong passwords or tokens: try again in {math.ceil(wait_s)} s",
            status_code=429,
            headers={"retry-after": str(math.ceil(wait_s))},
        )
    target = safe_next(str(form.get("next") or "/"))
    user = _who(guard, form)
    if user is None:
        guard.throttle.failed(address, account)
        data = _form(
            request, target, "wrong name or password" if form.get("name") else "wrong token"
        )
        return render(request, "login.html", data, status_code=401)
    guard.throttle.succeeded(address, account)
    stamp = guard.accounts.stamp(user) if guard.accounts and form.get("name") else None
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        guard.new_session(user, stamp),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


def _account(form: FormData) -> str:
    """The account a login form tries: ``name:NAME``, or ``token`` for the UI token."""
    name = form.get("name")
    return f"name:{name.strip()}" if isinstance(name, str) and name.strip() else "token"


def _who(guard: Guard, form: FormData) -> str | None:
    """The user a login form proves: a named account's name and password, or the token."""
    name, password, token = form.get("name"), form.get("password"), form.get("token")
    if isinstance(name, str) and name.strip() and isinstance(password, str):
        accounts = guard.accounts
        return name.strip() if accounts and accounts.verify(name.strip(), password) else None
    if guard.token is not None and isinstance(token, str) and guard.token_matches(token):
        return "token"
    return None


@state_changing
async def logout(request: Request, form: FormData) -> Response:
    """End the session (its cookie opens nothing any more) and clear the cookie."""
    ui_of(request).guard.end_session(request.cookies.get(SESSION_COOKIE))
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


ROUTES = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
]
