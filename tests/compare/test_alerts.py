"""Regression alerts: the webhook against local HTTP servers (answering, failing, hanging) and the
GitHub step summary; a failed alert never changes the verdict."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.compare.conftest import invoke
from tests.compare.documents import case, run
from tracegrade.compare import compare_runs
from tracegrade.compare.run_cases import CaseTable, ComparedCases, document_head
from tracegrade.report.alerts import alert_text, mask_url, post_alert, post_webhook

REGRESSED = compare_runs(run("b", [case("a", 0.9)]), run("c", [case("a", 0.4)]))


@contextmanager
def webhook(status: int = 200, hang: bool = False) -> Iterator[tuple[str, list[dict]]]:
    """A local HTTP server answering ``status`` (or never answering, until the test ends);
    yields its URL and the JSON bodies it received."""
    received: list[dict] = []
    release = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["content-length"]))
            received.append(json.loads(body))
            if hang:
                release.wait(10)
                return
            self.send_response(status)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/hook", received
    finally:
        release.set()
        server.shutdown()
        server.server_close()


def test_the_alert_carries_slack_text_and_the_comparison() -> None:
    with webhook() as (url, received):
        delivery = post_webhook(url, REGRESSED)
    assert delivery.ok and delivery.attempts == 1
    (body,) = received
    assert body["text"].startswith(":rotating_light: tracegrade regression")
    assert "passed before and fail now: a" in body["text"]
    assert body["regression"] and body["comparison"]["cases"][0]["status"] == "regressed"


def test_a_failing_webhook_is_retried_a_bounded_number_of_times() -> None:
    with webhook(status=503) as (url, received):
        delivery = post_webhook(url, REGRESSED, attempts=3, pause_s=0.01)
    assert not delivery.ok and delivery.attempts == 3 and delivery.error == "HTTP 503"
    assert len(received) == 3
    assert received[0]["comparison"]["cases"] and received == [received[0]] * 3  # read anew


def test_a_comparison_read_from_disk_is_posted_whole_a_case_at_a_time() -> None:
    """``score --baseline``'s comparison (cases in a temporary file): the body, written to a
    file a case at a time and sent with its length, is the alert of the whole comparison."""
    base = run("b", [case(f"c{n}", 0.9) for n in range(1200)])
    current = run("c", [case(f"c{n}", 0.4 if n % 7 == 0 else 0.9) for n in range(1200)])
    with CaseTable() as table:
        comparison = compare_runs(
            table.add(base["cases"], document_head(base)),
            table.add(current["cases"], document_head(current)),
        )
    assert isinstance(comparison.cases, ComparedCases) and comparison.regression
    with webhook() as (url, received):
        assert post_webhook(url, comparison).ok
    (body,) = received
    expected = {
        "text": alert_text(comparison),
        "regression": True,
        "reasons": list(comparison.reasons),
        "comparison": comparison.to_json(),
    }
    assert body == json.loads(json.dumps(expected)) and len(body["comparison"]["cases"]) == 1200
    written = io.BytesIO()
    REGRESSED.write_json(written)
    assert json.loads(written.getvalue()) == json.loads(json.dumps(REGRESSED.to_json()))


def test_a_client_error_is_not_retried() -> None:
    with webhook(status=404) as (url, received):
        delivery = post_webhook(url, REGRESSED, attempts=3, pause_s=0.01)
    assert not delivery.ok and delivery.attempts == 1 and len(received) == 1


def test_a_hanging_webhook_times_out_on_every_attempt() -> None:
    with webhook(hang=True) as (url, received):
        delivery = post_webhook(url, REGRESSED, timeout_s=0.2, attempts=2, pause_s=0.01)
    assert not delivery.ok and "Timeout" in (delivery.error or "") and len(received) == 2


def _files(tmp_path: Path, current_score: float) -> tuple[str, str]:
    base, current = tmp_path / "base.json", tmp_path / "current.json"
    base.write_text(json.dumps(run("b", [case("a", 0.9)])))
    current.write_text(json.dumps(run("c", [case("a", current_score)])))
    return str(base), str(current)


def test_compare_reports_a_failed_webhook_and_keeps_its_verdict(tmp_path: Path) -> None:
    base, current = _files(tmp_path, 0.4)
    with webhook(status=500) as (url, received):
        ran = invoke("compare", base, current, "--alert-webhook", url)
    assert ran.exit_code == 1 and "alert webhook failed after 3 attempt(s): HTTP 500" in ran.output
    assert len(received) == 3


def test_no_regression_posts_nothing(tmp_path: Path) -> None:
    base, current = _files(tmp_path, 0.9)
    with webhook() as (url, received):
        ran = invoke("compare", base, current, "--alert-webhook", url)
    assert ran.exit_code == 0 and received == []


def test_the_step_summary_gets_the_markdown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step-summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base, current = _files(tmp_path, 0.4)
    assert invoke("compare", base, current, "--markdown", str(tmp_path / "c.md")).exit_code == 1
    text = summary.read_text()
    assert text.startswith("earlier step\n### tracegrade: ❌ **regression**")
    assert "| a | regressed | 0.900 | 0.400 |" in text
    assert text.endswith((tmp_path / "c.md").read_text() + "\n")


def test_trace_values_are_inert_in_the_slack_text() -> None:
    hostile = compare_runs(
        run("<!channel> b", [case("a", 0.9)]),
        run("<https://evil.example|click> @here & c", [case("a", 0.4)]),
    )
    text = alert_text(hostile)
    assert "<!channel>" not in text and "<https://evil" not in text
    assert "&lt;!channel&gt;" in text and "&lt;https://evil.example|click&gt;" in text
    assert "@here" not in text and "&amp; c" in text


def test_a_failed_delivery_never_prints_the_webhook_secret() -> None:
    secret = "https://hooks.slack.com/services/T000/B000/XXXXSECRETXXXX"
    for url in (secret, "http://127.0.0.1:9/services/T000/B000/XXXXSECRETXXXX"):
        delivery = post_webhook(url.replace("https://", "htps://"), REGRESSED, attempts=1)
        assert not delivery.ok and "XXXXSECRETXXXX" not in (delivery.error or "")
        delivery = post_webhook(url.replace(".slack.com", ".invalid"), REGRESSED, attempts=1)
        assert not delivery.ok and "XXXXSECRETXXXX" not in (delivery.error or "")
    assert mask_url(secret) == "https://hooks.slack.com/***"
    problem = post_alert("http://127.0.0.1:9/T000/B000/XXXXSECRETXXXX", "down", {})
    assert problem and "XXXXSECRETXXXX" not in problem and "127.0.0.1:9/***" in problem


def test_a_window_alert_escapes_the_service_name() -> None:
    with webhook() as (url, received):
        assert post_alert(url, "ALERT service=<!channel> shop", {}) is None
    assert "<!channel>" not in received[0]["text"] and "&lt;!channel&gt;" in received[0]["text"]
