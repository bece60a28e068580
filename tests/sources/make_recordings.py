"""Write the recorded answers of Langfuse, Jaeger and Tempo (``tests/data/sources/*/cassette.json``)
that the tests replay, in the shapes each API's documentation publishes:

- Jaeger (API v3, ``cmd/query/app/apiv3`` of jaegertracing/jaeger): the spans of a real
  recording (``tests/data/frameworks/strands-latest``: Strands Agents, GenAI semconv) as
  ``{"result": {"resourceSpans": …}}`` with hex ids, integer enums and 64-bit numbers as strings;
- Tempo (``docs/sources/tempo/api_docs``): ``/api/search`` answers
  (``traces[].traceID/startTimeUnixNano/…``, ``metrics``) and ``/api/v2/traces/{id}`` answers
  (``{"trace": {"resourceSpans": …}, "status": "COMPLETE"}``, base64 ids) of another
  (``langgraph-openinference``: LangGraph, OpenInference);
- Langfuse (public API ``/api/public/traces``): a list (``data``, ``meta``) and trace details
  with observations, built from the conversations of the weather cassette the harness replays
  (``tests/data/cassettes/opentelemetry-python-contrib/…tool_calls_with_content.yaml``).

Each backend answers the requests the client sends for the scenarios of
``tests/sources/test_recorded.py`` (a first pull, a resumed one, trace ids), computed by a small
model of the documented semantics below, and recorded. Re-record with one command:

    .venv/bin/python tests/sources/make_recordings.py
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.sources import scenarios  # noqa: E402
from tracegrade.otlp.codec import request_to_json  # noqa: E402
from tracegrade.otlp.files import read_paths  # noqa: E402
from tracegrade.sources.base import unix_nano  # noqa: E402
from tracegrade.sources.otlp_json import split_by_trace  # noqa: E402

DATA = ROOT / "tests" / "data" / "sources"


class Recorder:
    """An ``httpx`` transport answering from ``serve`` and recording every interaction."""

    def __init__(self, serve: Any):
        self.serve = serve
        self.interactions: list[dict[str, Any]] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        query = parse_qs(request.url.query.decode(), keep_blank_values=True)
        status, headers, body = self.serve(request.method, request.url.path, query)
        self.interactions.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": query,
                "status": status,
                "headers": headers,
                "body": body,
            }
        )
        return httpx.Response(status, headers=headers, content=json.dumps(body))


def traces_of(path: Path) -> dict[str, Any]:
    """The traces of a recording: trace id -> OTLP request."""
    payloads = read_paths([path])
    out: dict[str, Any] = {}
    for request in payloads.traces:
        out.update(split_by_trace(request))
    return out


def start_of(request: Any) -> int:
    return min(
        s.start_time_unix_nano
        for g in request.resource_spans
        for ss in g.scope_spans
        for s in ss.spans
    )


# --- Jaeger -------------------------------------------------------------------------------


def jaeger_server(traces: dict[str, Any]) -> Any:
    def serve(
        method: str, path: str, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        if path.startswith("/api/v3/traces/"):
            trace_id = path.rsplit("/", 1)[1]
            if trace_id not in traces:
                return 404, {}, {"error": {"httpCode": 404, "message": "trace not found"}}
            return 200, {}, {"result": request_to_json(traces[trace_id])}
        low = unix_nano(query["query.start_time_min"][0])
        high = unix_nano(query["query.start_time_max"][0])
        count = int(query.get("query.num_traces", ["20"])[0])
        chosen = sorted(
            (t for t in traces if low <= start_of(traces[t]) <= high),
            key=lambda t: start_of(traces[t]),
            reverse=True,
        )[:count]
        groups = [g for t in chosen for g in request_to_json(traces[t])["resourceSpans"]]
        return 200, {}, {"result": {"resourceSpans": groups}}

    return serve


# --- Tempo --------------------------------------------------------------------------------


def _base64_ids(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: (
                base64.b64encode(bytes.fromhex(v)).decode()
                if k in ("traceId", "spanId", "parentSpanId") and v
                else _base64_ids(v)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_base64_ids(v) for v in node]
    return node


def tempo_server(traces: dict[str, Any]) -> Any:
    def serve(
        method: str, path: str, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        if path.startswith("/api/v2/traces/"):
            trace_id = path.rsplit("/", 1)[1]
            if trace_id not in traces:
                return 404, {}, {"message": "trace not found"}
            body = {"trace": _base64_ids(request_to_json(traces[trace_id])), "status": "COMPLETE"}
            return 200, {}, body
        low, high = int(query["start"][0]), int(query["end"][0])
        limit = int(query["limit"][0])
        chosen = [t for t in traces if low <= start_of(traces[t]) // 1_000_000_000 < high][:limit]
        found = []
        for trace_id in chosen:
            spans = [
                s for g in traces[trace_id].resource_spans for ss in g.scope_spans for s in ss.spans
            ]
            root = next(s for s in spans if not s.parent_span_id)
            found.append(
                {
                    "traceID": trace_id,
                    "rootServiceName": "langgraph-agent",
                    "rootTraceName": root.name,
                    "startTimeUnixNano": str(start_of(traces[trace_id])),
                    "durationMs": max(
                        1, (root.end_time_unix_nano - root.start_time_unix_nano) // 1_000_000
                    ),
                }
            )
        return (
            200,
            {},
            {
                "traces": found,
                "metrics": {"inspectedBytes": "4096", "completedJobs": 1, "totalJobs": 1},
            },
        )

    return serve


# --- Langfuse -----------------------------------------------------------------------------


def langfuse_server(details: list[dict[str, Any]], throttle_once: bool = True) -> Any:
    by_id = {d["id"]: d for d in details}
    throttled = [not throttle_once]

    def serve(
        method: str, path: str, query: dict[str, list[str]]
    ) -> tuple[int, dict[str, str], Any]:
        if path.startswith("/api/public/traces/"):
            trace = by_id.get(path.rsplit("/", 1)[1])
            if trace is None:
                return 404, {}, {"message": "Trace not found"}
            return 200, {}, trace
        if not throttled[0]:  # a rate limit, as Langfuse answers one: 429 with Retry-After
            throttled[0] = True
            return 429, {"Retry-After": "2"}, {"message": "Rate limit exceeded"}
        low = unix_nano(query["fromTimestamp"][0]) if "fromTimestamp" in query else 0
        high = unix_nano(query["toTimestamp"][0]) if "toTimestamp" in query else 2**63
        chosen = sorted(
            (d for d in details if low <= unix_nano(d["timestamp"]) < high),
            key=lambda d: d["timestamp"],
        )
        limit, page = int(query["limit"][0]), int(query["page"][0])
        rows = [
            {k: v for k, v in d.items() if k != "observations"}
            | {"observations": [o["id"] for o in d["observations"]]}
            for d in chosen[(page - 1) * limit : page * limit]
        ]
        pages = -(-len(chosen) // limit)
        meta = {"page": page, "limit": limit, "totalItems": len(chosen), "totalPages": pages}
        return 200, {}, {"data": rows, "meta": meta}

    return serve


def main() -> int:
    frameworks = ROOT / "tests" / "data" / "frameworks"
    servers = {
        "jaeger": jaeger_server(traces_of(frameworks / "strands-latest" / "traces.binpb.gz")),
        "tempo": tempo_server(
            traces_of(frameworks / "langgraph-openinference" / "traces.binpb.gz")
        ),
        "langfuse": langfuse_server(scenarios.langfuse_traces()),
    }
    for name, serve in servers.items():
        recorder = Recorder(serve)
        scenarios.run(name, httpx.MockTransport(recorder))
        out = DATA / name / "cassette.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(recorder.interactions, indent=1, ensure_ascii=False) + "\n")
        print(f"{out.relative_to(ROOT)}: {len(recorder.interactions)} interaction(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
