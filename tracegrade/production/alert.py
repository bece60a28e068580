"""Posting an alert to a webhook: one JSON POST (``{"text": ..., "alert": {...}}``, the shape
Slack-compatible incoming webhooks accept), retried once; a failure is reported, never
raised, so monitoring goes on."""

from __future__ import annotations

from typing import Any

TIMEOUT_S = 10.0


def post_alert(
    url: str, text: str, alert: dict[str, Any], timeout_s: float = TIMEOUT_S
) -> str | None:
    """POST the alert; returns None on a 2xx answer, else why it failed (status or error)."""
    import httpx

    problem = None
    for _ in range(2):
        try:
            response = httpx.post(url, json={"text": text, "alert": alert}, timeout=timeout_s)
        except httpx.HTTPError as exc:
            problem = f"{type(exc).__name__}: {exc}"
            continue
        if response.is_success:
            return None
        problem = f"HTTP {response.status_code}"
    return f"alert webhook {url}: {problem}"
