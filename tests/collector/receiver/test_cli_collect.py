"""``tracegrade collect`` as a real subprocess: the readiness line, both protocols, the
/healthz document, status lines with --verbose, the token from TRACEGRADE_TOKEN, clean exits
on SIGTERM and SIGINT that keep everything acknowledged, and clear errors for bad options."""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
import threading
import time

import grpc
import httpx
import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.collect_process import CollectProcess
from tests.support.receiver import (
    HTTP,
    GrpcClient,
    canonical,
    http_export,
    request_logs,
    request_spans,
    stored_logs,
    stored_spans,
)
from tests.support.sdk import agent_turn, trace_request
from tests.support.sdk_pipelines import (
    export_logs,
    export_traces,
    log_exporter,
    span_exporter,
)
from tracegrade.cli import cli
from tracegrade.collector.ingest import BATCH_COMMIT_SLACK_S
from tracegrade.collector.receiver import SHUTDOWN_TIMEOUT_S

SHUTDOWN_BOUND_S = SHUTDOWN_TIMEOUT_S + BATCH_COMMIT_SLACK_S

_COUNT = r"\d+(?:,\d{3})*"
STATUS = re.compile(
    rf"tracegrade collect: [\d,.]+ items/s stored, (?P<total>{_COUNT}) total, queue (?P<depth>\d+) "
    rf"\([\d.]+ MB\), rejected (?P<rejected>{_COUNT})"
)
STOPPED = re.compile(
    rf"stopped; (?P<stored>{_COUNT}) items stored, (?P<rejected>{_COUNT}) rejected"
)


def _emit(logger, tracer) -> None:
    with tracer.start_as_current_span("turn"):
        for i in range(5):
            logger.emit(body=f"log {i}", attributes={"i": i})


def test_collect_serves_both_protocols_reports_status_and_exits_0_on_sigterm(tmp_path):
    db = tmp_path / "collect.db"
    with CollectProcess(db, "--verbose", "--status-every", "0.2") as collect:
        assert (collect.host, collect.store) == ("127.0.0.1", str(db))
        spans = export_traces(span_exporter("grpc", collect, gzip=True), agent_turn)
        logs = export_logs(log_exporter("http", collect, gzip=True), _emit)
        more = export_traces(span_exporter("http", collect), agent_turn)

        health = HTTP.get(f"{collect.http_endpoint}/healthz")
        assert health.status_code == 200 and health.headers["content-type"] == "application/json"
        document = health.json()
        assert document["status"] == "ok" and document["store"] == str(db)
        assert (document["grpc_port"], document["http_port"]) == (
            collect.grpc_port,
            collect.http_port,
        )
        assert (document["stored"], document["rejected"], document["queue_depth"]) == (11, 0, 0)

        status = collect.wait_for_line(collect.stderr, STATUS, count=2)
        assert status["rejected"] == "0"
        collect.wait_for_line(collect.stderr, re.compile(r" 11 total, queue 0 "), timeout_s=5)
        assert collect.stop(signal.SIGTERM) == 0
    assert STOPPED.search(collect.stderr[-1])["stored"] == "11"
    assert stored_spans(db) == request_spans(encode_spans(spans), encode_spans(more))
    assert canonical(stored_logs(db)) == canonical(request_logs(encode_logs(logs)))


def test_sigint_during_traffic_exits_0_and_keeps_every_acknowledged_span(tmp_path):
    db = tmp_path / "busy.db"
    acknowledged: list[set] = []
    with CollectProcess(db) as collect, GrpcClient(collect.grpc_port) as client:
        requests = [trace_request(agent_turn) for _ in range(400)]
        started = threading.Barrier(5)

        def send(worker: int) -> None:
            started.wait()
            for n in range(worker, len(requests), 4):
                body = requests[n].SerializeToString()
                try:
                    if worker % 2:
                        client.export("traces", body, timeout_s=5)
                    elif http_export(collect, "traces", body).status_code != 200:
                        return
                except (grpc.RpcError, httpx.HTTPError):
                    return
                acknowledged.append(set(request_spans(requests[n])))

        threads = [threading.Thread(target=send, args=(w,)) for w in range(4)]
        for thread in threads:
            thread.start()
        started.wait()
        deadline = time.monotonic() + 20
        while len(acknowledged) < 8:  # traffic is flowing: stop in the middle of it
            assert time.monotonic() < deadline
            time.sleep(0.005)
        # Stopping is bounded by design (the receiver's drain deadline plus one batch commit);
        # the margin is for a loaded machine starting and ending the process, not for the drain.
        assert collect.stop(signal.SIGINT, timeout_s=SHUTDOWN_BOUND_S + 20) == 0
        for thread in threads:
            thread.join(10)
    keys = set().union(*acknowledged)
    assert keys <= stored_spans(db).keys()
    assert int(STOPPED.search(collect.stderr[-1])["stored"].replace(",", "")) >= len(keys)


def test_token_from_the_environment_is_required_and_no_status_lines_without_verbose(tmp_path):
    body = trace_request(agent_turn).SerializeToString()
    with (
        CollectProcess(
            tmp_path / "token.db", "--status-every", "0.1", env={"TRACEGRADE_TOKEN": "env-token"}
        ) as collect,
        GrpcClient(collect.grpc_port) as client,
    ):
        assert http_export(collect, "traces", body).status_code == 401
        with pytest.raises(grpc.RpcError) as caught:
            client.export("traces", body)
        assert caught.value.code() is grpc.StatusCode.UNAUTHENTICATED
        assert (
            http_export(
                collect, "traces", body, headers={"authorization": "Bearer env-token"}
            ).status_code
            == 200
        )
        time.sleep(0.3)
        assert collect.stop() == 0
    assert not [line for line in collect.stderr if STATUS.search(line)]
    assert STOPPED.search(collect.stderr[-1])["stored"] == "3"
    assert len(stored_spans(tmp_path / "token.db")) == 3


# --- bad options: in process (no server keeps running), through the real click group --------------


def _collect(*args: str, env: dict | None = None):
    return CliRunner().invoke(
        cli, ["collect", "--grpc-port", "0", "--http-port", "0", "--db", "x.db", *args], env=env
    )


def test_a_blank_token_in_the_environment_is_a_configuration_error():
    result = _collect(env={"TRACEGRADE_TOKEN": "  "})
    assert result.exit_code == 2 and "TRACEGRADE_TOKEN is empty" in result.output


def test_an_explicit_empty_token_option_is_a_configuration_error():
    result = _collect("--token", " ")
    assert result.exit_code == 2 and "--token / TRACEGRADE_TOKEN is empty" in result.output


def _busy_port():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def test_an_http_port_in_use_is_a_clear_error():
    with _busy_port() as listener:
        result = _collect("--http-port", str(listener.getsockname()[1]))
    assert result.exit_code == 2 and "cannot start the receiver on 127.0.0.1" in result.output
    assert "OTLP/HTTP port 127.0.0.1:" in result.output and "the port is in use" in result.output


def test_a_grpc_port_in_use_is_a_clear_error_and_nothing_else(tmp_path):
    """Issue 27, defect 12: grpcio's C core logged a raw ``E... add_port.cc:83] Failed to add
    port`` line on stderr (its own file descriptor: only a subprocess sees it) before the
    error. The port is now checked first: the one clear line is all stderr holds."""
    with _busy_port() as listener:
        port = listener.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "tracegrade", "collect", "--db", str(tmp_path / "s.db")]
            + ["--grpc-port", str(port), "--http-port", "0"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: cannot start the receiver on 127.0.0.1: cannot bind the gRPC port "
        f"127.0.0.1:{port}: the port is in use (another process listens on it; stop it, or "
        "choose another port, 0 for any free one)"
    ]


@pytest.mark.parametrize(
    "args", [["--grpc-port", "70000"], ["--max-request-mib", "0"], ["--status-every", "0.01"]]
)
def test_out_of_range_options_are_usage_errors(args):
    result = _collect(*args)
    assert result.exit_code == 2 and "Invalid value" in result.output


def test_collect_off_loopback_without_a_token_warns(monkeypatch):
    started = []

    class Refused(OSError):
        pass

    def start(self):  # no server: the warning comes before it
        started.append(self)
        raise Refused("not started in this test")

    monkeypatch.setattr("tracegrade.collector.receiver.Receiver.start", start)
    warned = _collect("--host", "0.0.0.0")
    assert started and "warning: --host 0.0.0.0 is not loopback and no --token" in warned.output
    quiet = _collect("--host", "[::1]")
    assert "warning" not in quiet.output
    quiet = _collect("--host", "0.0.0.0", "--token", "t0ken")
    assert "warning" not in quiet.output
