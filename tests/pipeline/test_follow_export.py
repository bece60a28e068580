"""``score --follow --export-otlp``: each followed trace's result goes out as
``gen_ai.evaluation.result`` records as it is scored, each closed window's figures per
service as metrics; a dead endpoint is reported once, however long the follower runs."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from tests.support.metrics_sink import MetricsSink
from tests.support.ports import free_port
from tests.support.received import evaluation_records
from tests.support.receiver import running
from tests.support.sdk import agent_turn, trace_request
from tracegrade.config import load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.pipeline._score import ScoreOptions
from tracegrade.pipeline.follow import Follower, follower_context, make_follower
from tracegrade.pipeline.follow_workers import run_follower
from tracegrade.pipeline.gate import GateOptions, OutputOptions
from tracegrade.pipeline.signals import open_signals
from tracegrade.report.evaluation_signals import RunContext
from tracegrade.scoring import build_scorers, config_for
from tracegrade.store.traces import Store

_DEAD = "http://127.0.0.1:1"
DATASET = Dataset(
    name="shop",
    cases=[Case(id="shoes", input="find shoes", expected_tools=["search"])],
)


def _follower(db: str, endpoint: str, window_s: float | None, workers: int = 1) -> Follower:
    config = config_for(load_config(None), DATASET)
    follower = Follower(
        db,
        DATASET,
        build_scorers(config),
        config,
        quiet_s=0.0,
        since=0.0,
        window_s=window_s,
        workers=workers,
    )
    follower.signals = open_signals(endpoint, follower_context(follower), periodic=True)
    return follower


def _follow(follower: Follower, until: Callable[[list[str]], bool], timeout_s: float) -> list[str]:
    """Run the follower in a thread until ``until(lines)`` (or the timeout); its lines."""
    lines: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=run_follower,
        args=(
            follower,
            stop,
            lambda result, updated: lines.append(result.trace_id or ""),
            lines.append,
        ),
        kwargs={"poll_s": 0.02},
    )
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not until(lines) and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join()
    return lines


@pytest.mark.parametrize("workers", [1, 2])
def test_followed_results_and_closed_windows_are_exported(tmp_path, monkeypatch, workers):
    """With --workers 2 the results scored in the scoring processes are exported by the
    follower's process, like its windows."""
    db = str(tmp_path / "follow.db")
    requests = [
        trace_request(lambda t: agent_turn(t, "find shoes", "Found shoes for $40")),
        trace_request(lambda t: agent_turn(t, "what time is it", "It is noon")),
    ]
    with Store(db) as store:
        store.write(requests)
    trace_ids = [r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in requests]
    with running(tmp_path / "received.db") as receiver, MetricsSink() as sink:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", sink.endpoint("http"))
        follower = _follower(db, receiver.http_endpoint, window_s=1.0, workers=workers)
        lines = _follow(follower, lambda lines: any(x.startswith("WINDOW") for x in lines), 10)
        points = sink.points()
    assert [x for x in lines if "export-otlp" in x] == []
    received = evaluation_records(tmp_path / "received.db", trace_ids)
    assert set(received) == {trace_ids[0]}  # the other trace matched no case
    records = received[trace_ids[0]]
    assert "overall" in {r.attributes["gen_ai.evaluation.name"] for r in records}
    assert len({r.span_id for r in records}) == 1 and records[0].span_id
    assert {r.attributes.get("tracegrade.case_id") for r in records} == {"shoes"}
    assert all("tracegrade.run_id" not in r.attributes for r in records)  # no stored run
    identity = follower.identity
    for record in records:  # who scored it: the evaluator, and the result's own identity
        assert record.attributes["tracegrade.evaluator.id"] == identity.id
        assert record.attributes["tracegrade.dataset.fingerprint"] == identity.dataset_fingerprint
        assert record.attributes["tracegrade.result.version"] == 1
        name = record.attributes["gen_ai.evaluation.name"]
        assert record.attributes["gen_ai.evaluation.evaluator.id"] == f"tracegrade/{name}"
        assert record.attributes["gen_ai.evaluation.evaluator.type"] == "deterministic"
    assert len({r.attributes["tracegrade.result.id"] for r in records}) == 1
    [(attributes, cases, _)] = points["tracegrade.evaluation.cases"][:1]
    assert cases == 1
    start = attributes.pop("tracegrade.window.start")
    assert start.endswith("+00:00")
    assert attributes == {
        "tracegrade.service": "test-agent",
        "tracegrade.window": "1s",
        "tracegrade.dataset": "shop",
        "resource": "tracegrade",
    }
    assert {"tracegrade.evaluation.pass_rate", "tracegrade.trace.duration.p95"} <= set(points)


def test_a_dead_endpoint_is_reported_once_while_following(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "0.5")  # the SDK gives up a batch sooner
    db = str(tmp_path / "follow.db")
    with Store(db) as store:
        store.write([trace_request(lambda t: agent_turn(t, "find shoes", "Found"))])
    port = free_port()  # nothing listens on it
    follower = _follower(db, f"http://127.0.0.1:{port}", window_s=None)
    done = threading.Event()

    def more() -> None:  # traces keep arriving after the first failure
        with Store(db) as store:
            for _ in range(3):
                time.sleep(0.4)
                store.write([trace_request(lambda t: agent_turn(t, "find shoes", "Found"))])
        done.set()

    threading.Thread(target=more).start()

    def finished(lines: list[str]) -> bool:
        scored = sum(1 for x in lines if len(x) == 32)
        return done.is_set() and scored == 4 and any("export-otlp" in x for x in lines)

    lines = _follow(follower, finished, 15)
    warnings = [x for x in lines if "export-otlp" in x]
    assert len(warnings) == 1 and warnings[0].startswith("warning: --export-otlp:"), lines
    assert sum(1 for x in lines if len(x) == 32) == 4  # every trace still scored


def test_score_follow_s_options_open_the_export_with_the_dataset_and_no_run_id(tmp_path):
    output = OutputOptions(export_otlp=_DEAD)
    options = ScoreOptions(db=str(tmp_path / "f.db"), dataset=DATASET, output=output)
    follower, _ = make_follower(options, quiet_s=0.0, window=None, lease_s=60)
    assert follower.signals.otlp is not None
    context = RunContext(run_id=None, dataset="shop", evaluator=follower.identity)
    assert follower.signals.context == context
    assert follower.identity.dataset == "shop"
    follower.signals.close()


def test_a_follower_without_an_endpoint_exports_nothing(tmp_path):
    follower = _follower(str(tmp_path / "f.db"), "", None)
    assert follower.signals.otlp is None and follower.signals.close() == []


def test_a_follower_and_a_scoring_run_with_the_same_options_are_one_evaluator(tmp_path):
    from tracegrade.pipeline._score import plan_run

    options = ScoreOptions(
        db=str(tmp_path / "f.db"), dataset=DATASET, gate=GateOptions(threshold=0.8)
    )
    follower, _ = make_follower(options, quiet_s=0.0, window=None, lease_s=60)
    run = plan_run(options).evaluator
    assert run is not None and follower.identity.id == run.id
    other, _ = make_follower(
        ScoreOptions(db=str(tmp_path / "f.db"), dataset=DATASET, gate=GateOptions(threshold=0.9)),
        quiet_s=0.0,
        window=None,
        lease_s=60,
    )
    assert other.identity.id != follower.identity.id  # another threshold, another evaluator
