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
    proved = await _who(guard, form)
    if proved is None:
        guard.throttle.failed(address, account)
        data = _form(
            request, target, "wrong name or password" if form.get("name") else "wrong token"
        )
        return render(request, "login.html", data, status_code=401)
    guard.throttle.succeeded(address, account)
    user, stamp = proved
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


async def _who(guard: Guard, form: FormData) -> tuple[str, str | None] | None:
    """The user a login form proves and the password stamp its session keeps: a named
    account's name and password (the stamp of the hash checked), or the token (no stamp)."""
    name, password, token = form.get("name"), form.get("password"), form.get("token")
    if isinstance(name, str) and name.strip() and isinstance(password, str):
        accounts = guard.accounts
        stamp = await accounts.check(name.strip(), password) if accounts else None
        return None if stamp is None else (name.strip(), stamp)
    if guard.token is not None and isinstance(token, str) and guard.token_matches(token):
        return "token", None
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
