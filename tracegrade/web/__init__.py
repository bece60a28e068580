"""``tracegrade ui``: the web dashboard and case editor (server-rendered, starlette + Jinja2;
the ``[ui]`` extra).

:func:`create_app` builds the ASGI application from a :class:`UiConfig`; see
:mod:`tracegrade.web.app` for the pages and :mod:`tracegrade.web.security` for the token,
login and CSRF rules. Imported lazily: the page data modules (:mod:`tracegrade.web.pages`,
:mod:`tracegrade.web.chat`) serve the ``review`` command without the dashboard's libraries.
"""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

if TYPE_CHECKING:
    from tracegrade.web.app import UiConfig, create_app

_EXPORTS = {"UiConfig": "tracegrade.web.app", "create_app": "tracegrade.web.app"}
__all__ = ["UiConfig", "create_app"]
__getattr__, __dir__ = lazy(_EXPORTS)
