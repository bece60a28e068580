"""Issue 35, defects 7 and 8: what a newcomer reads on the dashboard and from ``review`` and
``agreement`` says it once, in words: no user or "Log out" on a page read logged out; trend
charts labelled on x and none drawn empty; a run's failed cases above its tag table; a queue
item's reason given once and never "selected: selected"; agreement's findings as text, not
a Python dict."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from tests.web.shop import ShopStore
from tracegrade.cli import cli
from tracegrade.pipeline._agreement import verdicts_of
from tracegrade.pipeline.run_history import passed_hallucinating
from tracegrade.run_document import CaseEntry
from tracegrade.scoring.results import CaseResult
from tracegrade.web import UiConfig, create_app
from tracegrade.web.charts import TICKS, trend_charts


def test_a_page_read_logged_out_shows_no_user_and_no_log_out(shop: ShopStore) -> None:
    app = create_app(UiConfig(db=str(shop.db), token="t0ken"))
    with TestClient(app, base_url="http://localhost") as client:
        login = client.get("/login")
        assert login.status_code == 200
        assert 'id="user"' not in login.text and "Log out" not in login.text
        assert "anonymous" not in login.text
        runs = client.get("/runs", headers={"authorization": "Bearer t0ken"})
        assert 'id="user">token<' in runs.text and "Log out" in runs.text
    app.state.ui.close()


def test_trend_charts_label_x_and_leave_out_a_metric_no_run_has(client, shop) -> None:
    html = client.get("/trends", params={"dataset": "ecommerce"}).text
    charts = re.findall(r'<figure class="chart" id="chart-([\w_]+)">(.*?)</figure>', html, re.S)
    assert charts
    for _, svg in charts:  # two runs of the dataset: each labelled under its point
        ticks = re.findall(r'<text class="tick x-tick"[^>]*>([^<]+)</text>', svg)
        assert ticks == ["good", "invented_price"], ticks
    runs = [{"run_id": f"r{i}", "label": f"v{i}", "score": 0.9, "pass_rate": 1.0} for i in range(9)]
    drawn = trend_charts(runs)
    assert [c.key for c in drawn] == ["score", "pass_rate"]  # no empty latency, cost, rate
    ticked = [p.tick for p in drawn[0].points if p.tick]
    assert len(runs) > TICKS and ticked == ["v0", "v8"]  # many runs: the first and last


def test_the_run_page_puts_failed_cases_above_the_tag_table(client, shop) -> None:
    html = client.get(f"/runs/{shop.bad_run}").text
    assert html.index('id="cases"') < html.index('id="axes"') < html.index('id="breakdown"')
    first = re.search(r'<table class="grid" id="cases">.*?<tbody>\s*<tr class="(\w+)"', html, re.S)
    assert first and first.group(1) == "fail"


def _invoke(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture
def store_copy(shop: ShopStore, tmp_path: Path) -> str:
    """A copy of the shop's store (queues and labels are written)."""
    return str(shutil.copy(shop.db, tmp_path / "review.db"))


def test_a_queue_item_says_why_once(store_copy: str) -> None:
    _invoke("review", "queue", "failing", "--failed", "--db", store_copy)
    header = _invoke("review", "next", "failing", "--db", store_copy).splitlines()[0]
    why = re.fullmatch(r"failing #1 \(fails: (.*)\); label it with:", header)
    assert why, header
    parts = why.group(1).split("; ")
    assert len(parts) == len(set(parts)), parts
    _invoke("review", "queue", "everything", "--db", store_copy)
    header = _invoke("review", "next", "everything", "--db", store_copy).splitlines()[0]
    assert header == "everything #1 (every conversation); label it with:"
    app = create_app(UiConfig(db=store_copy))
    with TestClient(app, base_url="http://localhost") as client:
        page = client.get("/review/everything", follow_redirects=True).text
    app.state.ui.close()
    assert "selected: selected" not in page and "selected: every conversation" in page


def test_agreement_names_findings_in_words_not_a_python_dict() -> None:
    result = CaseResult(
        None,
        "a" * 32,
        False,
        0.0,
        {"production_rules": 0.0},
        ("invented",),
        details={
            "production_rules": {
                "value": 0.0,
                "details": {
                    "invented": [{"kind": "price", "text": "$251.99"}],
                    "hidden_errors": [{"name": "get_order", "error": "timeout"}],
                },
            }
        },
    )
    verdicts = verdicts_of(result, 0.7, None)
    assert verdicts["production_rules.invented_values"][1] == "$251.99"
    assert verdicts["production_rules.hidden_tool_errors"][1] == "get_order: timeout"


def test_the_trace_page_shows_the_reviewers_labels(shop: ShopStore, store_copy: str) -> None:
    first, second = shop.support_traces  # two turns of one conversation
    app = create_app(UiConfig(db=store_copy))
    with TestClient(app, base_url="http://localhost") as client:
        before = client.get(f"/traces/{second}").text
        assert "No reviewer has labelled this trace" in before
        _invoke(
            "review",
            "label",
            first,
            "--verdict",
            "fail",
            "--note",
            "wrong order",
            "--db",
            store_copy,
        )
        page = client.get(f"/traces/{second}")
        labels = client.get(f"/traces/{second}.json").json()["labels"]
    app.state.ui.close()
    assert [(x["verdict"], x["note"]) for x in labels] == [("fail", "wrong order")]
    shown = re.search(r'<ul id="labels">(.*?)</ul>', page.text, re.S)
    assert shown and "fail</span> by" in shown.group(1) and "wrong order" in shown.group(1)


def test_a_pass_rate_and_a_hallucination_rate_that_disagree_are_explained(client, shop) -> None:
    cases = [
        CaseEntry(case_id="a", passed=True, score=0.95, scores={"hallucination": 0.5}),
        CaseEntry(case_id="b", passed=True, score=1.0, scores={"hallucination": 1.0}),
        CaseEntry(case_id="c", passed=False, score=0.2, scores={"value_grounding": 0.0}),
    ]
    assert passed_hallucinating(cases) == 1  # a: passed, yet in the hallucination rate
    good = client.get(f"/runs/{shop.good_run}").text  # every case passed, none hallucinated
    assert 'id="rates-explained"' not in good
