"""Issue 37: ``tracegrade mcp`` tested with the official SDK's own client, on the runs the demo
stores (``examples.ecommerce.demo --smoke``): the client lists the tools and calls each; the
write tools exist only with ``--allow-writes``; over stdio as a coding agent starts it; over
streamable HTTP behind the dashboard's token."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
import uvicorn
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from tracegrade.mcp.server import READ_TOOLS, WRITE_TOOLS, build_server, http_app
from tracegrade.pipeline.review import QueueRule, build_queue
from tracegrade.store import review as queue_store
from tracegrade.store.traces import Store

REPO = Path(__file__).resolve().parents[2]
DATASET = REPO / "datasets" / "ecommerce" / "golden.yaml"


@pytest.fixture(scope="module")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The store the keyless demo fills: a run per agent style, a baseline, a regressed run."""
    db = str(tmp_path_factory.mktemp("demo") / "demo.db")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
    command = [sys.executable, "-m", "examples.ecommerce.demo", "--smoke", f"--db={db}"]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return db


@pytest.fixture(scope="module")
def demo_traces(demo_db: str, tmp_path_factory: pytest.TempPathFactory) -> str:
    """The demo's stored traces exported to a trace file (``tracegrade export``)."""
    out = str(tmp_path_factory.mktemp("export") / "traces.jsonl")
    command = [sys.executable, "-m", "tracegrade", "export", out, "--db", demo_db]
    subprocess.run(command, cwd=REPO, check=True, capture_output=True, timeout=120)
    return out


def _content(result: Any) -> Any:
    """A tool result's structured content, else its text (JSON decoded when it is JSON)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        return result.structured_content.get("result", result.structured_content)
    text = "".join(part.text for part in result.content)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


async def _session(server: Any, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list]:
    async with Client(server) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        results = [await client.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def test_the_sdk_client_lists_and_calls_every_read_tool(demo_db: str, demo_traces: str) -> None:
    runs_only = anyio.run(_session, build_server(demo_db), [("list_runs", {})])
    listed = _content(runs_only[1][0])
    labels = [r["label"] for r in listed]
    assert labels == ["demo-regressed", "demo-agent-url", "demo-agent-cmd", "demo-agent"]
    regressed = listed[0]["run_id"]
    failed = anyio.run(_session, build_server(demo_db), [("failed_cases", {"run": regressed})])[1][
        0
    ]
    failed_cases = _content(failed)["failed_cases"]
    assert failed_cases and all(c["reasons"] or c["hard_failures"] for c in failed_cases)
    case_id = failed_cases[0]["case_id"]
    calls = [
        ("compare_runs", {"base": "baseline", "current": regressed}),
        ("case_trace", {"run": regressed, "case_id": case_id}),
        ("lint_file", {"path": demo_traces, "limit": 2}),
        ("score_file", {"path": demo_traces, "dataset": str(DATASET)}),
        ("search_traces", {}),
    ]
    tools, results = anyio.run(_session, build_server(demo_db), calls)
    assert sorted(tools) == sorted(READ_TOOLS)
    compared, chat, lints, scored, found = (_content(r) for r in results)
    assert compared.startswith("REGRESSION") and case_id in compared
    assert "user:" in chat and "-> tool " in chat and "assistant" in chat
    assert len(lints) == 2 and all("trace_id" in report for report in lints)
    assert scored["summary"]["results"] > 0 and "pass_rate" in scored["summary"]
    assert found and all(row["trace_id"] for row in found)
    tool = chat.split("-> tool ", 1)[1].split("(", 1)[0]
    searches = [("search_traces", {"tool": tool}), ("search_traces", {"tool": "no_such_tool"})]
    by_tool, by_none = anyio.run(_session, build_server(demo_db), searches)[1]
    assert 0 < len(_content(by_tool)) <= len(found)
    assert _content(by_none) == []


def test_writes_are_refused_without_allow_writes(demo_db: str, tmp_path: Path) -> None:
    db = str(tmp_path / "copy.db")
    with sqlite3.connect(demo_db) as source, sqlite3.connect(db) as target:
        source.backup(target)  # a copy: the writes change it
    build_queue(db, "triage", QueueRule(limit=1), "test")
    with Store(db) as store:
        conversation = queue_store.items(store.db, "triage")[0].conversation
    label = {"queue": "triage", "conversation": conversation, "verdict": "fail", "reviewer": "ci"}
    writes = [("mark_baseline", {"run": "latest"}), ("label_review_item", label)]
    tools, refused = anyio.run(_session, build_server(db), writes)
    assert not set(WRITE_TOOLS) & set(tools)
    assert all(r.is_error for r in refused)
    with Store(db) as store:
        assert queue_store.labels(store.db) == []
    tools, done = anyio.run(_session, build_server(db, allow_writes=True), writes)
    assert set(WRITE_TOOLS) <= set(tools)
    assert "is now the baseline" in _content(done[0])
    assert "fail on" in _content(done[1]) and "recorded" in _content(done[1])
    with Store(db) as store:
        assert [lab.verdict for lab in queue_store.labels(store.db)] == ["fail"]


def test_stdio_as_a_coding_agent_starts_it(demo_db: str) -> None:
    """The command a Claude Code or Cursor configuration runs: ``tracegrade mcp --db ...``."""
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "tracegrade", "mcp", "--db", demo_db], cwd=str(REPO)
    )
    tools, (runs,) = anyio.run(_session, params, [("list_runs", {"limit": 1})])
    assert sorted(tools) == sorted(READ_TOOLS)
    assert _content(runs)[0]["label"] == "demo-regressed"


@pytest.fixture
def http_server(demo_db: str) -> Iterator[str]:
    app = http_app(build_server(demo_db), "s3cret-token", "127.0.0.1")
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def test_streamable_http_behind_the_dashboard_token(http_server: str) -> None:
    refused = httpx.post(http_server, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert refused.status_code == 401

    async def listed() -> list[str]:
        headers = {"Authorization": "Bearer s3cret-token"}
        async with httpx2.AsyncClient(headers=headers) as http:
            transport = streamable_http_client(http_server, http_client=http)
            async with Client(transport) as client:
                return [t.name for t in (await client.list_tools()).tools]

    assert sorted(anyio.run(listed)) == sorted(READ_TOOLS)


def test_without_the_sdk_the_command_names_the_install_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from click.testing import CliRunner

    from tracegrade.cli import cli

    monkeypatch.setitem(sys.modules, "mcp.server.mcpserver", None)  # as if not installed
    result = CliRunner().invoke(cli, ["mcp", "--db", str(tmp_path / "s.db")])
    assert result.exit_code == 2
    assert "pip install 'tracegrade[mcp]'" in result.output
