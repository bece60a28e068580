"""The example agent's command line and HTTP service as separate processes: telemetry from the
standard OTEL_* environment, exported over OTLP/HTTP to a recording sink and read back with
tracegrade's OTLP reader; the service joins the caller's trace from ``traceparent``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from tests.examples.conftest import REPO, scripted_model
from tests.examples.otlp_sink import OtlpSink
from tracegrade.config import defaults
from tracegrade.normalize import normalize_all
from tracegrade.scoring import build_scorers, config_for, evaluate

TRACKING = (
    "Where is my package for order 550e8400-e29b-41d4-a716-446655440002? I want tracking info."
)
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"


@pytest.fixture(scope="module")
def model_server():
    with scripted_model("good") as server:
        yield server


def _env(model_server):
    """A clean environment for an agent process: the scripted model, OTLP/HTTP settings."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    return {
        **base,
        "PYTHONPATH": str(REPO),
        "OPENAI_BASE_URL": model_server.base_url,
        "OPENAI_API_KEY": "test",
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "50",
    }


@pytest.fixture
def env(model_server):
    return _env(model_server)


@pytest.fixture
def sink():
    with OtlpSink() as sink:
        yield sink


def _agent_cli(env, *args, stdin=None):
    return subprocess.run(
        [sys.executable, "-m", "examples.ecommerce", *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_cli_exports_the_case_trace_before_exit(env, sink, dataset):
    env.update(
        OTEL_EXPORTER_OTLP_ENDPOINT=sink.endpoint,
        OTEL_RESOURCE_ATTRIBUTES="tracegrade.run_id=run-1,tracegrade.case_id=tracking-0002",
    )
    done = _agent_cli(env, TRACKING)
    assert done.returncode == 0, done.stderr
    assert "tracking number: 794612345678" in done.stdout
    spans = sink.spans()  # already there: the CLI flushed on exit
    assert {s.resource_attributes["tracegrade.case_id"] for s in spans} == {"tracking-0002"}
    assert {s.resource_attributes["service.name"] for s in spans} == {"ecommerce-agent"}
    (trace,) = normalize_all(spans)
    config = config_for(defaults(), dataset)
    result = evaluate([trace], dataset, build_scorers(config, with_plugins=False), config)
    (outcome,) = [r for r in result.results if r.case_id == "tracking-0002"]
    assert outcome.passed and outcome.trace_id == trace.trace_id, outcome.reasons


def test_cli_reads_a_conversation_on_stdin_and_console_spans_go_to_stderr(env):
    env["OTEL_TRACES_EXPORTER"] = "console"
    conversation = [
        {"role": "user", "content": "I'm looking for running shoes under $150"},
        {"role": "assistant", "content": "Running shoes under $150: ..."},
        {"role": "user", "content": "Is the Nike Pegasus in stock?"},
    ]
    done = _agent_cli(env, "--messages", stdin=json.dumps(conversation))
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "Stock for the Nike Pegasus 41:\nNike Pegasus 41 Running Shoes: in stock: yes"
    )
    assert '"name": "invoke_agent shop-assistant"' in done.stderr
    assert "invoke_agent" not in done.stdout


def test_cli_without_a_message_is_a_usage_error(env):
    done = _agent_cli(env, stdin="")
    assert done.returncode == 2 and "no message: pass it as an argument or on stdin" in done.stderr


def test_cli_agent_failure_exits_1_with_the_reason(env):
    env.update(OTEL_TRACES_EXPORTER="none")
    done = _agent_cli(env, "Sing me a song")
    assert done.returncode == 1
    assert (
        "error: BadRequestError" in done.stderr
        and "no case starts with 'Sing me a song'" in done.stderr
    )


@pytest.fixture(scope="module")
def service_sink():
    with OtlpSink() as sink:
        yield sink


@pytest.fixture(scope="module")
def service(model_server, service_sink):
    """The HTTP service on a free port (one process for this module's tests); its base URL."""
    env = {**_env(model_server), "OTEL_EXPORTER_OTLP_ENDPOINT": service_sink.endpoint}
    process = subprocess.Popen(
        [sys.executable, "-m", "examples.ecommerce.serve", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = process.stdout.readline()
    assert line.startswith("listening on http://"), (
        line,
        process.stderr.read() if process.poll() else "",
    )
    yield line.split()[-1]
    process.terminate()
    assert process.wait(timeout=10) == 0


def _post(url, body, headers=None):
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_service_joins_the_callers_trace_and_copies_tracegrade_baggage(service, service_sink):
    headers = {
        "traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01",
        "baggage": "tracegrade.case_id=tracking-0002,tracegrade.run_id=run-7,session=abc",
    }
    status, body = _post(f"{service}/chat", {"message": TRACKING}, headers)
    assert status == 200 and "tracking number: 794612345678" in body["reply"]
    spans = [
        s
        for s in service_sink.wait_for(
            lambda spans: any(
                s.trace_id == TRACE_ID and s.name.startswith("invoke_agent") for s in spans
            )
        )
        if s.trace_id == TRACE_ID
    ]
    (agent,) = [s for s in spans if s.name == "invoke_agent shop-assistant"]
    assert agent.parent_span_id == PARENT_ID
    assert len(spans) == 4  # agent, two chats, one tool
    for span in spans:
        assert (span.attributes["tracegrade.case_id"], span.attributes["tracegrade.run_id"]) == (
            "tracking-0002",
            "run-7",
        )
        assert "session" not in span.attributes


def test_service_takes_a_conversation(service):
    conversation = [
        {"role": "user", "content": "I want to cancel my order."},
        {"role": "assistant", "content": "Which order would you like to cancel?"},
        {"role": "user", "content": "It's order 550e8400-e29b-41d4-a716-446655440006"},
    ]
    status, body = _post(service, {"messages": conversation})
    assert status == 200 and body["reply"].startswith("Done, I cancelled it:\nOrder ID 550e8400-")


@pytest.mark.parametrize(
    ("body", "status", "error"),
    [
        ({"text": "hi"}, 400, 'the body must be {"message": "..."}'),
        ({"messages": [{"role": "tool", "content": "x"}]}, 400, "message 0: expected"),
        ({"message": "Sing me a song"}, 502, "BadRequestError"),
    ],
)
def test_service_reports_bad_requests_and_agent_failures(service, body, status, error):
    code, payload = _post(f"{service}/chat", body)
    assert code == status and error in payload["error"]
