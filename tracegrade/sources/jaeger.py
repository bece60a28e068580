"""Jaeger: traces through its query service's API v3 (HTTP), which answers OTLP/JSON.

Endpoints (``cmd/query/app/apiv3/http_gateway.go`` of jaegertracing/jaeger):

- ``GET /api/v3/traces?query.service_name=…&query.start_time_min=…&query.start_time_max=…``
  (RFC 3339; both times required; ``query.num_traces``; ``query.operation_name``: ``--search``)
  finds traces and answers all their spans, ``{"result": {"resourceSpans": […]}}``;
- ``GET /api/v3/traces/{trace_id}`` one trace, in the same form.

The API has no cursor: a search answers at most ``query.num_traces`` traces, the newest of
the window, so :meth:`JaegerSource.find` pages by narrowing the window's end to the oldest
trace of the previous answer until an answer brings nothing new. The spans of a search's
traces come with the search; :meth:`JaegerSource.fetch` reuses them.

Settings: the query service's URL (``--url`` or ``TRACEGRADE_JAEGER_URL``; default
``http://localhost:16686``), an optional bearer token in ``TRACEGRADE_JAEGER_TOKEN`` (a query
service behind an authenticating proxy; Jaeger's clients have no variables of their own).
``--project`` is the service (Jaeger searches one service at a time).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from tracegrade import environment
from tracegrade.errors import ConfigError
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.sources.base import Found, PullQuery, Settings, base_url, env, iso
from tracegrade.sources.http import ApiClient
from tracegrade.sources.otlp_json import request_from_json, split_by_trace

NAME = "jaeger"
DEFAULT_URL = "http://localhost:16686"
TRACES_PATH = "/api/v3/traces"


def settings(url: str | None = None) -> Settings:
    """The query service and token from the environment (module docstring); ``url`` wins."""
    headers = {}
    if token := env([environment.TRACEGRADE_JAEGER_TOKEN]):
        headers["Authorization"] = f"Bearer {token}"
    return Settings(base_url(url, [environment.TRACEGRADE_JAEGER_URL], DEFAULT_URL), headers)


class JaegerSource:
    """A Jaeger query service's traces (see the module docstring)."""

    name = NAME

    def __init__(self, settings: Settings, client: ApiClient | None = None):
        self.settings = settings
        self.client = client or ApiClient("Jaeger", settings)
        self._found: dict[str, ExportTraceServiceRequest] = {}

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """The service's traces in the window, newest first, a window at a time.

        Raises:
            ConfigError: a search without ``--project`` (the service).
        """
        if query.trace_ids:
            yield [Found(t.lower()) for t in query.trace_ids]
            return
        if not query.project:
            raise ConfigError("Jaeger searches one service: give --project SERVICE")
        end = query.until_unix_nano or time.time_ns()
        seen: set[str] = set()
        while True:
            params: dict[str, Any] = {
                "query.service_name": query.project,
                "query.start_time_min": iso(query.since_unix_nano or 0),
                "query.start_time_max": iso(end),
                "query.num_traces": query.page_size,
            }
            if query.search:
                params["query.operation_name"] = query.search
            page = self._search(params, seen)
            if not page:
                return
            yield page
            end = min(f.start_unix_nano for f in page) + 1

    def _search(self, params: dict[str, Any], seen: set[str]) -> list[Found]:
        answer = self.client.get(TRACES_PATH, params)
        new = []
        for document in _documents(answer):
            request = request_from_json(document, f"Jaeger {TRACES_PATH}")
            for trace_id, trace in split_by_trace(request).items():
                if trace_id in seen:
                    continue
                seen.add(trace_id)
                self._found[trace_id] = trace
                starts = [
                    s.start_time_unix_nano
                    for g in trace.resource_spans
                    for ss in g.scope_spans
                    for s in ss.spans
                ]
                new.append(Found(trace_id, min(starts)))
        return sorted(new, key=lambda f: f.start_unix_nano, reverse=True)

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """The traces' spans: those a search brought, else ``GET /api/v3/traces/{id}``."""
        requests = []
        for trace in found:
            request = self._found.pop(trace.trace_id, None)
            if request is None:
                path = f"{TRACES_PATH}/{trace.trace_id}"
                answer = self.client.get(path, missing_ok=True)
                for document in _documents(answer):
                    request = request_from_json(document, f"Jaeger {path}")
                    if request.resource_spans:
                        requests.append(request)
                continue
            requests.append(request)
        return requests


def _documents(answer: Any) -> list[Any]:
    """The JSON documents of an answer (one, several streamed, or none for a 404)."""
    if answer is None:
        return []
    return answer if isinstance(answer, list) else [answer]
