"""The review loop in a real browser (chromium via Playwright, ``tracegrade ui`` in a
subprocess): a reviewer signs in with a named account, builds a queue, labels three
conversations (chat, scores and feedback beside the form), promotes one to a golden case, and
the case is in the dataset file; the Agreement page then measures the scorers against the
labels."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import ARGS, CHROMIUM, require_browser, screenshot, ui_server
from tracegrade.dataset import load_dataset
from tracegrade.store import review as queue_store
from tracegrade.store.traces import Store

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
PASSWORD = "correct horse battery"


def _tracegrade(*args: str, input: str | None = None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tracegrade", *args], input=input, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path, Path]]:
    """``tracegrade ui`` over four tau-bench conversations, an account and an empty dataset."""
    require_browser()
    home = tmp_path_factory.mktemp("review-browser")
    (home / "four.json").write_text(json.dumps(json.loads(TAU.read_text())[:4]))
    db = home / "store.db"
    _tracegrade("import", str(home / "four.json"), "--messages-key", "traj", "--db", str(db))
    _tracegrade("users", "add", "ana", "--db", str(db), "--password-stdin", input=PASSWORD + "\n")
    dataset = home / "reviewed.yaml"
    dataset.write_text("# cases people reviewed\nname: reviewed\ncases: []\n")
    with ui_server(["--db", str(db), "--dataset", str(dataset)]) as url:
        yield url, db, dataset


@pytest.fixture(scope="module")
def browser() -> Iterator:
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield chromium
        chromium.close()


def test_a_reviewer_signs_in_labels_three_promotes_one_and_the_case_is_in_the_dataset(
    browser, served
) -> None:
    url, db, dataset = served
    page = browser.new_context(viewport={"width": 1400, "height": 1000}).new_page()
    page.goto(f"{url}/review")
    assert "/login" in page.url
    page.fill("#name", "ana")
    page.fill("#password", "wrong password")
    page.click("#login-account")
    assert page.locator("#login-error").inner_text() == "wrong name or password"
    page.fill("#name", "ana")
    page.fill("#password", PASSWORD)
    page.click("#login-account")
    page.wait_for_url(f"{url}/review")
    assert page.locator("#user").inner_text() == "ana"
    page.fill("#q-name", "airline")
    page.click("#q-create")
    page.wait_for_url(re.compile(r".*/review/airline/item\?c=.*"))
    verdicts = ["pass", "fail", "pass"]
    for n, verdict in enumerate(verdicts):
        assert page.locator("#chat-review .msg-user").count() >= 2  # multi-turn, as a chat
        assert page.locator("#chat-review .tool-call").count() >= 1
        assert page.locator("#scores tr").count() >= 3
        assert page.locator("#progress").inner_text() == f"{n} of 4 done"
        screenshot(page, f"review-0{n + 1}-item")
        if n == 1:
            key = page.locator("#conversation-key").inner_text()
            page.select_option("#promote-dataset", "file:reviewed")
            page.fill("#promote-case-id", "reviewed-1")
            page.fill("#promote-forbidden", "I cannot help")
            page.click("#promote")
            page.wait_for_selector("#promoted")
            assert "reviewed-1" in page.locator("#promoted").inner_text()
            assert page.locator("#conversation-key").inner_text() == key  # the same item
            screenshot(page, "review-promoted")
        page.check(f"#verdict-{verdict}")
        page.select_option("#axis-tools_right", verdict)
        page.fill("#note", f"checked by hand {n}")
        page.click("#save-label")
        page.wait_for_load_state()
    assert page.locator("#progress").inner_text() == "3 of 4 done"
    with Store(db) as store:
        labels = queue_store.labels(store.db)
    assert [(label.reviewer, label.verdict) for label in labels] == [("ana", v) for v in verdicts]
    assert all(label.axes == {"tools_right": label.verdict} for label in labels)
    text = dataset.read_text()
    assert text.startswith("# cases people reviewed")
    (case,) = load_dataset(dataset).cases
    assert case.id == "reviewed-1" and case.turns and case.must_not_contain == ["I cannot help"]
    assert case.metadata["reviewed_by"] == "ana" and case.metadata["source_traces"]
    page.goto(f"{url}/agreement")
    overall = page.locator("#agreement tr[data-rater='overall']")
    assert overall.count() == 1 and "labels" in overall.inner_text()
    assert page.locator("figure.chart").count() >= 1
    screenshot(page, "review-agreement")
    page.context.close()
