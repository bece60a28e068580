"""The dashboard's pages over a real store (two shop-agent runs, a hostile trace): each HTML
page renders what the run documents and traces hold, and its JSON twin has the same data."""

from __future__ import annotations

import re
import threading

from starlette.testclient import TestClient

from tests.web.shop import JUDGE_REASONING, ShopStore


def test_runs_lists_the_stored_runs_newest_first_with_their_numbers(client, shop) -> None:
    runs = client.get("/runs.json").json()["runs"]
    order = [shop.file_run, shop.xss_run, shop.judged_run, shop.bad_run, shop.good_run]
    assert [r["run_id"] for r in runs] == order
    bad = runs[3]
    assert bad["label"] == "invented_price" and bad["dataset"] == "ecommerce"
    assert bad["pass_rate"] < 1 and bad["hallucination_rate"] > 0 and bad["latency_p95_ms"] > 0
    html = client.get("/runs").text
    assert shop.good_run in html and "invented_price" in html


def test_runs_filter_by_dataset_and_label(client, shop) -> None:
    by_label = client.get("/runs.json", params={"label": "good"}).json()["runs"]
    assert [r["run_id"] for r in by_label] == [shop.good_run]
    by_dataset = client.get("/runs.json", params={"dataset": "hostile"}).json()["runs"]
    assert [r["run_id"] for r in by_dataset] == [shop.xss_run]


def test_runs_page_through_with_a_cursor(client, shop) -> None:
    from tracegrade.store import browse
    from tracegrade.store.traces import Store

    with Store(shop.db) as store:
        first = browse.list_run_page(store, limit=2)
        second = browse.list_run_page(store, limit=2, before=first.next_before)
    assert [r["run_id"] for r in first.rows] == [shop.file_run, shop.xss_run]
    assert [r["run_id"] for r in second.rows] == [shop.judged_run, shop.bad_run]


def test_trends_draw_five_charts_with_one_point_per_run(client, shop) -> None:
    data = client.get("/trends.json", params={"dataset": "ecommerce"}).json()
    assert [c["key"] for c in data["charts"]] == [
        "score",
        "pass_rate",
        "hallucination_rate",
        "latency_p95_ms",
        "cost_usd",
    ]
    score = data["charts"][0]["values"]
    assert [v["run_id"] for v in score] == [shop.good_run, shop.bad_run]
    html = client.get("/trends", params={"dataset": "ecommerce"}).text
    assert html.count("<polyline") == 5 and html.count('class="dot"') == 10


def test_run_page_lists_failed_cases_first_with_reasons(client, shop) -> None:
    data = client.get(f"/runs/{shop.bad_run}.json").json()
    verdicts = [c["passed"] for c in data["cases"]]
    assert verdicts == sorted(verdicts) and not verdicts[0]
    first = data["cases"][0]
    assert "value_grounding" in first["verdict_reasons"][0]  # the invented values lead
    assert all("value_grounding" not in r for r in first["reasons"])  # each reason once
    assert {g["group"] for g in data["breakdown"]} >= {"tag: products"}
    html = client.get(f"/runs/{shop.bad_run}").text
    assert "ungrounded" in html and 'id="breakdown"' in html


def test_run_page_sorts_by_score_descending(client, shop) -> None:
    cases = client.get(f"/runs/{shop.good_run}.json?sort=score&desc=1").json()["cases"]
    scores = [c["score"] for c in cases]
    assert scores == sorted(scores, reverse=True)


def test_case_page_shows_inputs_answer_scorers_and_the_waterfall(client, shop) -> None:
    data = client.get(f"/runs/{shop.good_run}/cases/0.json").json()
    assert data["inputs"] and data["final_output"]
    assert "tool_correctness" in data["case"]["details"]
    (waterfall,) = data["waterfalls"]
    roles = {s["role"] for s in waterfall["spans"]}
    assert {"llm", "tool"} <= roles
    llm = next(s for s in waterfall["spans"] if s["role"] == "llm")
    assert (
        llm["details"]["model"].startswith("gpt-4o-mini")
        and int(llm["details"]["input tokens"]) > 0
    )
    assert "cost" in llm["details"]
    tool = next(s for s in waterfall["spans"] if s["role"] == "tool")
    assert tool["details"]["arguments"] and tool["details"]["result"]
    html = client.get(f"/runs/{shop.good_run}/cases/0").text
    assert html.count('class="wf-row') == len(waterfall["spans"])


def test_compare_shows_the_regressed_cases_with_their_trace_diff(client, shop) -> None:
    data = client.get(f"/compare.json?base={shop.good_run}&current={shop.bad_run}").json()
    comparison = data["comparison"]
    assert comparison["regression"] is True
    regressed = [c for c in comparison["cases"] if c["status"] == "regressed"]
    assert regressed and all(c["diff"] for c in regressed)
    assert any(c["diff"]["newly_ungrounded"] for c in regressed)
    html = client.get(f"/compare?base={shop.good_run}&current={shop.bad_run}").text
    assert "status-regressed" in html and "newly ungrounded" in html


def test_traces_list_and_trace_page_with_scores_and_lint(client, shop) -> None:
    traces = client.get("/traces.json").json()["traces"]
    assert shop.xss_trace in {t["trace_id"] for t in traces}
    data = client.get(f"/traces/{shop.xss_trace}.json").json()
    assert data["scores"]["scorers"] and data["lint"]["checks"]
    assert {s["role"] for s in data["waterfall"]["spans"]} == {"agent", "llm", "tool"}


def test_unknown_run_trace_and_dataset_are_404(client: TestClient) -> None:
    assert client.get("/runs/nope").status_code == 404
    assert "no run 'nope'" in client.get("/runs/nope.json").json()["error"]
    assert client.get("/traces/" + "0" * 32).status_code == 404
    assert client.get("/datasets/file:nope").status_code == 404


def test_every_page_is_served_with_a_restrictive_content_security_policy(
    client, shop: ShopStore
) -> None:
    for path in ("/runs", "/trends", f"/runs/{shop.good_run}", "/traces", "/datasets"):
        response = client.get(path)
        assert response.status_code == 200, path
        policy = response.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        assert not re.search(r"<script>(?!</script>)", response.text)


def test_case_page_shows_the_judge_verdict_and_the_clarification_follow_ups(client, shop) -> None:
    run = client.get(f"/runs/{shop.judged_run}.json").json()
    position = next(c["position"] for c in run["cases"] if c["case_id"] == "cancel-which-order")
    data = client.get(f"/runs/{shop.judged_run}/cases/{position}.json").json()
    assert (
        data["judge"]["value"] == 0.9 and data["judge"]["details"]["reasoning"] == JUDGE_REASONING
    )
    (followup,) = data["followups"]
    assert (
        followup["written_by"] == "script"
        and "550e8400-e29b-41d4-a716-446655440006" in followup["reply"]
    )
    rounds = data["judge"]["details"]["rounds"]  # --judge-repeat 2: each round's reasoning
    assert [r["reasoning"] for r in rounds] == [JUDGE_REASONING] * 2
    html = client.get(f"/runs/{shop.judged_run}/cases/{position}").text
    assert 'id="judge"' in html and 'id="followups"' in html and 'id="judge-rounds"' in html
    assert "Confirms the order. &lt;script&gt;" in html


def test_a_multi_turn_case_shows_every_user_turn(client, shop) -> None:
    run = client.get(f"/runs/{shop.judged_run}.json").json()
    position = next(
        c["position"] for c in run["cases"] if c["case_id"] == "running-shoes-multi-turn"
    )
    data = client.get(f"/runs/{shop.judged_run}/cases/{position}.json").json()
    assert data["inputs"] == [
        "I'm looking for running shoes under $150",
        "Is the Nike Pegasus in stock?",
    ]
    assert len(data["waterfalls"]) >= 1


def test_a_bad_page_cursor_is_a_400_that_says_so(client: TestClient) -> None:
    response = client.get("/runs.json", params={"before": "garbage"})
    assert response.status_code == 400 and "bad page cursor" in response.json()["error"]


def test_the_trace_page_scores_in_a_worker_thread(client, shop, monkeypatch) -> None:
    from tracegrade.web import pages, traces

    threads: dict[str, int] = {}
    scored, chosen = pages.reference_free, traces.dataset_choices

    def reference_free(*args):
        threads["scores"] = threading.get_ident()
        return scored(*args)

    def dataset_choices(*args):
        threads["page"] = threading.get_ident()
        return chosen(*args)

    monkeypatch.setattr(pages, "reference_free", reference_free)
    monkeypatch.setattr(traces, "dataset_choices", dataset_choices)
    assert client.get(f"/traces/{shop.xss_trace}.json").status_code == 200
    assert threads["scores"] != threads["page"]
