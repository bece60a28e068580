"""The dashboard's store queries (:mod:`tracegrade.store.browse`, :mod:`tracegrade.store.datasets`)
on both backends: SQLite and the real PostgreSQL server."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.support.sdk import agent_turn, trace_request
from tracegrade.errors import StoreError
from tracegrade.store import browse
from tracegrade.store.datasets import delete_dataset, get_dataset, list_datasets, put_dataset
from tracegrade.store.runs import save_run
from tracegrade.store.traces import Store

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
