"""Recorded backend answers, replayed strictly: a request the cassette does not hold fails the
test (an ``httpx.MockTransport`` answering 599 and naming the request).

A cassette (``tests/data/sources/<backend>/cassette.json``) is a list of interactions:
``{"method", "path", "query": {name: [values]}, "status", "headers", "body"}``; identical
requests are answered in the order recorded (a 429 then a 200, say).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx

from tracegrade.sources import open_source
from tracegrade.sources.http import ApiClient

DATA = Path(__file__).parents[1] / "data" / "sources"


def request_key(method: str, path: str, query: dict[str, list[str]]) -> str:
    """What identifies a request: method, path and its query (sorted, every value)."""
    pairs = sorted((k, v) for k, values in query.items() for v in values)
    return json.dumps([method, path, pairs])


class Cassette:
    """The interactions of one backend's cassette, and the requests served from it."""

    def __init__(self, path: Path):
        self.path = path
        self.interactions: list[dict[str, Any]] = json.loads(path.read_text())
        self.used: set[int] = set()
        self.served: list[str] = []
        self.unknown: list[str] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        """The recorded answer of ``request`` (the first one not yet used)."""
        query = parse_qs(request.url.query.decode(), keep_blank_values=True)
        key = request_key(request.method, request.url.path, query)
        for index, item in enumerate(self.interactions):
            if index in self.used:
                continue
            if request_key(item["method"], item["path"], item["query"]) == key:
                self.used.add(index)
                self.served.append(key)
                body = item["body"]
                content = body if isinstance(body, str) else json.dumps(body)
                return httpx.Response(item["status"], headers=item.get("headers"), content=content)
        self.unknown.append(key)
        return httpx.Response(599, text=f"not in the cassette {self.path.name}: {key}")

    def source(self, name: str, sleep: Callable[[float], None] = lambda s: None) -> Any:
        """The backend's client, its HTTP answered from this cassette."""
        source = open_source(name, "http://backend.invalid")
        source.client = ApiClient(
            source.client.name,
            source.settings,
            transport=httpx.MockTransport(self.handler),
            sleep=sleep,
        )
        return source


def load(backend: str) -> Cassette:
    """The cassette of ``backend``."""
    return Cassette(DATA / backend / "cassette.json")
