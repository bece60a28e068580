"""Window threshold alerts, posted with the same webhook delivery as run regressions
(:func:`tracegrade.report.alerts.deliver`: bounded retries, failures returned, never raised).
The body is ``{"text": ..., "alert": {...}}``; ``text`` makes it a Slack-compatible message."""

from __future__ import annotations

from typing import Any

from tracegrade.report.alerts import deliver


def post_alert(url: str, text: str, alert: dict[str, Any]) -> str | None:
    """POST the alert; returns None when delivered, else why not."""
    delivery = deliver(url, {"text": f":rotating_light: {text}", "alert": alert})
    return None if delivery.ok else f"alert webhook {url}: {delivery.error}"
