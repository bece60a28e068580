"""``tracegrade run --agent-url``: a running service continues the runner's W3C traceparent."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runner.conftest import CASES, REPO, run_cli, write_dataset
from tests.support.openai_server import ScriptedOpenAI, error
from tests.support.ports import free_port
from tracegrade.store.traces import Store


@pytest.fixture
def service(model) -> Iterator[tuple[str, int]]:
    """The shop agent as an HTTP service exporting OTLP/HTTP to a port the run's receiver will
    take: (service URL, receiver port)."""
    otlp_port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{otlp_port}",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.runner.shop_agent", "--serve", "0"],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = process.stdout.readline()  # type: ignore[union-attr]
        assert line.startswith("listening "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/", otlp_port
    finally:
        process.terminate()
        process.wait(10)


def test_service_spans_join_the_case_trace_and_multi_turn_uses_the_messages_body(
    service, tmp_path: Path
) -> None:
    url, otlp_port = service
    turns = ["How much is the Sony WH-1000XM5?", "And the Bose QC Ultra?"]
    path = write_dataset(
        tmp_path / "d.yaml",
        [CASES[0], {"id": "two", "turns": turns, "expected_tools": ["get_price"] * 2}],
    )
    ran = run_cli(
        tmp_path,
        path,
        "--agent-url",
        url,
        "--otlp-http-port",
        str(otlp_port),
        "--settle-quiet",
        "0.3",
        "--body",
        '{"messages": "{messages}", "session": "{conversation_id}"}',
        "--db",
        str(tmp_path / "s.db"),
    )
    assert ran.exit_code == 0, ran.stdout + ran.stderr
    assert ran.case("two")["usage"]["tool_calls"] == 2
    with Store(tmp_path / "s.db") as store:
        (trace,) = store.load(ran.case("two")["attempts"][0]["trace_ids"])
    root = next(s for s in trace.spans if s.parent_span_id is None)
    assert (
        root.name == "tracegrade case two"
        and root.resource_attributes.get("service.name") != "shop-agent"
    )
    served = [s for s in trace.spans if s.name == "POST /"]
    assert len(served) == 2 and all(s.parent_span_id == root.span_id for s in served)
    assert all(s.resource_attributes["service.name"] == "shop-agent" for s in served)


def test_an_http_error_fails_the_case_with_the_status(tmp_path: Path) -> None:
    path = write_dataset(tmp_path / "d.yaml", [CASES[0]])
    with ScriptedOpenAI([error(503, "overloaded")]) as broken:
        ran = run_cli(tmp_path, path, "--agent-url", broken.base_url, "--header", "X-Team: evals")
    assert ran.exit_code == 2  # no case produced a trace
    assert (
        "HTTP 503" in ran.case("sony-price")["error"]
        and "overloaded" in ran.case("sony-price")["error"]
    )
    assert "no case produced a trace" in ran.stderr
