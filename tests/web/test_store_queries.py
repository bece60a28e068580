"""The dashboard's store queries (:mod:`tracegrade.store.browse`, :mod:`tracegrade.store.datasets`,
the trace search :mod:`tracegrade.store.search`) on both backends: SQLite and the real
PostgreSQL server."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.errors import StoreError
from tracegrade.store import browse, search
from tracegrade.store.datasets import delete_dataset, get_dataset, list_datasets, put_dataset
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store
from tracegrade.web.trace_search import index_traces

DOC = json.loads((Path(__file__).parent / "run_document.json").read_text())


def _save(store: Store, run_id: str, dataset: str, label: str) -> None:
    doc = copy.deepcopy(DOC)
    doc["run"].update(run_id=run_id, label=label, dataset={"name": dataset, "digest": "d"})
    save_run(store, doc)


def test_runs_page_filters_and_cursor_on_both_backends(store_location: str) -> None:
    with Store(store_location) as store:
        for n in range(5):
            _save(store, f"r{n}", "shop" if n % 2 else "travel", f"v{n % 2}")
        first = browse.list_run_page(store, limit=2)
        second = browse.list_run_page(store, limit=2, before=first.next_before)
        third = browse.list_run_page(store, limit=2, before=second.next_before)
        listed = [r["run_id"] for page in (first, second, third) for r in page.rows]
        assert len(listed) == 5 and len(set(listed)) == 5 and third.next_before is None
        shop = browse.list_run_page(store, dataset="shop")
        assert {r["run_id"] for r in shop.rows} == {"r1", "r3"}
        labelled = browse.list_run_page(store, label="v0")
        assert {r["run_id"] for r in labelled.rows} == {"r0", "r2", "r4"}
        assert browse.dataset_names(store) == ["shop", "travel"]
        assert [r["run_id"] for r in browse.trend(store, "shop")] == [
            r["run_id"] for r in reversed(shop.rows)
        ]
        with pytest.raises(StoreError, match="bad page cursor"):
            browse.list_run_page(store, before="nonsense")


def test_stored_datasets_on_both_backends(store_location: str) -> None:
    with Store(store_location) as store:
        put_dataset(store, "team", "name: team\ncases: []\n")
        put_dataset(store, "team", "name: team\ncases: [{input: hi}]\n")
        assert list_datasets(store) == ["team"]
        assert get_dataset(store, "team").text.endswith("[{input: hi}]\n")
        delete_dataset(store, "team")
        with pytest.raises(StoreError, match="no dataset 'team'"):
            get_dataset(store, "team")


def test_traces_page_newest_first_with_a_cursor_on_both_backends(store_location: str) -> None:
    with Store(store_location) as store:
        for n in range(3):
            store.add_traces(trace_request(lambda tracer, n=n: agent_turn(tracer, f"q{n}")))
        first = browse.list_trace_page(store, limit=2)
        second = browse.list_trace_page(store, before=first.next_before, limit=2)
    starts = [t["start_unix_nano"] for t in first.rows + second.rows]
    assert starts == sorted(starts, reverse=True) and len(set(starts)) == 3
    assert second.next_before is None and first.rows[0]["span_count"] == 3


def _turn(tracer, question: str, tool: str, arguments: str, error: bool = False) -> None:  # type: ignore[no-untyped-def]
    from opentelemetry.trace import Status, StatusCode

    with tracer.start_as_current_span(
        "invoke_agent a", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        agent_turn(tracer, question, f"answer to {question}")
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.arguments": arguments,
        }
        with tracer.start_as_current_span(f"execute_tool {tool}", attributes=attributes) as span:
            if error:
                span.set_status(Status(StatusCode.ERROR, "boom"))


def _searched(store: Store, **query: object) -> list[str]:
    return [r["user_input"] for r in search.search(store, search.TraceQuery(**query)).rows]  # type: ignore[arg-type]


def test_trace_search_filters_on_both_backends(store_location: str) -> None:
    turns = [
        ("shop", "Find headphones", "search_products", '{"query": "Sony WH-1000XM5"}'),
        ("shop", "Cancel order 42", "cancel_order", '{"order_id": "42"}'),
        ("travel", "Book a flight to Oslo", "book_flight", '{"to": "OSL"}'),
    ]
    with Store(store_location) as store:
        ids = []
        for service, question, tool, arguments in turns:
            request = trace_request(
                lambda t, q=question, n=tool, a=arguments: _turn(t, q, n, a, n == "cancel_order"),
                {"service.name": service},
            )
            store.add_traces(request)
            ids.append(store.trace_ids(limit=1)[0])
        assert search.pending_count(store) == 3
        assert index_traces(store) == 3 and search.pending_count(store) == 0
        doc = copy.deepcopy(DOC)
        doc["run"].update(run_id="r1", dataset={"name": "shop", "digest": "d"})
        doc["cases"][0].update(trace_id=ids[1], passed=False, attempts=[])
        doc["cases"][1].update(trace_id=ids[0], passed=True, attempts=[])
        save_run(store, doc)
        assert _searched(store, service="travel") == ["Book a flight to Oslo"]
        assert _searched(store, tool="cancel_order") == ["Cancel order 42"]
        assert _searched(store, text="wh-1000") == ["Find headphones"]  # tool arguments
        assert _searched(store, text="ANSWER TO book") == ["Book a flight to Oslo"]
        assert _searched(store, text="100%_") == []
        assert _searched(store, verdict="fail") == ["Cancel order 42"]
        assert _searched(store, verdict="pass") == ["Find headphones"]
        assert _searched(store, verdict="unscored") == ["Book a flight to Oslo"]
        first = search.search(store, search.TraceQuery(), limit=2)
        rest = search.search(store, search.TraceQuery(), before=first.next_before, limit=2)
        assert len(first.rows) == 2 and len(rest.rows) == 1 and rest.next_before is None
        start = first.rows[1]["start_unix_nano"]
        assert _searched(store, since_unix_nano=start) == [r["user_input"] for r in first.rows]
        assert _searched(store, until_unix_nano=start) == ["Find headphones"]
        cancel = next(r for r in first.rows + rest.rows if r["user_input"] == "Cancel order 42")
        assert cancel["failed_tool_calls"] == 1 and cancel["service"] == "shop"
        assert search.services(store) == ["shop", "travel"]
        assert search.tools_seen(store)["cancel_order"] == ["order_id"]
        assert search.verdicts(store, [ids[1]])[ids[1]] == [
            {"run_id": "r1", "position": 0, "passed": False}
        ]
        with pytest.raises(StoreError, match="bad page cursor"):
            search.search(store, search.TraceQuery(), before="x~")


def test_a_trace_that_grows_is_indexed_again(store_location: str) -> None:
    with Store(store_location) as store:
        store.add_traces(trace_request(lambda t: agent_turn(t, "first question")))
        index_traces(store)
        (trace_id,) = store.trace_ids()
        more = trace_request(lambda t: agent_turn(t, "late span"))
        for group in more.resource_spans:
            for scoped in group.scope_spans:
                for span in scoped.spans:
                    span.trace_id = bytes.fromhex(trace_id)
        store.add_traces(more)
        assert [t for t, _ in search.pending(store, 10)] == [trace_id]
        assert index_traces(store) == 1 and search.pending_count(store) == 0


def test_trace_search_out_of_range_is_a_400_on_both_backends(store_location: str) -> None:
    """Issue 40 item 14: a time or a cursor beyond a signed 64-bit Unix ns answered 500 on
    SQLite (an OverflowError binding the parameter) and 200 on PostgreSQL."""
    from starlette.testclient import TestClient

    from tracegrade.web import UiConfig, create_app

    with Store(store_location) as store:
        store.add_traces(trace_request(lambda tracer: agent_turn(tracer, "q")))
    app = create_app(UiConfig(db=store_location, index_traces=False))
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get("/traces?since=2026-01-01").status_code == 200
        for query, reason in [
            ("since=9999-12-31", "bad since time '9999-12-31': out of range"),
            ("until=0001-01-01", "bad until time '0001-01-01': out of range"),
            (f"before={2**64}~ab", "bad page cursor"),
            (f"before={2**63}~ab", "bad page cursor"),
        ]:
            page = client.get(f"/traces?{query}")
            assert page.status_code == 400, query
            assert reason in page.text.replace("&#39;", "'"), query
        assert client.get(f"/traces?before={2**63 - 1}~ab").status_code == 200
    app.state.ui.close()
    with Store(store_location) as store:
        with pytest.raises(StoreError, match="bad since time"):
            search.TraceQuery(since_unix_nano=2**63)
        with pytest.raises(StoreError, match="bad page cursor"):
            browse.list_trace_page(store, before=f"{2**63}~ab")
