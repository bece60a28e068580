"""Page times of ``tracegrade ui`` over a large store: 10,000 runs and 1,000,000 spans.

    python benchmarks/web.py [--runs 10000] [--spans 1000000] [--repeat 5] [--db PATH] [--json]

Builds (or reuses, with ``--db`` pointing at one built before) a SQLite store holding
``--runs`` stored runs (the run document of a five-case run, each with its own id, dataset
one of three, label one of ten) and ``--spans`` spans in traces of ten spans (an
``invoke_agent`` root, four ``chat`` and five ``execute_tool`` spans with GenAI attributes),
written through :meth:`tracegrade.store.traces.Store.write` as OTLP requests. Then it
requests every page in process (starlette's TestClient, no network) and reports the median
and the maximum of ``--repeat`` requests per page, in milliseconds. The issue's target is
under 300 ms per page.

Before the pages, the trace index (the Traces page's search, :mod:`tracegrade.store.search`)
is built from scratch (``index_s``: every trace normalised and written, as ``tracegrade ui``
does in the background); then the search is measured with each filter, both where every
trace matches (a page fills at once) and where none does (the whole index is read). One
trace in ten has a failed tool call and a distinct tool argument, one run case in five is
failed, so the filters select something.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (  # noqa: E402
    ExportTraceServiceRequest,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue  # noqa: E402
from opentelemetry.proto.trace.v1 import trace_pb2  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from tracegrade.store.runs import save_run  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402
from tracegrade.web import UiConfig, create_app  # noqa: E402
from tracegrade.web.trace_search import index_traces  # noqa: E402

SPANS_PER_TRACE = 10
TRACES_PER_REQUEST = 1000
DATASETS = ("shop", "support", "travel")


def _attrs(**values: Any) -> list[KeyValue]:
    out = []
    for key, value in values.items():
        any_value = (
            AnyValue(int_value=value)
            if isinstance(value, int)
            else AnyValue(string_value=str(value))
        )
        out.append(KeyValue(key=key.replace("__", "."), value=any_value))
    return out


def _templates() -> list[trace_pb2.Span]:
    root = trace_pb2.Span(
        name="invoke_agent shop",
        attributes=_attrs(gen_ai__operation__name="invoke_agent", gen_ai__agent__name="shop"),
    )
    chat = trace_pb2.Span(
        name="chat gpt-4o-mini",
        attributes=_attrs(
            gen_ai__operation__name="chat",
            gen_ai__request__model="gpt-4o-mini",
            gen_ai__usage__input_tokens=420,
            gen_ai__usage__output_tokens=60,
        ),
    )
    tool = trace_pb2.Span(
        name="execute_tool search_products",
        attributes=_attrs(
            gen_ai__operation__name="execute_tool",
            gen_ai__tool__name="search_products",
            gen_ai__tool__call__arguments='{"query": "headphones", "max_price": 300}',
            gen_ai__tool__call__result='[{"name": "JBL Tune 520BT", "price": 44.96}]',
        ),
    )
    return [root] + [chat, tool] * 4 + [chat]


def _vary(span: trace_pb2.Span, n: int) -> None:
    """One trace in ten: its first tool call fails and passes a distinct order id."""
    for kv in span.attributes:
        if kv.key == "gen_ai.tool.call.arguments":
            kv.value.string_value = f'{{"query": "order-{n:07d}", "max_price": 300}}'
    span.status.code = trace_pb2.Status.STATUS_CODE_ERROR
    span.status.message = "upstream timeout"


def _trace_request(first: int, count: int, start_ns: int) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    group = request.resource_spans.add()
    group.resource.attributes.extend(_attrs(service__name="shop-agent"))
    scoped = group.scope_spans.add()
    scoped.scope.name = "benchmarks.web"
    templates = _templates()
    for n in range(first, first + count):
        trace_id = n.to_bytes(16, "big")
        t0 = start_ns + n * 1_000_000_000
        for i, template in enumerate(templates):
            span = scoped.spans.add()
            span.CopyFrom(template)
            span.trace_id = trace_id
            span.span_id = (n * SPANS_PER_TRACE + i + 1).to_bytes(8, "big")
            if i:
                span.parent_span_id = (n * SPANS_PER_TRACE + 1).to_bytes(8, "big")
            span.start_time_unix_nano = t0 + i * 50_000_000
            span.end_time_unix_nano = t0 + (i + 1) * 50_000_000 if i else t0 + 600_000_000
            if i == 2 and n % 10 == 0:
                _vary(span, n)
    return request


def fill_spans(store: Store, spans: int) -> list[str]:
    """Write ``spans`` spans in traces of ten; returns the trace ids (hex)."""
    traces = max(spans // SPANS_PER_TRACE, 1)
    start_ns = time.time_ns() - traces * 1_000_000_000
    for first in range(0, traces, TRACES_PER_REQUEST):
        count = min(TRACES_PER_REQUEST, traces - first)
        store.write([_trace_request(first, count, start_ns)])
    return [n.to_bytes(16, "big").hex() for n in range(traces)]


def _run_doc(template: dict[str, Any], n: int, trace_ids: list[str]) -> dict[str, Any]:
    doc = copy.deepcopy(template)
    doc["run"]["run_id"] = f"bench-{n:06d}"
    doc["run"]["label"] = f"v{n % 10}"
    doc["run"]["dataset"] = {**(doc["run"]["dataset"] or {}), "name": DATASETS[n % 3]}
    doc["summary"]["score"] = 0.6 + 0.4 * ((n * 37) % 100) / 100
    for i, case in enumerate(doc["cases"]):
        case["trace_id"] = trace_ids[(n * len(doc["cases"]) + i) % len(trace_ids)]
        case["score"] = 0.5 + 0.5 * ((n + i) % 7) / 7
        case["passed"] = i != 4
        case.pop("attempts", None)
    return doc


def template_doc() -> dict[str, Any]:
    """A five-case run document in the ``tracegrade.run/1`` shape."""
    cases = [
        {
            "case_id": f"case-{i}",
            "trace_id": None,
            "passed": True,
            "score": 1.0,
            "scores": {"tool_correctness": 1.0, "value_grounding": 1.0},
            "reasons": [],
            "hard_failures": [],
            "axes": {"correctness": 1.0},
            "excluded": {},
            "tags": ["products", f"t{i % 2}"],
            "tier": "smoke",
            "weight": 1.0,
            "metadata": {},
            "usage": {
                "duration_ms": 600.0,
                "input_tokens": 2100,
                "output_tokens": 300,
                "cost_usd": 0.0005,
                "llm_calls": 5,
                "tool_calls": 4,
            },
            "details": {
                "tool_correctness": {"value": 1.0, "reason": "1/1 expected", "details": {}},
                "value_grounding": {
                    "value": 1.0,
                    "reason": "3/3 grounded",
                    "details": {"ungrounded": []},
                },
            },
        }
        for i in range(5)
    ]
    summary = {
        "results": 5,
        "passed": 5,
        "failed": 0,
        "pass_rate": 1.0,
        "score": 1.0,
        "threshold": 0.7,
        "axes": {"correctness": 1.0},
        "latency_p50_ms": 600.0,
        "latency_p95_ms": 620.0,
        "cost_usd": 0.0025,
        "hallucination_rate": 0.0,
    }
    run = {
        "run_id": "",
        "created_at": "2026-11-23T00:00:00+00:00",
        "passed": True,
        "dataset": {"name": "shop", "source": None, "digest": "0" * 64, "cases": 5},
        "label": None,
        "git_sha": "0" * 40,
        "models": ["gpt-4o-mini"],
        "repeat": 1,
    }
    return {"schema_version": "tracegrade.run/1", "run": run, "summary": summary, "cases": cases}


def build(db: Path, runs: int, spans: int) -> dict[str, float]:
    """Fill a new store; returns the seconds each part took."""
    with Store(db) as store:
        t0 = time.perf_counter()
        trace_ids = fill_spans(store, spans)
        t1 = time.perf_counter()
        template = template_doc()
        for n in range(runs):
            save_run(store, _run_doc(template, n, trace_ids))
        t2 = time.perf_counter()
    return {"spans_s": round(t1 - t0, 1), "runs_s": round(t2 - t1, 1)}


def index(db: Path) -> dict[str, float]:
    """Build the trace index from scratch; returns its seconds and traces per second."""
    with Store(db) as store:
        store.db.execute("DELETE FROM trace_index")
        store.db.execute("DELETE FROM trace_tools")
        store.db.execute("DELETE FROM trace_index_state")
        store.db.conn.commit()
        t0 = time.perf_counter()
        done = 0
        while indexed := index_traces(store, 4096):
            done += indexed
        took = time.perf_counter() - t0
    return {"index_s": round(took, 1), "traces_per_s": round(done / max(took, 1e-9))}


def pages(client: TestClient) -> list[tuple[str, str]]:
    """(name, path) of every page measured."""
    runs = client.get("/runs.json").json()
    newest, older = runs["runs"][0]["run_id"], runs["runs"][1]["run_id"]
    trace_id = client.get("/traces.json").json()["traces"][0]["trace_id"]
    deep = client.get("/runs.json", params={"label": "v3"}).json()["next_before"] or ""
    return [
        ("runs", "/runs"),
        ("runs, page 2", f"/runs?before={runs['next_before'] or ''}"),
        ("runs by dataset", "/runs?dataset=support"),
        ("runs by label", "/runs?label=v3"),
        ("runs by label, page 2", f"/runs?label=v3&before={deep}"),
        ("trends (200 runs)", "/trends?dataset=shop"),
        ("run", f"/runs/{newest}"),
        ("case result + waterfall", f"/runs/{newest}/cases/0"),
        ("compare", f"/compare?base={older}&current={newest}"),
        ("traces", "/traces"),
        ("traces: text, all match", "/traces?q=headphones"),
        ("traces: text, 1 in 10", "/traces?q=order-"),
        ("traces: text, none", "/traces?q=no-such-needle"),
        ("traces: tool, all", "/traces?tool=search_products"),
        ("traces: tool, none", "/traces?tool=no_such_tool"),
        ("traces: service, none", "/traces?service=no-such-service"),
        ("traces: verdict fail", "/traces?verdict=fail"),
        ("traces: verdict unscored", "/traces?verdict=unscored"),
        ("traces: last hour", f"/traces?since={_hour_ago()}"),
        ("trace + chat + scores", f"/traces/{trace_id}"),
        ("datasets", "/datasets"),
    ]


def _hour_ago() -> str:
    return time.strftime("%Y-%m-%dT%H:%M", time.gmtime(time.time() - 3600))


def measure(db: Path, repeat: int) -> list[dict[str, Any]]:
    """Median and max ms of ``repeat`` requests of each page (the background indexer off:
    :func:`index` built the index)."""
    app = create_app(UiConfig(db=str(db), index_traces=False))
    rows = []
    with TestClient(app, base_url="http://localhost") as client:
        for name, path in pages(client):
            client.get(path)  # warm: first use of the config, the template, the page cache
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - t0) * 1000)
                assert response.status_code == 200, (path, response.status_code)
            rows.append(
                {
                    "page": name,
                    "path": path,
                    "median_ms": round(statistics.median(times), 1),
                    "max_ms": round(max(times), 1),
                }
            )
    app.state.ui.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--spans", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--db", type=Path, help="reuse (or build once into) this store file")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db or Path(tmp) / "web.db"
        built = {} if db.exists() else build(db, args.runs, args.spans)
        built.update(index(db))
        with Store(db) as store:
            counts = store.counts()
        rows = measure(db, args.repeat)
    if args.json:
        print(json.dumps({"built": built, "counts": counts, "pages": rows}, indent=2))
        return
    print(f"store: {counts} (built in {built or 'reused'})")
    for row in rows:
        print(f"{row['page']:<28} {row['median_ms']:>8.1f} ms median {row['max_ms']:>8.1f} ms max")


if __name__ == "__main__":
    main()
