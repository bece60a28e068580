"""HTTP to a trace backend (httpx), respecting its rate limits: a ``429 Too Many Requests`` or
a ``502``/``503``/``504`` is retried after the response's ``Retry-After`` (seconds or an HTTP
date; else 1, 2, 4 … s), at most :data:`RETRIES` times and never waiting more than
:data:`MAX_WAIT_S` at once; a connection error is retried the same way. Credentials travel in
headers set once (:class:`~tracegrade.sources.base.Settings`) and never appear in an error.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping
from typing import Any

import httpx

from tracegrade.errors import TracegradeError
from tracegrade.sources.base import Settings
from tracegrade.version import __version__

RETRIES = 5
"""Retries of one request after a rate limit, an overloaded backend or a broken connection."""
MAX_WAIT_S = 60.0
"""The longest single wait before a retry, whatever ``Retry-After`` asks."""
RETRY_STATUSES = frozenset({429, 502, 503, 504})
MAX_RESPONSE_BYTES = 256 * 1024 * 1024
"""The largest answer read (decoded); a bigger one is refused, not held (a page size or a
narrower query keeps answers below it)."""


class SourceError(TracegradeError):
    """A trace backend refused a request or failed; the message names the backend, the
    request path and the status, never a credential."""


def retry_after_s(response: httpx.Response, attempt: int, now: float | None = None) -> float:
    """Seconds to wait before retrying ``response`` (its ``Retry-After``, else ``2**attempt``),
    at most :data:`MAX_WAIT_S`."""
    value = response.headers.get("retry-after", "").strip()
    wait = float(2**attempt)
    if value.replace(".", "", 1).isdigit():
        wait = float(value)
    elif value:
        try:
            moment = email.utils.parsedate_to_datetime(value).timestamp()
            wait = moment - (time.time() if now is None else now)
        except (TypeError, ValueError):
            pass
    return min(max(wait, 0.0), MAX_WAIT_S)


class ApiClient:
    """JSON requests to one backend (``name`` in messages) at ``settings.url``.

    ``sleep`` is :func:`time.sleep` (a test passes its own to count the waits)."""

    def __init__(
        self,
        name: str,
        settings: Settings,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.name = name
        self.settings = settings
        self.sleep = sleep
        self.requests = 0
        """Requests sent, retries included."""
        headers = {"User-Agent": f"tracegrade/{__version__}", **settings.headers}
        self.http = httpx.Client(
            base_url=settings.url,
            headers=headers,
            timeout=settings.timeout_s,
            transport=transport,
            follow_redirects=True,
        )

    def close(self) -> None:
        """Close the connections."""
        self.http.close()

    def get(
        self, path: str, params: Mapping[str, Any] | None = None, *, missing_ok: bool = False
    ) -> Any:
        """``GET path`` and its JSON body; None for a ``404`` when ``missing_ok``.

        Raises:
            SourceError: as :meth:`request`.
        """
        return self.request("GET", path, params=params, missing_ok=missing_ok)

    def post(self, path: str, body: Any) -> Any:
        """``POST path`` with a JSON body, and the JSON answer. Raises: SourceError."""
        return self.request("POST", path, json=body)

    def request(self, method: str, path: str, *, missing_ok: bool = False, **kwargs: Any) -> Any:
        """One request, retried as the module docstring says; its JSON body (None if empty,
        or a ``404`` when ``missing_ok``).

        Raises:
            SourceError: a status other than 2xx after the retries, a connection that keeps
                failing, or a body that is not JSON.
        """
        response = self._send(method, path, kwargs)
        if response.status_code == 404 and missing_ok:
            return None
        if response.status_code >= 400:
            raise SourceError(
                f"{self.name} at {self.settings.describe()}: {method} {path} answered "
                f"{response.status_code} {response.reason_phrase}{_detail(response)}"
            )
        if not response.content.strip():
            return None
        try:
            return response.json()
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _json_stream(response.text, self.name, path)

    def _send(self, method: str, path: str, kwargs: dict[str, Any]) -> httpx.Response:
        for attempt in range(RETRIES + 1):
            self.requests += 1
            try:
                response = self._bounded(method, path, kwargs)
            except httpx.TransportError as exc:
                if attempt == RETRIES:
                    raise SourceError(
                        f"{self.name} at {self.settings.describe()}: {method} {path}: "
                        f"{type(exc).__name__}: {exc}"
                    ) from None
                self.sleep(min(float(2**attempt), MAX_WAIT_S))
                continue
            if response.status_code not in RETRY_STATUSES or attempt == RETRIES:
                return response
            self.sleep(retry_after_s(response, attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _bounded(self, method: str, path: str, kwargs: dict[str, Any]) -> httpx.Response:
        """One exchange, its body read up to :data:`MAX_RESPONSE_BYTES`.

        Raises:
            SourceError: a bigger body.
        """
        with self.http.stream(method, path, **kwargs) as streamed:
            chunks, size = [], 0
            for chunk in streamed.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise SourceError(
                        f"{self.name} at {self.settings.describe()}: {method} {path} answered "
                        f"more than {MAX_RESPONSE_BYTES // 2**20} MiB; ask less per request "
                        "(--page-size, a narrower --since/--until or --search)"
                    )
                chunks.append(chunk)
        headers = [
            (k, v)
            for k, v in streamed.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")
        ]
        return httpx.Response(
            streamed.status_code,
            headers=headers,
            content=b"".join(chunks),
            request=streamed.request,
        )


def _detail(response: httpx.Response) -> str:
    """A short reason from an error body (its ``message``/``detail``/``error``), if any."""
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        text = response.text.strip()
        return f": {text[:200]}" if text else ""
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            if body.get(key):
                return f": {str(body[key])[:200]}"
    return ""


def _json_stream(text: str, name: str, path: str) -> list[Any]:
    """Concatenated JSON values (a streamed answer, as Jaeger's gateway may send)."""
    decoder = json.JSONDecoder()
    values, index = [], 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        try:
            value, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError as exc:
            raise SourceError(f"{name}: {path} did not answer JSON: {exc}") from None
        values.append(value)
    return values
