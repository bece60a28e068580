"""Late spans, to the end (issue 36), on SQLite and the real PostgreSQL server: a trace scored,
counted in a window that then closed, gets a late span that changes its verdict. It is scored
again (a second version, marked updated); the closed window is counted again with the trace
once, by its current result, and alerts once; the window of the re-score does not count it;
the dashboard's verdict is the current one; and the re-exported result carries the same
identity as the first with the next version, so a backend can replace it."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

from tests.support.received import evaluation_records
from tests.support.receiver import running
from tests.support.sdk import record
from tracegrade.config import load_config
from tracegrade.pipeline.follow import Follower, follower_context
from tracegrade.pipeline.signals import open_signals
from tracegrade.report.windows import window_start
from tracegrade.scoring import build_scorers
from tracegrade.store import follow as shared
from tracegrade.store.results import current_results, window_results
from tracegrade.store.search import verdicts
from tracegrade.store.traces import Store

WINDOW_S = 60.0


def _chat(tracer: Any, question: str, answer: str) -> None:
    messages = {
        "gen_ai.input.messages": [
            {"role": "user", "parts": [{"type": "text", "content": question}]}
        ],
        "gen_ai.output.messages": [
            {"role": "assistant", "parts": [{"type": "text", "content": answer}]}
        ],
    }
    attributes = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    attributes |= {key: json.dumps(value) for key, value in messages.items()}
    with tracer.start_as_current_span("chat gpt-4o", attributes=attributes):
        pass


def _late_answer(tracer: Any) -> None:
    """A turn answered "Found shoes" (passes), then, as a span that arrives late, a second
    LLM call that invents a price (fails)."""
    with tracer.start_as_current_span(
        "invoke_agent shop", attributes={"gen_ai.operation.name": "invoke_agent"}
    ):
        _chat(tracer, "find shoes", "Found shoes")
        _chat(tracer, "find shoes", "They cost $999.99")


def _requests() -> tuple[Any, Any, str]:
    """(the trace without its late span, the late span alone, the trace id)."""
    spans = record(_late_answer, {"service.name": "shop"})
    late = [s for s in spans if "999" in str(s.attributes.get("gen_ai.output.messages"))]
    early = [s for s in spans if s not in late]
    return encode_spans(early), encode_spans(late), format(spans[0].context.trace_id, "032x")


def _follower(db: str, endpoint: str = "") -> Follower:
    config = dataclasses.replace(
        load_config(None), windows={"min_traces": 1, "thresholds": {"failure_rate": 0.5}}
    )
    follower = Follower(
        db, None, build_scorers(config), config, quiet_s=0.0, since=0.0, window_s=WINDOW_S
    )
    follower.signals = open_signals(endpoint, follower_context(follower))
    return follower


def test_a_trace_scored_again_after_its_window_closed_counts_once_by_its_current_result(
    store_location, tmp_path
):
    early, late, trace_id = _requests()
    with running(tmp_path / "backend.db") as backend:
        follower = _follower(store_location, backend.http_endpoint)
        told = follower.exported(lambda result, updated: None)
        with Store(store_location) as store:
            store.write([early])
            [(first, updated)] = follower.poll(store)
            told(first, updated)
            assert first.passed and not updated
            anchor = window_start(
                store.db.execute("SELECT scored_at FROM follow_results").fetchone()[0], WINDOW_S
            )
            follower.close_windows(store, anchor + 1)  # the window opens...
            closed = follower.close_windows(store, anchor + WINDOW_S + 1)  # ...and closes
            assert any("traces=1 failure_rate=0.000" in line for line in closed), closed
            assert not any(line.startswith("ALERT") for line in closed)

            store.write([late])  # a span of the scored trace arrives after its window closed
            [(second, updated)] = follower.poll(store)
            told(second, updated)
            assert not second.passed and updated  # scored again: a new version, updated
            assert shared.result_counts(store.db) == {trace_id: 2}  # one result per version

            later = anchor + 10 * WINDOW_S  # the windows in between close; late results seen
            keeper = follower.windows
            assert keeper is not None
            revised = keeper.revise(store, anchor, later)
            assert len([line for line in revised if line.startswith("WINDOW")]) == 1
            assert [line for line in revised if line.startswith("WINDOW")] == [
                line
                for line in revised
                if "(revised)" in line and "traces=1 failure_rate=1.000" in line
            ]
            alerts = [line for line in revised if line.startswith("ALERT")]
            assert alerts == ["ALERT service=shop window 60s: failure_rate 1 > 0.5"]
            assert keeper.revise(store, anchor, later) == []  # nothing changed since: no line
            stored = {
                start: aggregates for start, _, aggregates in shared.windows(store.db, WINDOW_S)
            }
            assert stored[anchor]["traces"] == 1 and stored[anchor]["failure_rate"] == 1.0
            counted = window_results(store.db, anchor, later)  # every window since: once
            assert [(r.trace_id, r.passed) for r in counted] == [(trace_id, False)]
            assert window_results(store.db, anchor + WINDOW_S, later) == []
            assert not current_results(store.db, [trace_id])[trace_id].passed
            assert verdicts(store, [trace_id])[trace_id] == [
                {"run_id": None, "position": None, "passed": False}
            ]
        assert follower.signals.close() == []
        records = evaluation_records(tmp_path / "backend.db", [trace_id])[trace_id]
    overall = [r.attributes for r in records if r.attributes["gen_ai.evaluation.name"] == "overall"]
    assert [(a["tracegrade.result.version"], a["tracegrade.verdict"]) for a in overall] == [
        (1, "pass"),
        (2, "fail"),
    ]
    assert len({a["tracegrade.result.id"] for a in overall}) == 1  # the same result, replaced
    assert {a["tracegrade.evaluator.id"] for a in overall} == {follower.identity.id}


def test_a_window_closed_by_a_follower_after_a_late_rescore_counts_the_trace_there(tmp_path):
    """The re-score lands before the window closes: the window counts the trace once, by
    its current (failing) result, and the window of the re-score counts nothing."""
    db = str(tmp_path / "w.db")
    early, late, trace_id = _requests()
    follower = _follower(db)
    with Store(db) as store:
        store.write([early])
        follower.poll(store)
        store.write([late])
        follower.poll(store)
        scored = [r[0] for r in store.db.execute("SELECT scored_at FROM follow_results")]
        anchor = window_start(min(scored), WINDOW_S)
        follower.close_windows(store, anchor + 1)
        lines = follower.close_windows(store, anchor + WINDOW_S + 1)
    assert [line for line in lines if line.startswith("WINDOW")] == [
        line for line in lines if "service=shop traces=1 failure_rate=1.000" in line
    ]
    assert sum(line.startswith("ALERT") for line in lines) == 1
