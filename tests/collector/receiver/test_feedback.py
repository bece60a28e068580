"""End-user feedback through the real receiver by all three routes (a ``gen_ai.evaluation.result``
log record from the SDK's log exporter, the ``user.feedback`` span attribute, ``POST
/v1/feedback``), sent before and after its trace, is stored and joined to the right trace, on
SQLite and PostgreSQL."""

from __future__ import annotations

import httpx
import pytest
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

from tests.support.receiver import running
from tests.support.sdk import agent_turn, record
from tests.support.sdk_pipelines import export_logs, log_exporter, span_exporter
from tracegrade.pipeline.review import conversation_feedback
from tracegrade.store.feedback import feedback_for
from tracegrade.store.traces import Store

TOKEN = "feedback-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}


def _turn(question: str, **attributes: object) -> list:
    return record(lambda tracer: agent_turn(tracer, question, "ok", attributes))


def _ids(spans: list) -> tuple[str, str, int, int]:
    """(trace id hex, agent span id hex, raw ids) of a recorded turn."""
    agent = next(s for s in spans if s.name.startswith("invoke_agent"))
    ctx = agent.context
    return f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", ctx.trace_id, ctx.span_id


def _evaluation_record(receiver, trace_id: int, span_id: int, label: str, score: float) -> list:
    """A gen_ai.evaluation.result log record from the SDK, parented to the evaluated span."""
    context = set_span_in_context(
        NonRecordingSpan(SpanContext(trace_id, span_id, False, TraceFlags(TraceFlags.SAMPLED)))
    )

    def emit(logger, tracer) -> None:  # noqa: ARG001
        logger.emit(
            event_name="gen_ai.evaluation.result",
            context=context,
            attributes={
                "gen_ai.evaluation.name": "user_rating",
                "gen_ai.evaluation.score.value": score,
                "gen_ai.evaluation.score.label": label,
                "gen_ai.evaluation.explanation": f"{label} from the widget",
            },
        )

    return export_logs(log_exporter("http", receiver, headers=AUTH), emit, batch=False)


def _post(receiver, body: dict, headers: dict | None = None) -> httpx.Response:
    return httpx.post(
        f"{receiver.http_endpoint}/v1/feedback",
        json=body,
        headers=AUTH if headers is None else headers,
        timeout=10,
    )


def test_feedback_by_every_route_before_and_after_its_trace_joins_the_right_trace(
    store_location: str,
) -> None:
    a, b = _turn("where is my order?"), _turn("cancel it")
    c = _turn(
        "change the address", **{"user.feedback": "thumbs_down", "user.feedback.comment": "no"}
    )
    (a_id, a_span, a_raw, a_raw_span), (b_id, _, _, _), (c_id, _, c_raw, c_raw_span) = map(
        _ids, (a, b, c)
    )
    with running(store_location, token=TOKEN) as receiver:
        # before the traces: a log record for A, the API for B
        _evaluation_record(receiver, a_raw, a_raw_span, "thumbs_down", 0.0)
        answer = _post(receiver, {"trace_id": b_id, "label": "thumbs_up", "comment": "great"})
        assert answer.status_code == 200, answer.text
        assert answer.json() == {"stored": True, "trace_id": b_id}
        exporter = span_exporter("http", receiver, headers=AUTH)
        assert exporter.export([*a, *b, *c]).name == "SUCCESS"
        exporter.shutdown()
        # after the traces: the API for A, a log record for C
        assert _post(receiver, {"trace_id": a_id.upper(), "score": 1}).status_code == 200
        _evaluation_record(receiver, c_raw, c_raw_span, "incorrect", 0.2)
    with Store(store_location) as store:
        found = feedback_for(store.db, [a_id, b_id, c_id])
        joined = conversation_feedback(store, [a_id])
    assert [(f.source, f.name, f.label, f.score, f.positive) for f in found[a_id]] == [
        ("event", "user_rating", "thumbs_down", 0.0, False),
        ("api", "user.feedback", None, 1.0, True),
    ]
    assert found[a_id][0].span_id == a_span
    assert [(f.source, f.label, f.explanation, f.positive) for f in found[b_id]] == [
        ("api", "thumbs_up", "great", True)
    ]
    assert [(f.source, f.name, f.label, f.explanation, f.positive) for f in found[c_id]] == [
        ("attribute", "user.feedback", "thumbs_down", "no", False),
        ("event", "user_rating", "incorrect", "incorrect from the widget", False),
    ]
    assert [f.to_dict() for f in joined] == [f.to_dict() for f in found[a_id]]


def test_a_resent_feedback_record_is_stored_once(tmp_path) -> None:
    spans = _turn("hello")
    trace_id, _, raw, raw_span = _ids(spans)
    with running(tmp_path / "once.db") as receiver:
        sent = _evaluation_record(receiver, raw, raw_span, "thumbs_up", 1.0)
        resender = log_exporter("http", receiver)
        assert resender.export(sent).name == "SUCCESS"  # an exporter's retry: the same record
        resender.shutdown()
        exporter = span_exporter("http", receiver)
        exporter.export(spans)
        exporter.export(spans)
        exporter.shutdown()
    with Store(tmp_path / "once.db") as store:
        assert len(feedback_for(store.db, [trace_id])[trace_id]) == 1


@pytest.mark.parametrize(
    ("body", "headers", "status", "says"),
    [
        ({"trace_id": "ab" * 16, "label": "down"}, {}, 401, "bearer token"),
        ({"trace_id": "xyz", "label": "down"}, None, 400, "trace_id"),
        ({"trace_id": "ab" * 16}, None, 400, "at least one of score, label or comment"),
        ({"trace_id": "ab" * 16, "label": "down", "user": "x"}, None, 400, "user"),
        ({"trace_id": "ab" * 16, "score": "high"}, None, 400, "score"),
    ],
)
def test_a_bad_feedback_request_is_refused_with_the_reason_and_stores_nothing(
    tmp_path, body: dict, headers: dict | None, status: int, says: str
) -> None:
    with running(tmp_path / "bad.db", token=TOKEN) as receiver:
        answer = _post(receiver, body, headers)
        text = httpx.post(
            f"{receiver.http_endpoint}/v1/feedback",
            content=b"{}",
            headers={**AUTH, "content-type": "text/plain"},
        )
    assert answer.status_code == status and says in answer.json()["error"]
    assert text.status_code == 415
    with Store(tmp_path / "bad.db") as store:
        assert store.db.execute("SELECT COUNT(*) FROM feedback").fetchone()[0] == 0


def test_feedback_is_bounded_per_trace_and_per_client_and_pages_show_the_first(
    store_location,
) -> None:
    """Issue 40 item 7: 6,000 feedback records about one trace were all stored, the trace page
    rendered them all. Now a trace keeps ``--feedback-per-trace`` records (POST /v1/feedback
    answers 429 naming the trace beyond, and records by OTLP logs stop at the same bound), a
    client gets ``--feedback-rate`` requests a minute (429 with Retry-After), and the trace
    page shows the first 50 with the count."""
    from starlette.testclient import TestClient

    from tracegrade.web import UiConfig, create_app

    spans = _turn("how much is shipping?")
    trace_id, span_id, raw_trace, raw_span = _ids(spans)
    other = f"{int(trace_id, 16) ^ 1:032x}"
    with running(store_location, feedback_per_trace=60, feedback_rate=70) as receiver:
        exporter = span_exporter("http", receiver)
        assert exporter.export(spans).name == "SUCCESS"
        exporter.shutdown()
        url = f"{receiver.http_endpoint}/v1/feedback"
        with httpx.Client() as client:
            answers = [
                client.post(url, json={"trace_id": trace_id, "score": 0, "comment": f"c{n}"})
                for n in range(62)
            ]
            assert [a.status_code for a in answers] == [200] * 60 + [429] * 2
            assert f"trace {trace_id} has 60 feedback records" in answers[-1].json()["error"]
            assert "Retry-After" not in answers[-1].headers
            accepted = 0  # the bucket (70) refills 70 a minute: a few more while this runs
            while (throttled := client.post(url, json={"trace_id": other, "score": 1})).is_success:
                accepted += 1
                assert accepted < 40
            assert throttled.status_code == 429 and int(throttled.headers["Retry-After"]) >= 1
            assert "at most 70 requests a minute" in throttled.json()["error"]
        for n in range(3):  # OTLP log records stop at the same bound
            _evaluation_record(receiver, raw_trace, raw_span, f"l{n}", 0.0)
    with Store(store_location) as store:
        assert len(feedback_for(store.db, [trace_id])[trace_id]) == 60
        assert len(feedback_for(store.db, [other])[other]) == accepted >= 8
    app = create_app(UiConfig(db=store_location, index_traces=False))
    with TestClient(app, base_url="http://localhost") as client:
        data = client.get(f"/traces/{trace_id}.json").json()
        assert (len(data["evaluations"]), data["evaluations_total"]) == (50, 60)
        assert (
            "The first 50 of 60 recorded about this trace."
            in client.get(f"/traces/{trace_id}").text
        )
    app.state.ui.close()


def test_the_per_client_bucket_refills() -> None:
    from tracegrade.collector.feedback_limits import FeedbackLimits

    limits = FeedbackLimits(per_trace=5, per_client_per_min=2)
    assert limits.admit_client("a", now=0.0) is None and limits.admit_client("a", now=0.0) is None
    refused = limits.admit_client("a", now=0.0)
    assert refused is not None and refused.retry_after_s == pytest.approx(30.0)
    assert limits.admit_client("b", now=0.0) is None  # another client is not starved
    assert limits.admit_client("a", now=30.0) is None
