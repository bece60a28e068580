"""``tracegrade score --export-otlp``: the OpenTelemetry SDK's own OTLP exporters send every
case's ``gen_ai.evaluation.result`` records to tracegrade's own receiver (which stores log
records) and the run's figures to a small OTLP metrics receiver (tests/support/metrics_sink:
tracegrade's receiver acknowledges metrics and stores none), on gRPC and on HTTP. Records
arrive with the evaluated trace's id, its agent span's id and the case's attributes; figures
with the run's values; a dead or refusing endpoint changes no exit code, costs the run no
time to speak of and is reported once."""

from __future__ import annotations

import contextlib
import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.ecommerce_agent import ShopAgent
from tests.support.metrics_sink import MetricsSink
from tests.support.ports import free_port
from tests.support.received import evaluation_records
from tests.support.receiver import running
from tracegrade.cli import cli
from tracegrade.errors import ConfigError
from tracegrade.report.evaluation_signals import INSTRUMENTS
from tracegrade.report.otlp_export import ExportTarget
from tracegrade.store.feedback import feedback_for
from tracegrade.store.traces import Store

DATASETS = Path(__file__).parents[2] / "datasets"
ORDERS = DATASETS / "e-commerce-agents" / "order_management.json"
QUESTIONS = [c["input"] for c in json.loads(ORDERS.read_text())]
PROTOCOLS = {"grpc": "grpc", "http": "http/protobuf"}


@pytest.fixture
def shop(tmp_path) -> tuple[Path, dict[str, str]]:
    """Trace file of the dataset's questions (one answered with an invented price, one
    without a tool call: a case hallucinates, one fails) and each trace's ``invoke_agent``
    span id."""
    agents = {b: ShopAgent(b) for b in ("good", "invented_price", "no_tool")}
    for n, question in enumerate(QUESTIONS):
        agents[{1: "invented_price", 3: "no_tool"}.get(n, "good")].ask(question)
    spans = [s for agent in agents.values() for s in agent.exporter.get_finished_spans()]
    agent_spans = {
        format(s.context.trace_id, "032x"): format(s.context.span_id, "016x")
        for s in spans
        if s.name.startswith("invoke_agent")
    }
    path = tmp_path / "traces.binpb"
    path.write_bytes(encode_spans(spans).SerializeToString())
    return path, agent_spans


def _score(path: Path, out: Path, *extra: str):
    args = ["score", str(path), "--dataset", str(ORDERS), "--json", str(out), "--no-save"]
    return CliRunner().invoke(cli, [*args, *extra])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_case_s_evaluation_records_and_the_run_s_figures_arrive(
    tmp_path, monkeypatch, shop, protocol
):
    traces, agent_spans = shop
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", PROTOCOLS[protocol])
    db, out = tmp_path / "received.db", tmp_path / "run.json"
    with running(db) as receiver, MetricsSink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", sink.endpoint(protocol))
        endpoint = receiver.grpc_endpoint if protocol == "grpc" else receiver.http_endpoint
        result = _score(traces, out, "--export-otlp", endpoint)
        points = sink.points()
    assert result.exit_code == 1, result.output  # some cases fail: the run fails as without
    assert "export-otlp" not in result.output
    doc = json.loads(out.read_text())
    received = evaluation_records(db, [c["trace_id"] for c in doc["cases"]])
    for case in doc["cases"]:
        records = received[case["trace_id"]]
        names = [r.attributes["gen_ai.evaluation.name"] for r in records]
        assert sorted(names) == sorted([*case["details"], "overall"])  # batches may interleave
        for record in records:
            assert record.span_id == agent_spans[case["trace_id"]]
            assert record.resource_attributes["service.name"] == "tracegrade"
            evaluator = doc["run"]["evaluator"]
            ours = {k: v for k, v in record.attributes.items() if k.startswith("tracegrade.")}
            assert len(ours.pop("tracegrade.result.id")) == 32
            assert ours == {
                "tracegrade.run_id": doc["run"]["run_id"],
                "tracegrade.case_id": case["case_id"],
                "tracegrade.dataset": "order_management",
                "tracegrade.verdict": "pass" if case["passed"] else "fail",
                "tracegrade.evaluator.id": evaluator["id"],  # who scored it, as the run says
                "tracegrade.version": evaluator["tracegrade_version"],
                "tracegrade.dataset.fingerprint": evaluator["dataset_fingerprint"],
                "tracegrade.config.fingerprint": evaluator["config_fingerprint"],
            }
        by_name = {r.attributes["gen_ai.evaluation.name"]: r.attributes for r in records}
        for name, detail in case["details"].items():
            assert by_name[name].get("gen_ai.evaluation.score.value") == detail["value"]
            assert by_name[name].get("gen_ai.evaluation.explanation") == (detail["reason"] or None)
        overall = by_name["overall"]
        assert overall["gen_ai.evaluation.score.value"] == pytest.approx(case["score"])
        assert overall["gen_ai.evaluation.score.label"] == ("pass" if case["passed"] else "fail")
    with Store(db) as store:  # tracegrade's own verdicts are never taken for end-user feedback
        assert feedback_for(store.db, list(received)) == {}
    summary = doc["summary"]
    assert 0 < summary["pass_rate"] < 1 and summary["hallucination_rate"] > 0
    expected = {
        "tracegrade.evaluation.cases": summary["results"],
        "tracegrade.evaluation.pass_rate": summary["pass_rate"],
        "tracegrade.evaluation.score": summary["score"],
        "tracegrade.evaluation.hallucination_rate": summary["hallucination_rate"],
        "tracegrade.trace.duration.p50": summary["latency_p50_ms"] / 1000,
        "tracegrade.trace.duration.p95": summary["latency_p95_ms"] / 1000,
        "tracegrade.trace.cost": summary["cost_usd"],
    }
    for name, value in expected.items():
        [(attributes, got, unit)] = points[name]
        assert got == pytest.approx(value), name
        assert unit == INSTRUMENTS[name][0]
        assert attributes == {"tracegrade.dataset": "order_management", "resource": "tracegrade"}
    axes = {a["tracegrade.axis"]: v for a, v, _ in points["tracegrade.evaluation.axis_score"]}
    assert axes == pytest.approx(summary["axes"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_dead_endpoint_changes_no_exit_code_slows_nothing_and_is_reported_once(
    tmp_path, monkeypatch, shop, protocol
):
    traces, _ = shop
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", PROTOCOLS[protocol])
    started = time.perf_counter()
    plain = _score(traces, tmp_path / "plain.json")
    plain_s = time.perf_counter() - started
    started = time.perf_counter()
    dead = _score(
        traces, tmp_path / "dead.json", "--export-otlp", f"http://127.0.0.1:{free_port()}"
    )
    dead_s = time.perf_counter() - started
    assert dead.exit_code == plain.exit_code == 1
    lines = [line for line in dead.output.splitlines() if "export-otlp" in line]
    assert len(lines) == 1, dead.output  # one warning, no SDK retry chatter
    assert "Connection refused" in lines[0] or "UNAVAILABLE" in lines[0]
    assert "records" in lines[0] and "not delivered" in lines[0]
    assert "Transient error" not in dead.output.replace(lines[0], "")
    assert dead_s < plain_s + 1.0  # no retry waits: the SDK retries for up to 10 s a batch
    verdicts = [
        [(c["case_id"], c["passed"], c["score"]) for c in json.loads(p.read_text())["cases"]]
        for p in (tmp_path / "plain.json", tmp_path / "dead.json")
    ]
    assert verdicts[0] == verdicts[1]


def test_headers_from_the_standard_variable_authenticate_and_a_refusal_is_reported(
    tmp_path, monkeypatch, shop
):
    traces, _ = shop
    db = tmp_path / "received.db"
    with running(db, token="s3cret") as receiver:
        refused = _score(traces, tmp_path / "a.json", "--export-otlp", receiver.http_endpoint)
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20s3cret")
        accepted = _score(traces, tmp_path / "b.json", "--export-otlp", receiver.http_endpoint)
    assert refused.exit_code == accepted.exit_code == 1
    [warning] = [line for line in refused.output.splitlines() if "export-otlp" in line]
    assert "401" in warning
    assert "export-otlp" not in accepted.output
    doc = json.loads((tmp_path / "b.json").read_text())
    received = evaluation_records(db, [c["trace_id"] for c in doc["cases"]])
    assert len(received) == len(doc["cases"])
    runs = {r.attributes["tracegrade.run_id"] for records in received.values() for r in records}
    assert runs == {doc["run"]["run_id"]}


def test_the_endpoint_must_be_a_url_and_the_protocol_one_the_sdk_speaks():
    with pytest.raises(ConfigError, match="http://localhost:4318"):
        ExportTarget.resolve("localhost:4318", {})
    with pytest.raises(ConfigError, match="http/protobuf or grpc"):
        ExportTarget.resolve("http://x:4318", {"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})


def test_the_signal_variables_win_over_the_base_endpoint():
    target = ExportTarget.resolve(
        "http://collector:4318/",
        {
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://prometheus:9090/api/v1/otlp/v1/metrics",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            "OTEL_EXPORTER_OTLP_LOGS_PROTOCOL": "http/protobuf",
        },
    )
    assert target.exporter_endpoint("logs") == "http://collector:4318/v1/logs"
    assert target.exporter_endpoint("metrics") is None  # the SDK reads its variable
    assert target.protocols == {"logs": "http/protobuf", "metrics": "grpc"}
    grpc = ExportTarget.resolve("http://collector:4317", {"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"})
    assert grpc.exporter_endpoint("logs") == "http://collector:4317"


class _Answers500(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def _answering_500() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers500)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_credentials_in_the_endpoint_are_masked_in_every_delivery_warning(
    tmp_path, monkeypatch, shop
):
    """Issue 40 item 15: ``http://user:PASS@host/otlp?api_key=KEY`` printed PASS and KEY in
    its warnings (closed port, 401, 500)."""
    traces, _ = shop
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
    password, key = "Pa55-w0rd-9f2c", "key-7d1e0a"

    def with_credentials(base: str, path: str = "") -> str:
        return base.replace("://", f"://ann:{password}@") + f"{path}?api_key={key}&x=1"

    outputs = {}
    closed = with_credentials(f"http://127.0.0.1:{free_port()}", "/otlp")
    outputs["closed"] = _score(traces, tmp_path / "a.json", "--export-otlp", closed).output
    with running(tmp_path / "received.db", token="s3cret") as receiver:
        refused = with_credentials(receiver.http_endpoint)
        outputs["401"] = _score(traces, tmp_path / "b.json", "--export-otlp", refused).output
    with _answering_500() as failing:
        url = with_credentials(failing, "/otlp")
        outputs["500"] = _score(traces, tmp_path / "c.json", "--export-otlp", url).output
    for case, output in outputs.items():
        [warning] = [line for line in output.splitlines() if "export-otlp" in line]
        assert "not delivered" in warning, (case, warning)
        assert password not in output and key not in output, (case, warning)
        assert "ann:***@" in warning and "api_key=***" in warning, (case, warning)
    assert "401" in outputs["401"] and "500" in outputs["500"]


def test_an_endpoint_with_a_query_keeps_it_after_the_signal_path():
    target = ExportTarget.resolve("http://u:pw9@collector:4318/otlp?api_key=KEY", {})
    assert (
        target.exporter_endpoint("logs") == "http://u:pw9@collector:4318/otlp/v1/logs?api_key=KEY"
    )
    assert (
        target.describe("logs")
        == "http://u:***@collector:4318/otlp/v1/logs?api_key=*** (http/protobuf)"
    )
    with pytest.raises(ConfigError) as refused:
        ExportTarget.resolve("ftp://u:pw9@collector?api_key=KEY", {})
    assert "pw9" not in str(refused.value) and "KEY" not in str(refused.value)
