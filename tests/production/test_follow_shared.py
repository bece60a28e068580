"""``score --follow`` on a shared store: sampling by trace id (issue 10 item 8), claims that
never score a trace twice or lose one, windowed aggregates and their alerts."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from click.testing import CliRunner

from tests.support.postgres import fresh_database
from tests.support.sdk import agent_turn, trace_request
from tracegrade.cli import cli
from tracegrade.cli import follow as follow_cli
from tracegrade.config import load_config
from tracegrade.pipeline.follow import Follower
from tracegrade.report.windows import aggregate, breaches, parse_window
from tracegrade.sampling import sampled
from tracegrade.scoring import build_scorers
from tracegrade.store import follow as shared
from tracegrade.store.traces import Store


def _follower(db, **options):
    config = load_config(None)
    return Follower(db, None, build_scorers(config), config, quiet_s=0.0, since=0.0, **options)


def _turns(count, service="shop", answer="Found shoes for $40"):
    return [
        trace_request(
            lambda t, i=i: agent_turn(t, f"find shoes {i}", answer), {"service.name": service}
        )
        for i in range(count)
    ]


def _ids(requests):
    return {r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in requests}


def test_follow_samples_by_trace_id(tmp_path):
    db = str(tmp_path / "s.db")
    requests = _turns(24)
    follower = _follower(db, sample=0.5)
    with Store(db) as store:
        store.write(requests)
        scored = {r.trace_id for r, _ in follower.poll(store)}
    expected = {t for t in _ids(requests) if sampled(t, 0.5)}
    assert scored == expected and 0 < len(scored) < 24
    # the same choice in another process on a rerun: a second follower on a fresh store
    db2 = str(tmp_path / "s2.db")
    with Store(db2) as store:
        store.write(requests)
        assert {r.trace_id for r, _ in _follower(db2, sample=0.5).poll(store)} == expected


def test_score_follow_passes_sample_window_and_webhook(monkeypatch, tmp_path):
    seen = {}

    def fake(follower):
        seen["follower"] = follower
        return 0

    monkeypatch.setattr(follow_cli, "follow_until_stopped", fake)
    args = ["score", "--follow", "--db", str(tmp_path / "x.db"), "--sample", "0.5"]
    CliRunner().invoke(cli, [*args, "--window", "5m", "--alert-webhook", "http://127.0.0.1:9/"])
    follower = seen["follower"]
    assert (follower.sample, follower.window_s) == (0.5, 300.0)
    assert follower.alert_webhook == "http://127.0.0.1:9/"


def test_two_followers_share_traces_and_a_dead_workers_claims_expire(tmp_path):
    db = str(tmp_path / "c.db")
    requests = _turns(30)
    with Store(db) as store:
        store.write(requests)
        # a worker that claimed 5 traces and died before completing them
        dead = shared.claim(store.db, "dead-worker", 5, shared.Settling(0.0), lease_s=0.5)
        assert len(dead) == 5
        first, second = _follower(db, batch=7, worker="a"), _follower(db, batch=7, worker="b")
        results: list[str] = []
        deadline = time.time() + 30
        while len(results) < 30 and time.time() < deadline:
            for follower in (first, second):
                results += [r.trace_id for r, _ in follower.poll(store)]
            time.sleep(0.05)
        counts = shared.result_counts(store.db)
        late = shared.complete(store.db, "dead-worker", dead[0], None)  # comes back too late
    assert sorted(results) == sorted(_ids(requests))  # every trace once, none twice
    assert counts == {t: 1 for t in _ids(requests)}
    assert not late


def test_a_lost_claim_cannot_complete(tmp_path):
    db = str(tmp_path / "l.db")
    with Store(db) as store:
        store.write(_turns(1))
        (slow,) = shared.claim(store.db, "slow", 1, shared.Settling(0.0), lease_s=0.01)
        time.sleep(0.05)
        (fast,) = shared.claim(store.db, "fast", 1, shared.Settling(0.0), lease_s=60)
        assert fast.trace_id == slow.trace_id
        row = shared.ResultRow("shop", True, 1.0, False, 1, 0, 5.0, None, {})
        assert shared.complete(store.db, "fast", fast, row)
        assert not shared.complete(store.db, "slow", slow, row)
        assert shared.result_counts(store.db) == {fast.trace_id: 1}


class _Hook(BaseHTTPRequestHandler):
    received: list[dict] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers["content-length"]))
        _Hook.received.append(json.loads(body))
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_windows_are_stored_printed_and_alert_the_webhook(tmp_path):
    server = HTTPServer(("127.0.0.1", 0), _Hook)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Hook.received.clear()
    db = str(tmp_path / "w.db")
    bad = _turns(6, service="shop", answer="The shoes cost $999.99")  # invented price
    good = _turns(5, service="search", answer="Found shoes")
    follower = _follower(
        db, window_s=60.0, alert_webhook=f"http://127.0.0.1:{server.server_port}/hook"
    )
    with Store(db) as store:
        store.write(bad + good)
        assert len(follower.poll(store)) == 11
        now = time.time()
        assert follower.close_windows(store, now) == []  # opens the current window
        lines = follower.close_windows(store, now + 60)
        stored = shared.windows(store.db, 60.0)
    server.shutdown()
    assert [service for _, service, _ in stored] == ["search", "shop"]
    shop = dict((s, a) for _, s, a in stored)["shop"]
    assert shop["traces"] == 6 and shop["failure_rate"] == 1.0
    assert shop["hallucination_rate"] == 1.0
    assert any(line.startswith("WINDOW") and "service=shop traces=6" in line for line in lines)
    assert any(line.startswith("ALERT service=shop") for line in lines)
    assert not any(line.startswith("ALERT service=search") for line in lines)
    (alert,) = _Hook.received
    assert alert["alert"]["service"] == "shop"
    assert "failure_rate 1 &gt; 0.2" in alert["text"]  # Slack shows "&gt;" as ">"


def test_window_rules():
    assert parse_window("5m") == 300 and parse_window("30s") == 30
    with pytest.raises(Exception, match="--window"):
        parse_window("five")
    rows = [shared.ResultRow("a", False, 0.0, True, 4, 1, 100.0 * i, 0.01, {}) for i in range(5)]
    (agg,) = aggregate(rows).values()
    assert agg["tool_error_rate"] == 0.25 and agg["cost_per_trace_usd"] == pytest.approx(0.01)
    assert breaches(agg, {"failure_rate": 0.5, "p95_latency_ms": None}, 5) == [
        "failure_rate 1 > 0.5"
    ]
    assert breaches(agg, {"failure_rate": 0.5}, 6) == []  # too few traces


def test_postgres_followers_claim_with_skip_locked():
    with fresh_database() as url:
        requests = _turns(20)
        with Store(url) as store:
            store.write(requests)
            workers = [_follower(url, batch=3, worker=f"w{i}") for i in range(2)]
            results: list[str] = []
            deadline = time.time() + 30
            while len(results) < 20 and time.time() < deadline:
                for worker in workers:
                    results += [r.trace_id for r, _ in worker.poll(store)]
            assert sorted(results) == sorted(_ids(requests))
            assert set(shared.result_counts(store.db).values()) == {1}


def test_a_stopping_follower_prints_its_open_window_as_partial_without_storing_it(tmp_path):
    db = str(tmp_path / "p.db")
    follower = _follower(db, window_s=3600.0)
    with Store(db) as store:
        store.write(_turns(3, service="shop", answer="The shoes cost $999.99"))
    stop = threading.Event()
    stop.set()  # one pass of the loop is not run: what was scored is only in the open window
    with Store(db) as store:
        assert len(follower.poll(store)) == 3
    printed: list[str] = []
    follower.run(stop, lambda *_: None, printed.append, poll_s=0.0)
    (window,) = [text for text in printed if text.startswith("WINDOW")]
    assert "(partial, until " in window and "service=shop traces=3" in window
    assert "failure_rate=1.000" in window
    assert not any(text.startswith("ALERT") for text in printed)
    with Store(db) as store:
        assert shared.windows(store.db, 3600.0) == []
