"""Issue 35, "words a product manager reads right": a ``must_contain`` phrase missing from the
answer reads "expected phrase missing" (the reason text, the console report, the run's Markdown
and the dashboard's case page), never "hallucination"; the scorer keeps its stored name
(``hallucination`` in config weights, run documents and baselines). The case page's "Failed:"
line leads with the invented values when a case has both, not with the missing phrase or
"score below threshold"."""

from __future__ import annotations

import html
import io
import re

from rich.console import Console

from tests.web.shop import ShopStore
from tracegrade.config import load_config
from tracegrade.report.comparison import run_markdown
from tracegrade.report.console import print_report
from tracegrade.store.runs import load_run
from tracegrade.store.traces import Store

CASE = "headphones-under-300"


def _bad_run(shop: ShopStore) -> dict:
    store = Store(str(shop.db))
    try:
        return load_run(store, shop.bad_run)
    finally:
        store.close()


def _case(doc: dict) -> tuple[int, dict]:
    return next((i, c) for i, c in enumerate(doc["cases"]) if c["case_id"] == CASE)


def test_the_stored_name_stays_and_the_reason_says_expected_phrase_missing(shop) -> None:
    doc = _bad_run(shop)
    _, case = _case(doc)
    assert "hallucination" in load_config().weights  # config and baselines keep the name
    assert "hallucination" in case["scores"] and "hallucination" in case["details"]
    missing = [r for r in case["reasons"] if "expected phrase missing" in r]
    assert missing == ["expected phrase missing: '$279.99' (0/1 expected phrase found)"]
    assert not any(r.startswith("hallucination") for r in case["reasons"]), case["reasons"]
    assert case["details"]["hallucination"]["reason"] == missing[0]


def test_the_console_report_and_the_markdown_say_expected_phrase_missing(shop) -> None:
    doc = _bad_run(shop)
    for verbose in (False, True):
        out = io.StringIO()
        print_report(doc, verbose=verbose, console=Console(file=out, width=400))
        text = out.getvalue()
        assert "expected phrase missing: '$279.99'" in text
        assert "hallucination:" not in text and "hallucination (axis)" not in text
    assert "expected phrases (axis)" in text  # the averages table's label
    markdown = run_markdown(doc)
    assert "expected phrase missing: '$279.99'" in markdown and "hallucination:" not in markdown


def test_the_case_page_labels_the_scorer_and_leads_with_the_invented_values(client, shop) -> None:
    position, case = _case(_bad_run(shop))
    assert case["scores"]["value_grounding"] < 1  # the regression invented a price too
    page = client.get(f"/runs/{shop.bad_run}/cases/{position}").text
    failed = re.search(r'id="hard-failures">(.*?)</ul>', page, re.S)
    assert failed, page
    reasons = [html.unescape(r) for r in re.findall(r'<li class="hard">(.*?)</li>', failed[1])]
    invented, below = reasons  # the invented price, not the missing phrase, then the score
    assert invented.startswith("value_grounding: ") and "$251.99" in invented, reasons
    assert below.startswith("score ") and "below the threshold" in below
    assert "expected phrase missing: &#39;$279.99&#39;" in page  # among the other reasons
    scorers = re.search(r'id="scorers">(.*?)</table>', page, re.S)
    assert scorers and "<td>expected phrases</td>" in scorers[1]
    assert "<td>hallucination</td>" not in scorers[1]
