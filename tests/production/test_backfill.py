"""``tracegrade backfill`` (issue 36), on SQLite and the real PostgreSQL server: traces scored
by dataset v1 are in the store; v2 ships, two live ``score --follow`` workers run with it
while new traffic arrives, and ``tracegrade backfill --since 1d`` with v2 scores the stored
traces. It is killed (SIGKILL) while it holds a batch, then started again as two workers: in
the end every trace, old and new, has exactly one result by the v2 evaluator (the live
followers' for the new traffic, the backfill's for the rest), v1's results are untouched, and
the backfill's results do not count in windows."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import yaml

from tests.production import slow_scorer
from tests.support.collect_process import command
from tests.support.sdk import agent_turn, trace_request
from tracegrade.config import load_config
from tracegrade.dataset import load_dataset
from tracegrade.pipeline.follow import Follower
from tracegrade.scoring import build_scorers, config_for
from tracegrade.store import follow as shared
from tracegrade.store.results import evaluators, window_results
from tracegrade.store.traces import Store

ROOT = Path(__file__).parents[2]
SLOW = "tests.production.slow_scorer:slow"
OLD, NEW = 40, 12


def _dataset(path: Path, version: int) -> str:
    """A dataset of one case per question; v2 adds a forbidden phrase to each case."""
    cases = [
        {"id": f"q{i}", "input": f"find shoes {i}", "expected_tools": ["search"]}
        | ({"must_not_contain": ["out of stock"]} if version == 2 else {})
        for i in range(OLD + NEW)
    ]
    path.write_text(yaml.safe_dump({"name": "shop", "cases": cases}))
    return str(path)


def _turns(numbers: range) -> list[Any]:
    return [
        trace_request(lambda t, i=i: agent_turn(t, f"find shoes {i}", "Found shoes"))
        for i in numbers
    ]


def _ids(requests: list[Any]) -> set[str]:
    return {r.resource_spans[0].scope_spans[0].spans[0].trace_id.hex() for r in requests}


def _tracegrade(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*command(), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def _stop(process: subprocess.Popen[str]) -> tuple[str, str]:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    return process.communicate(timeout=120)


def test_backfill_with_a_new_dataset_version_beside_two_live_followers(store_location, tmp_path):
    v1, v2 = _dataset(tmp_path / "v1.yaml", 1), _dataset(tmp_path / "v2.yaml", 2)
    old = _turns(range(OLD))
    with Store(store_location) as store:  # scored as the traces came, by v1
        store.write(old)
        dataset = load_dataset(v1)
        config = config_for(load_config(None), dataset)
        first = Follower(store_location, dataset, build_scorers(config, [SLOW]), config, 0.0)
        while first.poll(store):
            pass
        assert shared.result_counts(store.db) == {t: 1 for t in _ids(old)}
    env = {slow_scorer.DELAY_ENV: "0.05", slow_scorer.LOG_ENV: str(tmp_path / "follow-calls")}
    doomed_env = {**env, slow_scorer.LOG_ENV: str(tmp_path / "calls")}
    scoring = ["--db", store_location, "--dataset", v2, "--scorer", SLOW]
    follow = ["score", "--follow", *scoring, "--quiet-s", "0", "--since", "1d"]
    followers = [_tracegrade(*follow, env=env) for _ in range(2)]
    backfill = ["backfill", *scoring, "--since", "1d", "--max-rate", "40", "--lease-s", "2"]
    new = _turns(range(OLD, OLD + NEW))
    arriving = threading.Thread(target=_arrive, args=(store_location, new))
    try:
        doomed = _tracegrade(*backfill, env=doomed_env)
        arriving.start()
        deadline = time.monotonic() + 60
        while not slow_scorer.calls(tmp_path / "calls") and time.monotonic() < deadline:
            time.sleep(0.02)  # it claimed a batch and is scoring it
        os.kill(doomed.pid, signal.SIGKILL)
        doomed.wait(10)
        with Store(store_location) as store:
            held = store.db.execute(
                "SELECT COUNT(*) FROM backfill_claims WHERE done = 0 AND claimed_by IS NOT NULL"
            ).fetchone()[0]
        assert held > 0  # killed holding claims
        again = [_tracegrade(*backfill, env=env) for _ in range(2)]  # started again, twice
        outputs = [process.communicate(timeout=300) for process in again]
        arriving.join(60)
        assert all(p.returncode == 0 for p in again), [err[-2000:] for _, err in outputs]
        assert all("tracegrade backfill: done:" in err for _, err in outputs)
        _drained(store_location)
    finally:
        for process in followers:
            _stop(process)
    with Store(store_location) as store:
        ids = dict.fromkeys(evaluators(store.db))
        [v1_id, v2_id] = ids
        assert shared.result_counts(store.db, v1_id) == {t: 1 for t in _ids(old)}  # untouched
        assert shared.result_counts(store.db, v2_id) == {t: 1 for t in _ids(old + new)}
        live = dict(
            store.db.execute(
                "SELECT trace_id, live FROM follow_results WHERE evaluator = ?", (v2_id,)
            )
        )
        counted = {r.trace_id for r in window_results(store.db, 0, time.time() + 60)}
    assert {t for t, flag in live.items() if flag} == _ids(new)  # the followers' new traffic
    assert {t for t, flag in live.items() if not flag} == _ids(old)  # the backfill's
    assert counted == _ids(old) | _ids(new)  # each once, live results only
    printed = [line.split()[2] for out, _ in outputs for line in out.splitlines()]
    assert len(printed) == len(set(printed)) and set(printed) <= _ids(old)


def _arrive(db: str, requests: list[Any]) -> None:
    """New traffic in four bursts while the backfill runs."""
    with Store(db) as store:
        for start in range(0, len(requests), len(requests) // 4):
            store.write(requests[start : start + len(requests) // 4])
            time.sleep(0.3)


def _drained(db: str, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    with Store(db) as store:
        while shared.pending(store.db) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert shared.pending(store.db) == 0
