"""The regression gate on the example shop agent: a good run stored as the baseline, then the
scripted model's regressions (``invented_price``, ``skip_tool``) and an alternating good/bad model
under ``--repeat 3``, on both stores (SQLite and PostgreSQL)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.compare.conftest import GOLDEN, alternating_model, invoke


def _baseline(shop, db: str) -> dict:
    good = shop("good", "--db", db, "--label", "good")
    assert good.exit_code == 0, good.output
    marked = invoke("runs", "baseline", "latest", "--db", db)
    assert marked.exit_code == 0 and "baseline of dataset ecommerce" in marked.output
    return good.doc


def _compare(db: str, base: str, current: str, tmp_path: Path) -> tuple[int, dict, str]:
    out = tmp_path / "compare.json"
    markdown = tmp_path / "compare.md"
    ran = invoke(
        "compare", base, current, "--db", db, "--json", str(out), "--markdown", str(markdown)
    )
    return ran.exit_code, json.loads(out.read_text()), markdown.read_text()


def test_invented_prices_regress_exactly_the_priced_cases(shop, store_location, tmp_path) -> None:
    _baseline(shop, store_location)
    bad = shop("invented_price", "--db", store_location, "--baseline", "baseline")
    assert bad.exit_code == 1 and "regression" in bad.output, bad.output
    code, comparison, _ = _compare(store_location, "baseline", "latest", tmp_path)
    assert code == 1 and comparison["regression"]
    failed = {c["case_id"] for c in bad.doc["cases"] if not c["passed"]}
    regressed = {c["case_id"] for c in comparison["cases"] if c["status"] == "regressed"}
    assert regressed == failed and "tracking-0002" not in regressed  # no price in that answer
    for case in comparison["cases"]:
        diff = case["diff"]
        if case["status"] != "regressed":
            assert case["status"] == "unchanged" and diff is None
            continue
        assert diff["source"] == "traces" and not diff["tools_added"] and not diff["tools_removed"]
        assert diff["newly_ungrounded"] and all(v.startswith("$") for v in diff["newly_ungrounded"])
    assert any("hallucination rate" in r for r in comparison["reasons"])


def test_a_skipped_tool_shows_as_the_missing_call(shop, store_location, tmp_path) -> None:
    _baseline(shop, store_location)
    bad = shop("skip_tool", "--db", store_location)
    assert bad.exit_code == 1
    code, comparison, markdown = _compare(store_location, "baseline", "latest", tmp_path)
    assert code == 1
    by_id = {c["case_id"]: c for c in comparison["cases"]}
    expected_missing = {
        "headphones-under-300": "search_products",
        "product-details-abc-123": "get_product_details",
        "tracking-0002": "get_order_tracking",
        "cancel-0003": "cancel_order",
    }
    for case_id, tool in expected_missing.items():
        assert by_id[case_id]["status"] == "regressed"
        assert by_id[case_id]["diff"]["tools_removed"] == [tool]
        calls = [c for c in by_id[case_id]["diff"]["calls"] if c["kind"] == "tool"]
        assert any(c["name"] == tool and c["latency_ms"]["current"] is None for c in calls)
    assert "tools no longer called: search_products" in markdown


def test_a_run_against_itself_is_unchanged(shop, store_location, tmp_path) -> None:
    _baseline(shop, store_location)
    code, comparison, _ = _compare(store_location, "latest", "latest", tmp_path)
    assert code == 0 and not comparison["regression"] and comparison["reasons"] == []
    assert {c["status"] for c in comparison["cases"]} == {"unchanged"}
    assert all(d["delta"] in (0, 0.0, None) for d in comparison["deltas"].values())


def test_an_alternating_model_is_flaky_not_regressed(shop, tmp_path) -> None:
    db = str(tmp_path / "flaky.db")
    _baseline(shop, db)
    ran = shop(alternating_model(), "--db", db, "--repeat", "3", "--baseline", "baseline")
    assert ran.exit_code == 0, ran.output
    code, comparison, _ = _compare(db, "baseline", "latest", tmp_path)
    statuses = {c["case_id"]: c["status"] for c in comparison["cases"]}
    assert code == 0 and not comparison["regression"], comparison["reasons"]
    assert "regressed" not in statuses.values()
    flaky = {k for k, v in statuses.items() if v == "flaky"}
    assert flaky >= {"headphones-under-300", "recent-orders"}
    assert all(c["flaky_in"] == ["current"] for c in comparison["cases"] if c["status"] == "flaky")


def test_score_exits_1_on_a_regression_even_when_the_run_passes(shop, tmp_path) -> None:
    good = shop("good", "--db", str(tmp_path / "good.db"))
    baseline = tmp_path / "good.json"
    baseline.write_text(json.dumps(good.doc))
    bad_db = str(tmp_path / "bad.db")
    assert shop("invented_price", "--db", bad_db).exit_code == 1
    lenient = ("score", "--db", bad_db, "--dataset", GOLDEN, "--smoke", "--min-pass-rate", "0")
    assert invoke(*lenient, "--no-save").exit_code == 0
    gated = invoke(*lenient, "--no-save", "--baseline", str(baseline))
    assert gated.exit_code == 1 and "passed before and fail now" in gated.output
    below = invoke(*lenient, "--no-save", "--min-score", "0.95")
    assert below.exit_code == 1 and "mean score >= 0.95" in below.output
