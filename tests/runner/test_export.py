"""``tracegrade run --export-otlp``: every attempt's result goes out as
``gen_ai.evaluation.result`` records (its repeat among the attributes) parented to the
attempt's agent span, and the run's figures as metrics; a case whose agent failed has no
trace, sends no record, and counts in the figures."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runner.conftest import CASES, run_cli, write_dataset
from tests.support.metrics_sink import MetricsSink
from tests.support.received import evaluation_records
from tests.support.receiver import running
from tracegrade.store.traces import Store


def test_each_attempt_s_records_and_the_run_s_figures_are_sent(
    model, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_dataset(tmp_path / "d.yaml", [*CASES, {"id": "boom", "input": "BOOM now"}])
    store, received = tmp_path / "run.db", tmp_path / "received.db"
    with running(received) as receiver, MetricsSink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", sink.endpoint("http"))
        ran = run_cli(
            tmp_path,
            path,
            "--agent",
            "tests.runner.agents:raising",
            "--repeat",
            "2",
            "--db",
            str(store),
            "--export-otlp",
            receiver.http_endpoint,
        )
        points = sink.points()
    assert ran.exit_code == 1 and "export-otlp" not in ran.stderr, ran.stderr
    attempts = [(case, attempt) for case in ran.doc["cases"] for attempt in case["attempts"]]
    ids = [t for _, a in attempts for t in a["trace_ids"]]
    records = evaluation_records(received, ids)
    with Store(store) as run_store:
        for case, attempt in attempts:
            if case["case_id"] == "boom":
                assert not attempt["trace_ids"] or attempt["trace_ids"][0] not in records
                continue
            (trace_id,) = attempt["trace_ids"]
            (trace,) = run_store.load([trace_id])
            agent = next(s.span_id for s in trace.spans if s.name == "invoke_agent shop")
            mine = [r.attributes for r in records[trace_id]]
            assert len(mine) > 1 and "overall" in {r["gen_ai.evaluation.name"] for r in mine}
            assert {r.span_id for r in records[trace_id]} == {agent}
            assert {r["tracegrade.repeat"] for r in mine} == {attempt["repeat"]}
            assert {r["tracegrade.run_id"] for r in mine} == {ran.doc["run"]["run_id"]}
            assert {r["tracegrade.case_id"] for r in mine} == {case["case_id"]}
    summary = ran.doc["summary"]
    [(_, cases, _)] = points["tracegrade.evaluation.cases"]
    [(_, pass_rate, _)] = points["tracegrade.evaluation.pass_rate"]
    assert cases == summary["results"] and pass_rate == pytest.approx(summary["pass_rate"])
    assert 0 < pass_rate < 1  # the failed agent counts
