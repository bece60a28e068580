"""The credentials a URL carries, and a message with them hidden: the store's PostgreSQL
location (:func:`tracegrade.store.database.hide_secrets`) and the ``--export-otlp`` endpoint
(:meth:`tracegrade.report.otlp_export.ExportTarget.masked`) quote their URLs in errors and
warnings, theirs and their libraries'."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from urllib.parse import unquote, urlsplit

MIN_SECRET = 3
"""Shorter values are not replaced everywhere in a message (that would garble it)."""


def url_secrets(url: str, secret_param: Callable[[str], object] | None = None) -> set[str] | None:
    """The password of ``url``'s user info and the values of its query parameters whose name
    ``secret_param`` accepts (None: every one), each also percent-decoded, at least
    :data:`MIN_SECRET` characters; None when ``url`` cannot be parsed."""
    try:
        parts = urlsplit(url.strip())
        found = [parts.password or ""]
    except ValueError:
        return None
    for param in parts.query.split("&"):
        name, _, value = param.partition("=")
        if secret_param is None or secret_param(name):
            found.append(value)
    return {v for s in found for v in (s, unquote(s)) if len(v) >= MIN_SECRET}


def hidden(message: str, secrets: Iterable[str]) -> str:
    """``message`` with each of ``secrets`` replaced by ``***``, the longest first (so a secret
    holding another is hidden whole)."""
    for secret in sorted(secrets, key=len, reverse=True):
        message = message.replace(secret, "***")
    return message
