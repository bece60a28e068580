"""The login form: ``GET /login`` shows it, ``POST /login`` checks the token and sets the
HttpOnly session cookie (see :mod:`.security`), ``POST /logout`` clears it."""

from __future__ import annotations

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from tracegrade.web.base import render, ui_of
from tracegrade.web.security import SESSION_COOKIE, safe_next, state_changing


async def login_form(request: Request) -> Response:
    """The login form; ``next`` is where to go afterwards (a local path)."""
    return render(
        request, "login.html", {"next": safe_next(request.query_params.get("next")), "error": None}
    )


@state_changing
async def login(request: Request, form: FormData) -> Response:
    """Check the submitted token; on success set the session cookie and redirect to
    ``next``, else show the form again with 401."""
    guard = ui_of(request).guard
    target = safe_next(str(form.get("next") or "/"))
    token = form.get("token")
    if guard.token is None or not isinstance(token, str) or not guard.token_matches(token):
        data = {"next": target, "error": "wrong token"}
        return render(request, "login.html", data, status_code=401)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        guard.session_value,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@state_changing
async def logout(request: Request, form: FormData) -> Response:
    """Clear the session cookie."""
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(SESSION_COOKIE)
    return response


ROUTES = [
    Route("/login", login_form, methods=["GET"]),
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
]
