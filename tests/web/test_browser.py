"""``tracegrade ui`` in a real headless browser (chromium via Playwright): walk runs -> run ->
case -> waterfall -> compare, edit a case and see the file change, see a field error, log in
with the token, and check that XSS payloads in spans, datasets and judge output never
execute."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.support.browser import (
    ARGS,
    CHROMIUM,
    copy_dataset,
    require_browser,
    screenshot,
    ui_server,
)
from tests.web.shop import GOLDEN, XSS_INPUT, ShopStore
from tracegrade.dataset import load_dataset

TOKEN = "browser-token"


@pytest.fixture(scope="module")
def browser() -> Iterator:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def served(shop: ShopStore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    """The UI server with a token, over the shared store and a copy of the golden dataset."""
    require_browser()
    folder = tmp_path_factory.mktemp("browser-datasets")
    golden = copy_dataset(shop.golden, folder)
    revival = copy_dataset(GOLDEN.with_name("revival.yaml"), folder)
    args = ["--db", str(shop.db), "--token", TOKEN, "--dataset", str(golden)]
    args += ["--dataset", str(revival)]
    with ui_server([*args, "--dataset", str(shop.xss_dataset)]) as url:
        yield url, golden


def _log_in(browser, url: str):  # type: ignore[no-untyped-def]
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.goto(f"{url}/runs")
    assert "/login" in page.url
    page.fill("#token", TOKEN)
    page.click("#login")
    page.wait_for_url(f"{url}/runs")
    return page


@pytest.fixture
def page(browser, served):  # type: ignore[no-untyped-def]
    page = _log_in(browser, served[0])
    yield page
    page.context.close()


def test_walk_runs_run_case_waterfall_compare(page, served, shop: ShopStore) -> None:
    url = served[0]
    screenshot(page, "01-runs")
    page.click(f"a[href='/runs/{shop.bad_run}']")
    page.wait_for_url(f"{url}/runs/{shop.bad_run}")
    assert page.locator("#cases tbody tr.fail").count() >= 1
    screenshot(page, "02-run")
    page.locator("#cases a.case-link").first.click()
    page.wait_for_url(re.compile(r".*/cases/\d+$"))
    screenshot(page, "03-case")
    page.wait_for_selector(".waterfall")
    assert page.locator("#answer").inner_text()
    llm_row = page.locator(".wf-row.role-llm").first
    detail_id = llm_row.get_attribute("data-detail")
    assert page.locator(f"#{detail_id}").is_hidden()
    llm_row.click()
    detail = page.locator(f"#{detail_id}")
    assert detail.is_visible() and "gpt-4o-mini" in detail.inner_text()
    assert "input tokens" in detail.inner_text()
    page.locator(".wf-row.role-tool").first.click()
    assert "arguments" in page.locator(".span-detail:visible").last.inner_text()
    screenshot(page, "03-case-waterfall")
    page.go_back()
    page.select_option("#compare-base", shop.good_run)
    page.click("#compare-submit")
    page.wait_for_selector("#case-comparison")
    assert page.locator("#case-comparison tr.status-regressed").count() >= 1
    assert page.locator("#verdict").inner_text() == "regression"
    screenshot(page, "04-compare")
    page.goto(f"{url}/trends?dataset=ecommerce")
    assert page.locator("figure.chart").count() == 5
    screenshot(page, "05-trends")
    page.goto(f"{url}/traces")
    screenshot(page, "06-traces")
    page.locator("#traces a").first.click()
    page.wait_for_selector("#lint")
    screenshot(page, "06-trace")
    page.goto(f"{url}/datasets")
    assert page.locator("#datasets a").count() == 3  # golden, revival, xss
    screenshot(page, "06-datasets")


def test_edit_a_case_save_and_the_file_changes_and_still_loads(page, served) -> None:
    url, golden = served
    page.goto(f"{url}/datasets/file:golden")
    page.locator("a.edit-case").nth(1).click()
    page.fill("#f-input", "Show me everything about product abc-123")
    page.fill("#f-tags", "products, details")
    screenshot(page, "07-editor")
    page.click("#save")
    page.wait_for_url(f"{url}/datasets/file:golden")
    text = golden.read_text()
    assert "input: Show me everything about product abc-123" in text
    assert text.startswith("# Golden dataset for the example shop agent")
    case = load_dataset(golden).cases[1]
    assert case.input == "Show me everything about product abc-123"
    assert case.tags == ["products", "details"]


def test_an_invalid_case_shows_the_field_error(page, served) -> None:
    url, golden = served
    before = golden.read_text()
    page.goto(f"{url}/datasets/file:golden/cases/0")
    page.fill("#f-judge_rubric", "The answer names a product and its price.")
    page.fill("#f-judge_threshold", "1.5")
    page.click("#save")
    error = page.locator("#error-judge_threshold")
    assert error.is_visible()
    assert "field 'judge.threshold': Input should be less than or equal to 1" in error.inner_text()
    screenshot(page, "08-editor-field-error")
    assert golden.read_text() == before


def _xss_page(page, target: str) -> None:  # type: ignore[no-untyped-def]
    page.goto(target)
    for row in page.locator(".wf-row").all():
        row.click()


def _judged_case_url(page, url: str, run_id: str) -> str:  # type: ignore[no-untyped-def]
    cases = page.request.get(f"{url}/runs/{run_id}.json").json()["cases"]
    position = next(c["position"] for c in cases if c["case_id"] == "cancel-which-order")
    return f"{url}/runs/{run_id}/cases/{position}"


def test_xss_payloads_in_spans_and_datasets_never_execute(browser, served, shop) -> None:
    url = served[0]
    page = _log_in(browser, url)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.add_init_script("window.__xss = null;")
    targets = [
        f"{url}/traces/{shop.xss_trace}",
        f"{url}/compare/case?base={shop.xss_run}&current={shop.xss_run}&case=xss-case",
        f"{url}/traces?q=script",
        f"{url}/runs/{shop.xss_run}/cases/0",
        f"{url}/datasets/file:hostile",
        f"{url}/datasets/file:hostile/cases/0",
        f"{url}/runs/{shop.xss_run}",
        _judged_case_url(page, url, shop.judged_run),
    ]
    for target in targets:
        _xss_page(page, target)
        assert page.evaluate("window.__xss") is None, target
        assert page.locator("#evil").count() == 0
        assert page.locator("main script, main img, main svg[onload]").count() == 0
    _xss_page(page, targets[0])
    assert XSS_INPUT in page.locator("#inputs").inner_text()
    assert "javascript:window.__xss" in page.locator(".waterfall").inner_text()
    screenshot(page, "09-xss-trace")
    assert dialogs == []
    page.context.close()


def test_without_the_token_the_browser_is_refused_and_forged_posts_fail(
    browser, served, page
) -> None:
    url, golden = served
    anonymous = browser.new_context()
    response = anonymous.request.get(f"{url}/runs.json")
    assert response.status == 401
    landing = anonymous.new_page()
    landing.goto(f"{url}/datasets")
    assert "/login" in landing.url
    landing.fill("#token", "wrong")
    landing.click("#login")
    assert landing.locator("#login-error").inner_text() == "wrong token"
    anonymous.close()
    before = golden.read_text()
    page.goto(f"{url}/datasets/file:golden")
    status = page.evaluate(
        """async () => (await fetch('/datasets/file:golden/cases/0/delete', {method: 'POST',
        body: new URLSearchParams({version: 'x'})})).status"""
    )
    assert status == 403
    assert golden.read_text() == before


def test_search_traces_then_read_the_conversation_as_a_chat(page, served, shop) -> None:
    url = served[0]
    page.goto(f"{url}/traces")
    page.fill("#f-q", "1243")
    page.select_option("#f-tool", "get_order")
    page.click("#search")
    page.wait_for_url(re.compile(r".*/traces\?.*q=1243.*"))
    rows = page.locator("#traces tbody tr")
    assert rows.count() == 1 and "Sorry, it is 1243" in rows.first.inner_text()
    screenshot(page, "10-traces-search")
    page.select_option("#f-tool", "")
    page.fill("#f-q", "")
    page.select_option("#f-service", "support-agent")
    page.click("#search")
    page.wait_for_url(re.compile(r".*service=support-agent.*"))
    assert page.locator("#traces tbody tr").count() == 2
    page.locator("#traces tbody tr", has_text="Where is my order 1234?").locator("a").first.click()
    page.wait_for_selector("#chat-t")
    chat = page.locator("#chat-t")
    assert chat.locator(".msg-user").count() == 2
    assert chat.locator(".tool-call.failed").count() == 2
    assert chat.locator(".msg.final strong").first.inner_text() == "Sorry"
    assert "upstream timeout after 5 s" in chat.locator(".tool-call.failed").first.inner_text()
    failed_rows = page.locator(".wf-row.error")
    assert failed_rows.count() == 2
    assert failed_rows.first.evaluate("e => getComputedStyle(e.querySelector('rect')).fill") in (
        "rgb(179, 38, 30)",
        "#b3261e",
    )
    screenshot(page, "11-conversation-chat")


def test_two_runs_answers_side_by_side_from_compare(page, served, shop) -> None:
    url = served[0]
    page.goto(f"{url}/compare?base={shop.good_run}&current={shop.bad_run}")
    page.locator("#case-comparison tr.status-regressed a.side-by-side").first.click()
    page.wait_for_selector("#sides")
    assert page.locator("#side-base .badge.pass").count() == 1
    assert page.locator("#side-current .badge.fail").count() == 1
    base, current = (
        page.locator(f"#side-{s} .side-answer").inner_text() for s in ("base", "current")
    )
    assert base and current and base != current
    screenshot(page, "12-side-by-side")


def test_pick_tool_calls_from_the_tools_seen(page, served) -> None:
    url, golden = served
    page.goto(f"{url}/datasets/file:golden/cases/new")
    page.fill("#f-input", "Where is order 1243?")
    page.locator("input.expected-tool").first.fill("get_order")
    block = page.locator(".call-block").first
    block.locator("input.call-name").fill("get_order")
    block.locator("input.call-name").dispatch_event("change")
    key = block.locator("input.arg-key").first
    assert key.get_attribute("list") == "keys-get_order"
    key.fill("order_id")
    block.locator("input[name='call-0-arg-0-value']").fill('"1243"')
    block.locator("input[type=checkbox]").check()
    screenshot(page, "13-editor-tool-picker")
    page.click("#save")
    page.wait_for_url(f"{url}/datasets/file:golden")
    case = load_dataset(golden).cases[-1]
    assert case.id == "where-is-order-1243" and case.expected_tools == ["get_order"]
    (call,) = case.expected_tool_calls
    assert call.arguments == {"order_id": "1243"} and call.required


def test_a_multi_turn_revival_case_shows_its_turns_and_revives_turn_two(page, served) -> None:
    url, golden = served
    revival = golden.with_name("revival.yaml")
    page.goto(f"{url}/datasets/file:revival/cases/0")
    turns = page.locator("#f-turns")
    assert "as-yaml" in (turns.get_attribute("class") or "")
    assert turns.input_value().startswith("- prompt: Show me running shoes under $150\n")
    assert "judge_prompt: Lists running shoes" in turns.input_value()
    assert page.locator("#f-revive").input_value() == "true"
    assert "name, order, criteria" in page.locator("#other-keys").inner_text()
    page.fill("#f-revive", "2")
    screenshot(page, "14-editor-turns-revive")
    page.click("#save")
    page.wait_for_url(f"{url}/datasets/file:revival")
    (case,) = load_dataset(revival).cases
    assert case.revived_turns == (2,) and len(case.turns or ()) == 2
    assert "judge_prompt: Lists running shoes" in revival.read_text()


def test_a_later_turn_becomes_a_simulated_user_reviewed_and_saved(page, served, shop) -> None:
    """Trace page -> New case as a simulated user: the editor opens with the whole
    conversation's opening, a goal to restate and the facts given in both turns; the reviewer
    restates them and the saved case has its user."""
    url, golden = served
    page.goto(f"{url}/traces/{shop.support_traces[1]}")  # the second turn's trace
    page.select_option("#new-case-form select[name=dataset]", "file:golden")
    page.check("#new-case-simulated")
    page.click("#new-case")
    page.wait_for_url(re.compile(r".*/cases/new\?.*simulated=1"))
    assert page.locator("#f-input").input_value() == "Where is my order 1234?"
    user = yaml.safe_load(page.locator("#f-user").input_value())
    assert user["goal"] == "[review: restate the user's goal] Where is my order 1234?"
    assert {"1234", "1243"} <= set(user["facts"].values()) and user["max_turns"] == 4
    screenshot(page, "15-editor-simulated-user")
    reviewed = {
        "goal": "Find out where the order is; its number is 1243, not 1234.",
        "facts": {"order_number": "1243"},
        "stop": "The assistant says that order 1243 has shipped.",
        "max_turns": 4,
    }
    page.fill("#f-user", yaml.safe_dump(reviewed, sort_keys=False))
    page.fill("#f-id", "order-status-simulated")
    page.click("#save")
    page.wait_for_url(f"{url}/datasets/file:golden")
    case = load_dataset(golden).cases[-1]
    assert case.id == "order-status-simulated" and case.input == "Where is my order 1234?"
    assert case.user is not None and case.user.facts == {"order_number": "1243"}
    assert case.user.stop_condition == reviewed["stop"]
