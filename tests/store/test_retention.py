"""Retention (``tracegrade prune``, ``collect --retention``) on SQLite and the real PostgreSQL
server: on a store of 30 days of traces, exactly the old days go (spans, log records, traces,
queued claims, follow results, windows), the rest reads as before, and the database file
(SQLite) or the span and log tables (PostgreSQL) shrink accordingly."""

from __future__ import annotations

import os
import time
import types
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.support.receiver import hand_log, hand_span, logs_request, spans_request
from tracegrade.cli import cli
from tracegrade.pipeline.retention import PruneOptions, prune
from tracegrade.store import follow as shared
from tracegrade.store import partitions, retention
from tracegrade.store import traces as traces_module
from tracegrade.store.traces import Store

DAY_S = 86_400
DAYS = 30
PER_DAY = 12
NOW_S = time.time()  # the last of 30 days of data: the day a day's data is written at is its age


def _day_requests(day: int) -> tuple[list, list, list[str]]:
    """One day's traces (a root span carrying 3 KB of random text) and their log records."""
    spans, logs, ids = [], [], []
    for n in range(PER_DAY):
        trace_id = bytes.fromhex(f"{day:04x}{n:04x}") + os.urandom(12)
        span = hand_span("invoke_agent shop", trace_id, os.urandom(8), start=int(NOW_S * 1e9))
        span.attributes.add(key="gen_ai.operation.name").value.string_value = "invoke_agent"
        span.attributes.add(key="payload").value.string_value = os.urandom(1536).hex()
        spans.append(span)
        logs.append(hand_log(os.urandom(512).hex(), trace_id=trace_id, span_id=span.span_id))
        ids.append(trace_id.hex())
    return [spans_request(*spans)], [logs_request(*logs)], ids


def _fill(location: str, monkeypatch: pytest.MonkeyPatch) -> dict[int, list[str]]:
    """30 days of traces, each day written at its own time (the receiver's clock)."""
    by_day = {}
    with Store(location) as store:
        for age in range(DAYS - 1, -1, -1):
            at = NOW_S - age * DAY_S
            monkeypatch.setattr(traces_module, "time", types.SimpleNamespace(time=lambda at=at: at))
            spans, logs, by_day[age] = _day_requests(age)
            store.write(spans, logs)
            with store.db:  # a follow result and a window for the day, at its time
                _result(store, by_day[age][0], at)
                shared.save_window(store.db, at, 300.0, "shop", {"traces": 1})
    monkeypatch.undo()
    return by_day


def _result(store: Store, trace_id: str, at: float) -> None:
    store.db.execute(
        "INSERT INTO follow_results (trace_id, version, evaluator, scored_at, worker, service,"
        " passed, score, hallucinated, tool_calls, failed_tool_calls, result)"
        " VALUES (?, 1, 'ev-test', ?, 'w', 'shop', 1, 1.0, 0, 0, 0, '{}')",
        (trace_id, at),
    )


def _sizes(location: str) -> int:
    """Bytes of the span and log tables' partitions (PostgreSQL), of the database file less
    an empty store's (SQLite: 46 pages of tables and indexes)."""
    with Store(location) as store:
        if store.db.postgres:
            return sum(partitions.size_bytes(store.db, t) for t in partitions.PARTITIONED)
    return _file_bytes(location) - _file_bytes(str(Path(location).with_name("empty.db")))


def _file_bytes(location: str) -> int:
    with Store(location) as store:
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
        return Path(location).stat().st_size


def _index(location: str, trace_ids: list[str]) -> None:
    """Rows of the dashboard's trace search for ``trace_ids`` (as store/search.py writes)."""
    with Store(location) as store, store.db:
        store.db.executemany(
            "INSERT INTO trace_index VALUES (?, 3, 0, 'shop', NULL, 'hi', 1, 0, 'hi', 0)",
            [(t,) for t in trace_ids],
        )
        store.db.executemany(
            "INSERT INTO trace_tools VALUES (?, 'search', 0, 1, 0, '[]')",
            [(t,) for t in trace_ids],
        )


def test_prune_removes_exactly_the_old_days_and_the_store_shrinks(store_location, monkeypatch):
    by_day = _fill(store_location, monkeypatch)
    kept = {t for age, ids in by_day.items() if age <= 7 for t in ids}  # 7 days and today
    _index(store_location, [t for ids in by_day.values() for t in ids])
    before = _sizes(store_location)
    options = PruneOptions("7d", db=store_location)
    would = prune(PruneOptions("7d", db=store_location, dry_run=True), now_s=NOW_S)
    done = prune(options, now_s=NOW_S)
    assert would.rows == done.rows and would.days == done.days
    old = (DAYS - 8) * PER_DAY
    assert done.rows["span_chunks"] == old  # one chunk a trace
    assert done.rows["log_records"] == old and done.rows["traces"] == old
    assert done.rows["follow_results"] == DAYS - 8 and done.rows["score_windows"] == DAYS - 8
    assert done.rows["score_queue"] == old  # claims of traces that are gone
    if store_location.startswith("postgresql"):
        last = partitions.date_of(partitions.day_of(done.cutoff_s) - 1)
        assert len(done.days) == DAYS - 8 and done.days[-1] == last
    after = _sizes(store_location)
    with Store(store_location) as store:
        assert set(store.trace_ids()) == kept
        assert all(t.spans and t.logs for t in store.load(sorted(kept)))
        assert shared.pending(store.db) == len(kept)
        for table in ("trace_index", "trace_tools"):  # the trace search's rows went with them
            rows = store.db.execute(f"SELECT trace_id FROM {table}").fetchall()
            assert {r[0] for r in rows} == kept and len(rows) == len(kept)
        assert prune(options, now_s=NOW_S).rows == dict.fromkeys(done.rows, 0)  # nothing left
    assert after < before * (8 / DAYS + 0.05), (before, after)


def test_prune_command_and_a_store_without_auto_vacuum(tmp_path, monkeypatch):
    """A SQLite store made before auto-vacuum (the default then) is converted by the first
    prune's VACUUM, and shrinks all the same."""
    db = str(tmp_path / "old.db")
    import sqlite3

    sqlite3.connect(db).execute("PRAGMA auto_vacuum=NONE").connection.execute(
        "CREATE TABLE keep (x)"
    ).connection.commit()  # created before tracegrade set auto-vacuum
    by_day = _fill(db, monkeypatch)
    import tracegrade.pipeline.retention as retention

    # the command's clock is the data's: a run crossing midnight UTC would otherwise cut a day
    # later than the days the data was written for
    monkeypatch.setattr(retention.time, "time", lambda: NOW_S)
    with Store(db) as store:
        assert store.db.execute("PRAGMA auto_vacuum").fetchone()[0] == 0
    before = _sizes(db)
    ran = CliRunner().invoke(cli, ["prune", "--older-than", "7d", "--db", db, "--dry-run"])
    assert ran.exit_code == 0 and "would remove" in ran.output
    with Store(db) as store:
        assert len(store.trace_ids()) == DAYS * PER_DAY
    ran = CliRunner().invoke(cli, ["prune", "--older-than", "2w", "--db", db])
    assert ran.exit_code == 0 and "removed" in ran.output, ran.output
    with Store(db) as store:
        assert store.db.execute("PRAGMA auto_vacuum").fetchone()[0] == 2
        assert len(store.trace_ids()) == sum(len(by_day[age]) for age in by_day if age <= 14)
    assert _sizes(db) < before * (15 / DAYS + 0.05)
    bad = CliRunner().invoke(cli, ["prune", "--older-than", "soon", "--db", db])
    assert bad.exit_code == 2 and "--older-than 'soon'" in bad.output


def test_prune_keeps_runs_unless_asked_and_never_a_baseline(store_location):
    from tracegrade.store.runs import list_runs, save_run, set_baseline

    with Store(store_location) as store:
        for run_id in ("r1", "r2"):
            run = {"run_id": run_id, "dataset": {"name": "d"}, "passed": True}
            save_run(store, {"run": run, "summary": {"score": 1.0}, "cases": []})
        set_baseline(store, "r1")
        with store.db:
            store.db.execute("UPDATE runs SET created_at = 0")
    assert "runs" not in prune(PruneOptions("1d", db=store_location)).rows
    assert prune(PruneOptions("1d", db=store_location, runs=True)).rows["runs"] == 1
    with Store(store_location) as store:
        assert [run["run_id"] for run in list_runs(store)] == ["r1"]


def test_the_receivers_retention_is_the_followers_horizon(store_location):
    from tracegrade.pipeline.follow import Follower
    from tracegrade.pipeline.retention import retained

    with retained(store_location, "30d", print) as seconds, Store(store_location) as store:
        assert seconds == 30 * DAY_S
        assert retention.retention_s(store.db) == seconds
        follower = Follower(store_location, None, [], None, quiet_s=2.0)  # type: ignore[arg-type]
        horizon = follower.settling(store).since_s
        assert horizon is not None and abs(horizon - (store.db.now() - seconds)) < 60
        follower.since = 5.0  # --since narrows it
        assert follower.settling(store).since_s == 5.0


def test_prune_removes_orphaned_feedback_and_keeps_labels(store_location):
    """Issue 40 item 8: feedback about traces never stored (made-up ids) or pruned stayed
    forever. Old orphaned feedback goes; feedback about a kept trace, recent feedback that may
    precede its trace, and the labels people made stay."""
    from tracegrade.store import feedback
    from tracegrade.store.review import Label, add_label, labels

    old_s, new_s = NOW_S - 10 * DAY_S, NOW_S
    with Store(location := store_location) as store:
        store.add_traces(spans_request(hand_span("kept", b"\x01" * 16, b"\x02" * 8)))
        store.add_traces(spans_request(hand_span("gone", b"\x03" * 16, b"\x04" * 8)))
        with store.db:
            store.db.execute(
                "UPDATE traces SET last_received_at = ? WHERE trace_id = ?", (old_s, "03" * 16)
            )

        def about(trace_id: str | None, n: int) -> tuple[bytes, feedback.Feedback]:
            found = feedback.Feedback(trace_id, None, "thumbs", 1.0, None, None, "api", n)
            return n.to_bytes(8, "big"), found

        with store.db:
            feedback.insert(store.db, [about("01" * 16, 1)], old_s)  # its trace is kept
            feedback.insert(store.db, [about("03" * 16, 2)], old_s)  # its trace is pruned
            made_up = [about(f"{n:032x}", 100 + n) for n in range(2_000)]
            feedback.insert(store.db, made_up, old_s)  # traces never stored
            feedback.insert(store.db, [about(None, 3)], old_s)  # a response id only
            feedback.insert(store.db, [about("05" * 16, 4)], new_s)  # may precede its trace
        add_label(store.db, Label("c1", ("03" * 16,), "ann", "fail", created_at=old_s))
    assert prune(PruneOptions("7d", db=location, dry_run=True)).rows["feedback"] == 2_002
    assert prune(PruneOptions("7d", db=location)).rows["feedback"] == 2_002
    with Store(location) as store:
        left = store.db.execute("SELECT trace_id FROM feedback ORDER BY trace_id").fetchall()
        assert [row[0] for row in left] == ["01" * 16, "05" * 16]
        assert [label.conversation for label in labels(store.db)] == ["c1"]
