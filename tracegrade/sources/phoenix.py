"""Arize Phoenix: traces through its REST API, spans as OTLP (OpenInference attributes).

Endpoints (Phoenix's OpenAPI document, ``/openapi.json`` of a running server):

- ``GET /v1/projects/{project}/traces`` lists a project's traces by start time
  (``start_time`` inclusive, ``end_time`` exclusive, ISO 8601; ``sort=start_time&order=asc``;
  ``filter``: Phoenix's trace filter expression, ``--search``), a page of ``limit`` at a time
  (``next_cursor``);
- ``GET /v1/projects/{project}/spans/otlpv1?trace_id=…`` the spans of those traces in OTLP
  form (snake_case fields, hex ids, kind names), a page at a time.

Phoenix keeps neither the resource nor the instrumentation scope, and stores attributes
nested: what it answers is what it kept (a JSON-string attribute such as OpenInference's
``tool.parameters`` comes back as flattened keys).

Settings, as Phoenix's own client reads them: ``PHOENIX_BASE_URL`` or
``PHOENIX_COLLECTOR_ENDPOINT`` (default ``http://localhost:6006``), ``PHOENIX_API_KEY`` (a
bearer token), ``PHOENIX_CLIENT_HEADERS`` (``name=value,...``), ``PHOENIX_PROJECT_NAME`` (the
project; default ``default``).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import quote

from tracegrade import environment
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.sources.base import Found, PullQuery, Settings, base_url, env, iso, unix_nano
from tracegrade.sources.http import ApiClient
from tracegrade.sources.otlp_json import request_of_spans, split_by_trace

NAME = "phoenix"
URL_VARIABLES = (environment.PHOENIX_BASE_URL, environment.PHOENIX_COLLECTOR_ENDPOINT)
DEFAULT_URL = "http://localhost:6006"
DEFAULT_PROJECT = "default"
TRACES_PER_FETCH = 20
"""Trace ids asked for in one spans request."""
SPANS_PAGE = 1000
"""Spans per page of a spans request (Phoenix's maximum)."""


def settings(url: str | None = None) -> Settings:
    """The server and headers from the environment (module docstring); ``url`` wins."""
    headers = {}
    for pair in (env([environment.PHOENIX_CLIENT_HEADERS]) or "").split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[key.strip()] = value.strip()
    if api_key := env([environment.PHOENIX_API_KEY]):
        headers["Authorization"] = f"Bearer {api_key}"
    url = base_url(url, URL_VARIABLES, DEFAULT_URL).removesuffix("/v1/traces")
    return Settings(url, headers)


class PhoenixSource:
    """A Phoenix server's traces (see the module docstring)."""

    name = NAME

    def __init__(self, settings: Settings, client: ApiClient | None = None):
        self.settings = settings
        self.client = client or ApiClient("Phoenix", settings)
        self.project = DEFAULT_PROJECT

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def _path(self, query: PullQuery | None, tail: str) -> str:
        if query is not None:
            self.project = (
                query.project or env([environment.PHOENIX_PROJECT_NAME]) or DEFAULT_PROJECT
            )
        return f"/v1/projects/{quote(self.project, safe='')}/{tail}"

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """Traces by start time, oldest first; ``query.trace_ids`` as given."""
        path = self._path(query, "traces")
        if query.trace_ids:
            yield [Found(t.lower()) for t in query.trace_ids]
            return
        params: dict[str, Any] = {"sort": "start_time", "order": "asc", "limit": query.page_size}
        if query.since_unix_nano is not None:
            params["start_time"] = iso(query.since_unix_nano)
        if query.until_unix_nano is not None:
            params["end_time"] = iso(query.until_unix_nano)
        if query.search:
            params["filter"] = query.search
        while True:
            page = self.client.get(path, params) or {}
            yield [Found(t["trace_id"], unix_nano(t.get("start_time"))) for t in page["data"]]
            if not page.get("next_cursor"):
                return
            params["cursor"] = page["next_cursor"]

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """The spans of these traces, one OTLP request per trace."""
        path = self._path(None, "spans/otlpv1")
        spans: list[Any] = []
        ids = [f.trace_id for f in found]
        for start in range(0, len(ids), TRACES_PER_FETCH):
            params: dict[str, Any] = {
                "trace_id": ids[start : start + TRACES_PER_FETCH],
                "limit": SPANS_PAGE,
            }
            while True:
                page = self.client.get(path, params) or {}
                spans.extend(page.get("data") or [])
                if not page.get("next_cursor"):
                    break
                params["cursor"] = page["next_cursor"]
        if not spans:
            return []
        request = request_of_spans(spans, f"Phoenix {path}")
        return list(split_by_trace(request).values())
