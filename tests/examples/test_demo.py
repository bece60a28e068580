"""The keyless demo: ``python -m examples.ecommerce.demo`` end to end, its recorded model
(replayed; an unrecorded request is a clear error) and the one-command re-recording."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import click
import openai
import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from examples.ecommerce import demo
from examples.ecommerce.record import RecordingProxy, invent_prices, record
from examples.ecommerce.replay import RECORDED, ReplayServer
from tests.examples.record_replay import record_scripted
from tests.support.browser import ARGS, CHROMIUM, require_browser, screenshot, ui_server
from tests.support.openai_server import ScriptedOpenAI, error, text
from tracegrade.web.app import create_app
from tracegrade.web.base import UiConfig

REPO = Path(__file__).resolve().parents[2]
LABELS = ["demo-regressed", "demo-agent-url", "demo-agent-cmd", "demo-agent"]


def _tracegrade(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tracegrade", *args]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120)


@dataclass(frozen=True)
class Demo:
    db: Path
    env: dict[str, str]
    stdout: str


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory: pytest.TempPathFactory) -> Demo:
    """``python -m examples.ecommerce.demo --smoke`` run once, into the default store."""
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    env["TRACEGRADE_DB"] = str(db)  # the default store, as a newcomer's would be
    demo = [sys.executable, "-m", "examples.ecommerce.demo", "--smoke"]
    done = subprocess.run(demo, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return Demo(db, env, done.stdout)


def test_demo_stores_a_run_per_agent_style_that_runs_compare_and_the_ui_show(
    demo_store: Demo,
) -> None:
    db, env = demo_store.db, demo_store.env
    assert "--agent-url" in demo_store.stdout and "--otlp-http-port" in demo_store.stdout
    assert "OTEL_EXPORTER_OTLP_ENDPOINT=" in demo_store.stdout and "--body" in demo_store.stdout

    listed = _tracegrade("runs", "--json", env=env)
    runs = [json.loads(line) for line in listed.stdout.splitlines() if line.strip()]
    assert [r["label"] for r in runs] == LABELS, listed.stdout
    by_label = {r["label"]: r for r in runs}
    assert all(by_label[label]["pass_rate"] == 1.0 for label in LABELS[1:])
    assert by_label["demo-regressed"]["pass_rate"] < 1.0
    assert [r["label"] for r in runs if r["baseline"]] == ["demo-agent"]
    compared = _tracegrade("compare", "baseline", "latest", env=env)
    assert compared.returncode == 1 and "regressed" in compared.stdout, compared.stdout

    app = create_app(UiConfig(db=str(db)))
    with TestClient(app, base_url="http://localhost") as client:
        for run in runs:
            page = client.get(f"/runs/{run['run_id']}")
            assert page.status_code == 200 and run["label"] in page.text
            assert "headphones-under-300" in page.text
        services = {t["service"] for t in client.get("/traces.json").json()["traces"]}
    app.state.ui.close()
    # issue 35, defect 7: the in-process agent's spans are named after it, not the SDK default
    assert "examples.ecommerce.agent:answer" in services, services
    assert not any(s.startswith("unknown_service") for s in services), services


def test_the_demo_in_a_browser_tells_the_regression_story(demo_store: Demo) -> None:
    """Issue 35, Must show: in Chromium, Runs marks the baseline; the regressed run says
    "regressed vs baseline (N cases)" and links to its comparison with the baseline, whose
    regressed cases are listed; Compare with no choice opens on baseline vs latest."""
    require_browser()
    from playwright.sync_api import sync_playwright

    listed = _tracegrade("runs", "--json", env=demo_store.env)
    runs = {r["label"]: r["run_id"] for r in map(json.loads, listed.stdout.splitlines())}
    baseline, regressed = runs["demo-agent"], runs["demo-regressed"]
    with (
        ui_server(["--db", str(demo_store.db)]) as url,
        sync_playwright() as playwright,
    ):
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(f"{url}/runs")
        marked = page.locator("#runs tbody tr.baseline")
        assert marked.count() == 1 and marked.get_attribute("data-run") == baseline
        assert marked.locator(".badge.baseline").inner_text() == "baseline"
        gate = page.locator(f"#runs tr[data-run='{regressed}'] a.gate.fail")
        said = re.fullmatch(r"regressed vs baseline \((\d+) cases?\)", gate.inner_text())
        assert said, gate.inner_text()
        screenshot(page, "35-runs-baseline")
        gate.click()
        page.wait_for_url(re.compile(r".*/compare\?base=.*"))
        assert page.locator("#verdict").inner_text() == "regression"
        assert page.locator("#case-comparison tr.status-regressed").count() == int(said[1])
        assert page.locator("select[name=base]").input_value() == baseline
        assert page.locator("select[name=current]").input_value() == regressed
        page.goto(f"{url}/compare")
        assert page.locator("select[name=base]").input_value() == baseline
        assert page.locator("select[name=current]").input_value() == regressed  # the latest
        assert "(baseline)" in page.locator("select[name=base] option:checked").inner_text()
        screenshot(page, "35-compare-default")
        page.locator("#case-comparison tr.status-regressed a.side-by-side").first.click()
        page.wait_for_selector("#answer-changes ins")
        added = page.locator("#answer-changes ins").first  # the regressed run's words
        pass_colour = page.evaluate(
            "getComputedStyle(document.documentElement).getPropertyValue('--pass')"
        )
        assert pass_colour.strip() == "#1f7a3d"
        assert added.evaluate("e => getComputedStyle(e).color") != "rgb(31, 122, 61)"
        browser.close()


@pytest.fixture
def replay() -> Iterator[ReplayServer]:
    with ReplayServer() as server:
        threading.Thread(target=server.serve_forever, daemon=True).start()
        yield server
        server.shutdown()


def test_an_unrecorded_request_is_a_clear_error_not_retried(replay: ReplayServer) -> None:
    client = openai.OpenAI(base_url=replay.base_url(), api_key="none", max_retries=2)
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model="any", messages=[{"role": "user", "content": "What is the capital of Peru?"}]
        )
    message = str(raised.value)
    assert "no response recorded in examples/ecommerce/recorded/good.jsonl" in message
    assert "'What is the capital of Peru?'" in message
    assert "python -m examples.ecommerce.record --upstream URL" in message


def test_the_shipped_recording_is_what_recording_the_scripted_model_writes_today(
    tmp_path: Path,
) -> None:
    counts = record_scripted(tmp_path)
    for name, count in counts.items():
        shipped = (RECORDED / f"{name}.jsonl").read_text(encoding="utf-8")
        assert (tmp_path / f"{name}.jsonl").read_text(encoding="utf-8") == shipped, (
            f"{name}.jsonl is stale: re-record with `python -m tests.examples.record_replay`"
        )
        assert count == len(shipped.splitlines()) > 20


def test_the_regressed_recording_states_prices_from_memory() -> None:
    assert invent_prices("Total $1,299.00, then $50.00.") == "Total $1,169.10, then $45.00."
    good = (RECORDED / "good.jsonl").read_text(encoding="utf-8")
    regressed = (RECORDED / "invented_price.jsonl").read_text(encoding="utf-8")
    assert "$1,299.00" in good and "$1,169.10" in regressed


def test_an_upstream_error_while_recording_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "good.jsonl"
    out.write_text("kept\n", encoding="utf-8")
    with (
        ScriptedOpenAI(lambda body: error(401)) as upstream,
        pytest.raises(click.ClickException, match="nothing written to .*HTTP 401"),
    ):
        record(upstream.base_url, "bad-key", "gpt-4o-mini", False, out)
    assert out.read_text(encoding="utf-8") == "kept\n"


def test_the_recording_proxy_records_a_regressed_answer_and_answers_as_the_replay_will() -> None:
    with (
        ScriptedOpenAI([text("Hello $10.00")]) as upstream,
        RecordingProxy(upstream.base_url, "sk-real", regress=True) as proxy,
    ):
        threading.Thread(target=proxy.serve_forever, daemon=True).start()
        client = openai.OpenAI(base_url=proxy.base_url(), api_key="not-this-one")
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hi"}]
        )
        proxy.shutdown()
    assert reply.choices[0].message.content == "Hello $9.00"
    assert reply.id.startswith("chatcmpl-replay-")
    [entry] = proxy.entries.values()
    assert entry["response"]["message"]["content"] == "Hello $9.00"
    assert entry["messages"] == [{"role": "user", "content": "hi"}]


def test_without_the_examples_extra_the_demo_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = demo.importlib.util.find_spec
    monkeypatch.setattr(
        demo.importlib.util,
        "find_spec",
        lambda name, *args: None if "openai_v2" in name else real(name, *args),
    )
    result = CliRunner().invoke(demo.main, [])
    assert result.exit_code == 2
    assert "pip install -e '.[examples]'" in result.output
