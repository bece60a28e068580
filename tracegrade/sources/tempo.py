"""Grafana Tempo: TraceQL search, and traces by id as OTLP/JSON.

Endpoints (Tempo's HTTP API documentation, ``docs/sources/tempo/api_docs``):

- ``GET /api/search?q=…&start=…&end=…&limit=…`` (TraceQL; times in Unix seconds) answers
  ``{"traces": [{"traceID", "startTimeUnixNano", …}], "metrics": {…}}``;
- ``GET /api/v2/traces/{traceID}`` answers ``{"trace": {"resourceSpans": […]}, "status": …}``
  (ids in base64, protobuf's JSON mapping).

Search has no cursor: it answers at most ``limit`` traces of a window, the first it finds (in
no order). :meth:`TempoSource.find` therefore pages by windows: a full answer (``limit``
traces) splits its window in two halves, asked again, until every answer is short of the limit
or its window is one second (Tempo's times are whole seconds; a full one-second window keeps
the traces it answered). Without ``--since`` the window is the last
:data:`DEFAULT_WINDOW_S` seconds before ``--until`` (else now).

Settings: ``--url`` or ``TRACEGRADE_TEMPO_URL`` (default ``http://localhost:3200``); an
optional bearer token in ``TRACEGRADE_TEMPO_TOKEN`` and tenant (``X-Scope-OrgID``) in
``TRACEGRADE_TEMPO_TENANT`` (Tempo's clients have no variables of their own). ``--project``
is a service (``{ resource.service.name = "…" }``); ``--search`` any TraceQL query.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence

from tracegrade import environment
from tracegrade.otlp.codec import ExportTraceServiceRequest
from tracegrade.sources.base import Found, PullQuery, Settings, base_url, env
from tracegrade.sources.http import ApiClient
from tracegrade.sources.otlp_json import request_from_json

NAME = "tempo"
DEFAULT_URL = "http://localhost:3200"
SEARCH_PATH = "/api/search"
DEFAULT_WINDOW_S = 30 * 86400
"""The search window without ``--since``: 30 days."""


def settings(url: str | None = None) -> Settings:
    """The server, token and tenant from the environment (module docstring); ``url`` wins."""
    headers = {}
    if token := env([environment.TRACEGRADE_TEMPO_TOKEN]):
        headers["Authorization"] = f"Bearer {token}"
    if tenant := env([environment.TRACEGRADE_TEMPO_TENANT]):
        headers["X-Scope-OrgID"] = tenant
    return Settings(base_url(url, [environment.TRACEGRADE_TEMPO_URL], DEFAULT_URL), headers)


def traceql(query: PullQuery) -> str:
    """The TraceQL query of a pull: ``search``, else the service's spans, else every trace."""
    if query.search:
        return query.search
    if query.project:
        return "{ resource.service.name = " + json.dumps(query.project) + " }"
    return "{}"


class TempoSource:
    """A Tempo server's traces (see the module docstring)."""

    name = NAME

    def __init__(self, settings: Settings, client: ApiClient | None = None):
        self.settings = settings
        self.client = client or ApiClient("Tempo", settings)

    def close(self) -> None:
        """Close the HTTP connections."""
        self.client.close()

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """The traces TraceQL matches in the window (module docstring), a window at a time."""
        if query.trace_ids:
            yield [Found(t.lower()) for t in query.trace_ids]
            return
        end_s = -(-(query.until_unix_nano or time.time_ns()) // 1_000_000_000)
        start_s = (
            query.since_unix_nano // 1_000_000_000
            if query.since_unix_nano is not None
            else end_s - DEFAULT_WINDOW_S
        )
        seen: set[str] = set()
        windows = [(start_s, end_s)]
        while windows:
            start, end = windows.pop()
            answer = self._search(query, start, end)
            if len(answer) >= query.page_size and end - start > 1:
                middle = (start + end) // 2
                windows += [(start, middle), (middle, end)]  # the newer half first
                continue
            page = [f for f in answer if f.trace_id not in seen]
            seen.update(f.trace_id for f in page)
            if page:
                yield page

    def _search(self, query: PullQuery, start_s: int, end_s: int) -> list[Found]:
        params = {"q": traceql(query), "start": start_s, "end": end_s, "limit": query.page_size}
        answer = self.client.get(SEARCH_PATH, params) or {}
        return [
            Found(_hex_id(t["traceID"]), int(t.get("startTimeUnixNano") or 0))
            for t in answer.get("traces") or []
        ]

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """Each trace by id (``/api/v2/traces``); a trace Tempo no longer has is skipped."""
        requests = []
        for trace in found:
            path = f"/api/v2/traces/{trace.trace_id}"
            answer = self.client.get(path, missing_ok=True)
            if answer is None:
                continue
            request = request_from_json(answer, f"Tempo {path}")
            if request.resource_spans:
                requests.append(request)
        return requests


def _hex_id(value: str) -> str:
    """A trace id of a search answer, as 32 hex digits (Tempo drops leading zeros)."""
    return value.lower().rjust(32, "0")
