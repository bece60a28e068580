"""Eval-run traffic is never production (issue 36), on SQLite and the real PostgreSQL server:
``tracegrade run`` drives the example shop agent as a command whose spans go through the same
``tracegrade collect`` receiver as production traffic, into the store a ``score --follow``
worker follows. The run's case spans (and the ``tracegrade.run_id`` the runner gives the
agent's resource) mark its traces: the follower scores every production trace and none of
the run's, and counts none of them in its windows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests.production.test_scale_out import _send
from tests.support.collect_process import CollectProcess
from tracegrade.config import load_config
from tracegrade.pipeline.follow import Follower
from tracegrade.scoring import build_scorers
from tracegrade.store import follow as shared
from tracegrade.store.results import window_results
from tracegrade.store.traces import Store

ROOT = Path(__file__).parents[2]
GOLDEN = ROOT / "datasets" / "ecommerce" / "golden.yaml"


def _run(db: str, receiver: str, out: Path) -> dict:
    """``tracegrade run`` of the golden dataset's smoke cases against the shop agent as a
    command that exports to ``receiver`` (the production receiver), the run stored in
    ``db``; its document."""
    from examples.ecommerce.demo import MODEL
    from examples.ecommerce.replay import ReplayServer

    exporting = (
        f"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT={receiver}/v1/traces"
        f" OTEL_EXPORTER_OTLP_LOGS_ENDPOINT={receiver}/v1/logs"
    )
    agent = f"{exporting} {sys.executable} -m examples.ecommerce --messages"
    server = ReplayServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "OTEL_"))}
        env |= {
            "OPENAI_API_KEY": "none",
            "OPENAI_MODEL": MODEL,
            "OPENAI_BASE_URL": server.base_url(),
            "PYTHONPATH": str(ROOT),
        }
        done = subprocess.run(
            [sys.executable, "-m", "tracegrade", "run", str(GOLDEN), "--no-judge", "--smoke"]
            + ["--db", db, "--agent-cmd", agent, "--input-format", "messages"]
            + ["--settle-quiet", "1", "--json", str(out)],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    document: dict = json.loads(out.read_text())
    return document


def test_eval_run_traffic_through_the_production_receiver_is_never_scored(store_location, tmp_path):
    with Store(store_location):
        pass  # migrated once before the processes start
    config = load_config(None)
    follower = Follower(store_location, None, build_scorers(config), config, quiet_s=0.5, since=0.0)
    scored: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=follower.run,
        args=(stop, lambda result, _: scored.append(result.trace_id), lambda _: None, 0.1),
    )
    with CollectProcess(store_location) as receiver:
        thread.start()
        try:
            before = _send(receiver.http_endpoint, 5, 0)
            document = _run(store_location, receiver.http_endpoint, tmp_path / "run.json")
            after = _send(receiver.http_endpoint, 5, 100)
            deadline = time.monotonic() + 120
            with Store(store_location) as store:
                while time.monotonic() < deadline and shared.pending(store.db):
                    time.sleep(0.2)
                assert shared.pending(store.db) == 0
        finally:
            stop.set()
            thread.join(60)
    runs = {case["trace_id"] for case in document["cases"] if case["trace_id"]}
    assert runs and document["summary"]["passed"] == len(document["cases"])
    assert sorted(scored) == sorted(before | after)  # every production trace, no run's
    with Store(store_location) as store:
        stored = shared.result_counts(store.db)
        assert stored == {t: 1 for t in before | after}
        eval_rows = store.db.execute(
            "SELECT COUNT(*) FROM traces WHERE run_id = ?", (document["run"]["run_id"],)
        ).fetchone()[0]
        counted = {r.trace_id for r in window_results(store.db, 0, time.time() + 60)}
    assert eval_rows >= len(runs)  # the run's traces are in the store, marked
    assert counted == before | after  # windows count production only
    assert follower.excluded >= len(runs)
