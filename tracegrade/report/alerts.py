"""Regression alerts: a webhook POST and the GitHub Actions step summary.

The webhook gets a JSON body ``{"text": ..., "regression": bool, "reasons": [...],
"comparison": {...}}``: ``text`` makes it a Slack (and Mattermost, Discord-compatible proxy)
incoming-webhook message, ``comparison`` is :meth:`Comparison.to_json`. Delivery is bounded:
``timeout_s`` per attempt, up to ``attempts`` tries on connection errors, timeouts, 429 and
5xx, with a doubling pause. A failed delivery is returned as data, never raised: an alert
must not change a run's verdict.

The text carries values from traces (service names, run and case ids): :func:`chat_escape`
makes them inert in Slack's markup (no ``<!channel>`` ping, no ``<url|label>`` link) and
in Mattermost/Discord mentions. A webhook URL is a secret (whoever has it can post): what
is printed about it is :func:`mask_url`'s form.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import urlsplit

from tracegrade import environment
from tracegrade.compare import Comparison

if TYPE_CHECKING:
    import httpx

STEP_SUMMARY_ENV = environment.GITHUB_STEP_SUMMARY
"""GitHub Actions sets it to a file; Markdown appended to it shows on the run's page."""


@dataclass(frozen=True)
class Delivery:
    """How a webhook delivery went: ``ok``, attempts made, and the last error (None if ok)."""

    ok: bool
    attempts: int
    error: str | None = None


_MENTION = re.compile(r"@(?=(?:channel|here|everyone|all)\b)", re.IGNORECASE)


def chat_escape(text: str) -> str:
    """``text`` inert in a chat message: ``&``, ``<``, ``>`` escaped as Slack requires (so
    ``<!channel>`` and ``<https://evil|label>`` show as typed), and ``@channel``-style
    mentions broken with a zero-width space (Mattermost, Discord)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MENTION.sub("@\u200b", escaped)


def mask_url(url: str) -> str:
    """A webhook URL as it may be printed: scheme and host only (``https://hooks.slack.com/***``);
    the path, query and any user info, where the secret lives, are hidden."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
    except ValueError:
        return "***"
    if not parts.scheme or not host:
        return "***"
    return f"{parts.scheme}://{host}{port}/***"


def _masked(message: str, url: str) -> str:
    """``message`` with ``url`` (and its path, which holds the secret) masked."""
    masked = message.replace(url, mask_url(url))
    try:
        path = urlsplit(url).path
    except ValueError:
        return masked
    return masked.replace(path, "/***") if len(path) > 1 else masked


def alert_text(comparison: Comparison) -> str:
    """The one-message summary (Slack ``text``), values from traces escaped
    (:func:`chat_escape`)."""
    base, current = comparison.base, comparison.current
    head = f"tracegrade regression: {current.dataset or 'run'} {current.run_id} vs {base.run_id}"
    lines = [head, *(f"• {r}" for r in comparison.reasons)]
    return ":rotating_light: " + chat_escape("\n".join(lines))


def _retryable(response: httpx.Response) -> bool:
    return response.status_code == 429 or response.status_code >= 500


def post_webhook(
    url: str,
    comparison: Comparison,
    *,
    timeout_s: float = 5.0,
    attempts: int = 3,
    pause_s: float = 0.5,
) -> Delivery:
    """POST the alert to ``url`` (see the module docstring); never raises. The body is
    written to a temporary file a case at a time (:meth:`Comparison.write_json`) and sent
    from it with its ``Content-Length``, so a comparison of any size is never held whole."""
    head = {
        "text": alert_text(comparison),
        "regression": comparison.regression,
        "reasons": list(comparison.reasons),
    }
    with tempfile.TemporaryFile() as body:
        body.write(json.dumps(head, ensure_ascii=False)[:-1].encode() + b', "comparison": ')
        comparison.write_json(body)
        body.write(b"}")
        return deliver(url, body, timeout_s=timeout_s, attempts=attempts, pause_s=pause_s)


def deliver(
    url: str,
    body: dict[str, Any] | BinaryIO,
    *,
    timeout_s: float = 5.0,
    attempts: int = 3,
    pause_s: float = 0.5,
) -> Delivery:
    """POST ``body`` (a JSON-able dict, or a file of JSON read from its start on each
    attempt) with the bounded retries of the module docstring; never raises. Shared by run
    regressions and ``score --follow --window`` threshold alerts. The error never holds the
    URL's secret part (:func:`mask_url`)."""
    import httpx  # imported when an alert is sent: every score would pay for it otherwise

    error = "no attempt"
    for attempt in range(1, attempts + 1):
        try:
            response = _post(url, body, timeout_s)
            if response.is_success:
                return Delivery(True, attempt)
            error = f"HTTP {response.status_code}"
            if not _retryable(response):
                return Delivery(False, attempt, error)
        except httpx.HTTPError as exc:
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            error = _masked(error, url)
        if attempt < attempts:
            time.sleep(pause_s * 2 ** (attempt - 1))
    return Delivery(False, attempts, error)


def _post(url: str, body: dict[str, Any] | BinaryIO, timeout_s: float) -> httpx.Response:
    """One POST of ``body``: a dict as JSON, a file streamed in 64 KiB reads with its length."""
    import httpx

    if isinstance(body, dict):
        return httpx.post(url, json=body, timeout=timeout_s)
    size = body.seek(0, os.SEEK_END)
    body.seek(0)
    headers = {"content-type": "application/json", "content-length": str(size)}
    chunks = iter(lambda: body.read(READ_BYTES), b"")
    return httpx.post(url, content=chunks, headers=headers, timeout=timeout_s)


READ_BYTES = 64 * 1024
"""Bytes read from a webhook body's file at a time."""


def append_step_summary(markdown: str) -> Path | None:
    """Append ``markdown`` to ``$GITHUB_STEP_SUMMARY`` when set; returns the file, else None."""
    target = os.environ.get(STEP_SUMMARY_ENV)
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as out:
        out.write(markdown + "\n")
    return Path(target)


def post_alert(url: str, text: str, alert: dict[str, Any]) -> str | None:
    """POST a window threshold alert (``score --follow --window``) with the same delivery as
    run regressions (:func:`deliver`): ``{"text": ..., "alert": {...}}``, ``text`` making it a
    Slack-compatible message, its trace values (the service name) escaped
    (:func:`chat_escape`); returns None when delivered, else why not (the URL masked)."""
    delivery = deliver(url, {"text": f":rotating_light: {chat_escape(text)}", "alert": alert})
    return None if delivery.ok else f"alert webhook {mask_url(url)}: {delivery.error}"
