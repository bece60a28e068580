"""``score --follow``: traces are scored once settled, never partially, again when updated."""

from __future__ import annotations

import threading
import time

from tests.support.sdk import agent_turn, trace_request
from tracegrade.cli.follow import line
from tracegrade.config import load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.pipeline.follow import Follower
from tracegrade.scoring import build_scorers, config_for
from tracegrade.store.traces import Store


def _follower(db, dataset=None, since=0.0):
    config = config_for(load_config(None), dataset)
    return Follower(db, dataset, build_scorers(config), config, quiet_s=0.0, since=since)


def _split(request):
    """(the request without its root span, a request with only the root span)."""
    root = type(request)()
    root.CopyFrom(request)
    for scoped in request.resource_spans[0].scope_spans:
        keep = [s for s in scoped.spans if s.parent_span_id]
        del scoped.spans[:]
        scoped.spans.extend(keep)
    for scoped in root.resource_spans[0].scope_spans:
        keep = [s for s in scoped.spans if not s.parent_span_id]
        del scoped.spans[:]
        scoped.spans.extend(keep)
    return request, root


def test_a_trace_is_scored_only_once_its_root_span_arrived(tmp_path):
    db = str(tmp_path / "f.db")
    children, root = _split(
        trace_request(lambda t: agent_turn(t, "find shoes", "Found shoes for $40"))
    )
    follower = _follower(db)
    with Store(db) as store:
        store.write([children])
        assert follower.poll(store) == []
        store.write([root])
        ((result, updated),) = follower.poll(store)
        assert (
            not updated
            and result.trace_id == root.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
        )
        assert follower.poll(store) == []


def test_a_settled_trace_that_gets_more_spans_is_scored_again(tmp_path):
    db = str(tmp_path / "f.db")
    request = trace_request(agent_turn)
    follower = _follower(db)
    with Store(db) as store:
        store.write([request])
        assert [u for _, u in follower.poll(store)] == [False]
        time.sleep(0.01)
        late = type(request)()
        late.CopyFrom(request)
        late.resource_spans[0].scope_spans[0].spans[0].span_id = b"\x01" * 8
        store.write([late])
        ((result, updated),) = follower.poll(store)
        assert updated and "(updated)" in line(result, updated)


def test_follow_matches_cases_and_prints_one_line_per_trace(tmp_path):
    db = str(tmp_path / "f.db")
    dataset = Dataset(
        cases=[
            Case(id="shoes", input="find shoes", expected_tools=["search"]),
            Case(id="other", input="something else", expected_tools=["search"]),
        ]
    )
    follower = _follower(db, dataset)
    lines: list[str] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=follower.run,
        args=(
            stop,
            lambda result, updated: lines.append(line(result, updated)),
            lines.append,
            0.02,
        ),
    )
    thread.start()
    with Store(db) as store:
        store.write([trace_request(lambda t: agent_turn(t, "find shoes", "Found shoes"))])
    deadline = time.time() + 10
    while not lines and time.time() < deadline:
        time.sleep(0.02)
    stop.set()
    thread.join()
    assert len(lines) == 1 and "case=shoes" in lines[0]
    assert lines[0].startswith(("PASS", "FAIL"))


def test_score_follow_runs_until_sigterm_and_exits_by_the_results(tmp_path):
    """The command end to end: a subprocess follows the store, a trace arrives, SIGTERM stops it."""
    import os
    import signal
    import subprocess
    import sys

    db = str(tmp_path / "cmd.db")
    with Store(db):
        pass
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from tracegrade.cli import main; main()",
            "score",
            "--follow",
            "--db",
            db,
            "--quiet-s",
            "0",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.getcwd()},
    )
    assert "scoring traces as they settle" in process.stderr.readline()  # started, polling
    with Store(db) as store:
        store.write([trace_request(lambda t: agent_turn(t, "find shoes", "Found shoes"))])
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)
    assert out.count("\n") == 1 and out.startswith(("PASS", "FAIL")), (out, err)
    assert "1 traces scored" in err
    assert process.returncode == (0 if out.startswith("PASS") else 1)


def test_follow_help_says_what_a_worker_starts_with():
    """``score --follow --help`` tells that a worker started without --since scores what is
    already stored (its behaviour: tests/production/test_exactly_once.py, restarted workers)."""
    from click.testing import CliRunner

    from tracegrade.cli.score import command

    shown = CliRunner().invoke(command, ["--follow", "--help"], terminal_width=200).output
    flat = " ".join(shown.split())
    assert "A worker starts with every stored trace not yet scored within its horizon" in flat
    assert "(--since, else the store's retention, else all)" in flat
    assert "unscored traces received since; default the store's retention, else all" in flat
