"""Stored runs on both stores (references, baselines) and the runs / history / compare commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.compare.conftest import invoke
from tests.compare.documents import case, run
from tracegrade.errors import StoreError
from tracegrade.store.runs import (
    baselines,
    recent_runs,
    resolve_run,
    run_datasets,
    run_headers,
    save_run,
    set_baseline,
)
from tracegrade.store.traces import Store


def _store_three(location: str) -> None:
    with Store(location) as store:
        for i, score in enumerate((0.9, 0.8, 0.95)):
            save_run(store, run(f"2026-run-{i}", [case("a", score)], label=f"v{i}", passed=True))


def test_references_resolve_on_both_stores(store_location: str) -> None:
    _store_three(store_location)
    with Store(store_location) as store:
        assert resolve_run(store, "latest") == "2026-run-2"
        assert resolve_run(store, "latest~2") == "2026-run-0"
        assert resolve_run(store, "2026-run-1") == "2026-run-1"
        with pytest.raises(StoreError, match="3 runs"):
            resolve_run(store, "2026-run")
        with pytest.raises(StoreError, match="only 3 stored run"):
            resolve_run(store, "latest~3")
        with pytest.raises(StoreError, match="no baseline set"):
            resolve_run(store, "baseline")


def test_one_baseline_per_dataset_replaced_when_set_again(store_location: str) -> None:
    _store_three(store_location)
    with Store(store_location) as store:
        assert set_baseline(store, "2026-run-0") == "shop"
        assert set_baseline(store, "2026-run-1") == "shop"
        assert baselines(store) == {"shop": "2026-run-1"}
        assert resolve_run(store, "baseline", dataset="shop") == "2026-run-1"
        with pytest.raises(StoreError, match="'other' has no baseline"):
            resolve_run(store, "baseline", dataset="other")


def test_runs_filter_by_label_and_dataset(store_location: str) -> None:
    _store_three(store_location)
    with Store(store_location) as store:
        assert [h["run"]["run_id"] for h in run_headers(store, label="v1")] == ["2026-run-1"]
        assert run_headers(store, dataset="other") == []
        (doc,) = recent_runs(store, dataset="shop", limit=1)
        assert doc["run"]["run_id"] == "2026-run-2" and doc["cases"][0]["score"] == 0.95
        free = run("2026-run-7", [case("t", 0.5)], passed=False)
        free["run"]["dataset"] = None
        save_run(store, free)
        assert run_datasets(store) == [None, "shop"]
        only = run_headers(store, reference_free=True)
        assert [h["run"]["run_id"] for h in only] == ["2026-run-7"]


def test_runs_command_lists_and_marks_the_baseline(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    _store_three(db)
    assert invoke("runs", "baseline", "latest~1", "--db", db).exit_code == 0
    listed = invoke("runs", "--json", "--db", db)
    rows = [json.loads(line) for line in listed.output.splitlines()]
    assert [r["run_id"] for r in rows] == ["2026-run-2", "2026-run-1", "2026-run-0"]
    assert [r["baseline"] for r in rows] == [False, True, False]
    assert rows[0]["score"] == 0.95 and rows[0]["label"] == "v2" and rows[0]["cases"] == 1
    shown = invoke("runs", "show", "baseline", "--db", db, "--json")
    assert json.loads(shown.output)["run"]["run_id"] == "2026-run-1"


def test_history_draws_sparklines_and_a_png(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    _store_three(db)
    png = tmp_path / "trend.png"
    ran = invoke("history", "shop", "--db", db, "--png", str(png))
    assert ran.exit_code == 0, ran.output
    assert "v0" in ran.output and "v2" in ran.output
    assert "▆▁█" in ran.output  # score 0.9, 0.8, 0.95 oldest first
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_history_without_a_dataset_draws_one_trend_per_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27, defect 5: runs of two datasets were one trend (the sparkline mixed them)."""
    monkeypatch.setenv("COLUMNS", "200")
    db = str(tmp_path / "s.db")
    _store_three(db)
    other = run("2026-run-9", [case("a", 0.1)], label="other-v9", passed=False)
    other["run"]["dataset"] = {"name": "airline", "digest": "d2"}
    free = run("2026-run-8", [case("t", 0.5)], label="free-v8", passed=False)
    free["run"]["dataset"] = None
    with Store(db) as store:
        save_run(store, free)
        save_run(store, other)
    ran = invoke("history", "--db", db)
    assert ran.exit_code == 0, ran.output
    shop, airline = ran.output.index("history of shop"), ran.output.index("history of airline")
    scoreless = ran.output.index("history of the runs scored without a dataset")
    assert airline < scoreless < shop  # the most recently run dataset first
    assert "other-v9" in ran.output[airline:scoreless] and "free-v8" in ran.output[scoreless:shop]
    assert "v0" in ran.output[shop:] and "v9" not in ran.output[shop:]
    assert "▆▁█" in ran.output[shop:]  # the shop trend alone: 0.9, 0.8, 0.95
    assert invoke("history", "--db", db, "--png", str(tmp_path / "t.png")).exit_code == 2


def test_history_of_an_unknown_dataset_is_an_error(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    _store_three(db)
    ran = invoke("history", "nodataset", "--db", db)
    assert ran.exit_code == 2
    assert "no stored runs of dataset 'nodataset'" in ran.output
    assert "datasets with runs: shop" in ran.output
    assert invoke("history", "shop", "--label", "nolabel", "--db", db).exit_code == 2
    Store(tmp_path / "empty.db").close()
    empty = invoke("history", "--db", str(tmp_path / "empty.db"))
    assert empty.exit_code == 0 and "no stored runs in" in empty.output
    missing = invoke("history", "--db", str(tmp_path / "missing.db"))  # read-only: no store made
    assert missing.exit_code == 2 and "no store at" in missing.output
    assert not (tmp_path / "missing.db").exists()


def test_compare_reads_run_documents_from_files(tmp_path: Path) -> None:
    base, current = tmp_path / "b.json", tmp_path / "c.json"
    base.write_text(json.dumps(run("b", [case("a", 0.9)])))
    current.write_text(json.dumps(run("c", [case("a", 0.9)])))
    ran = invoke("compare", str(base), str(current))
    assert ran.exit_code == 0 and "no regression" in ran.output


def test_compare_names_a_file_that_is_not_a_run_document(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"hello": 1}))
    ran = invoke("compare", str(bad), str(bad))
    assert ran.exit_code == 2 and f"{bad}: not a tracegrade.run/1 document" in ran.output


def test_an_unknown_reference_is_a_usage_error(tmp_path: Path) -> None:
    db = str(tmp_path / "s.db")
    _store_three(db)
    ran = invoke("compare", "nope", "latest", "--db", db)
    assert ran.exit_code == 2 and "'nope': no run match" in ran.output
