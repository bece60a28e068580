"""``tracegrade ui``: the web dashboard and case editor (server-rendered, starlette + Jinja2).

:func:`create_app` builds the ASGI application from a :class:`UiConfig`; see
:mod:`tracegrade.web.app` for the pages and :mod:`tracegrade.web.security` for the token,
login and CSRF rules.
"""

from tracegrade.web.app import UiConfig, create_app

__all__ = ["UiConfig", "create_app"]
