"""The trace page shows the ``gen_ai.evaluation.result`` records other evaluators sent about
a trace (stored as feedback: :mod:`tracegrade.store.feedback`) beside tracegrade's own scores,
on the page and its JSON twin (escaped like everything else from the store); tracegrade's own
exported records (``tracegrade.verdict``) are not among them."""

from __future__ import annotations

from pathlib import Path

from opentelemetry import trace as trace_api
from starlette.testclient import TestClient

from tests.support.sdk import agent_turn, logs_request, trace_request
from tracegrade.store.traces import Store
from tracegrade.web import UiConfig, create_app


def _store(path: Path) -> tuple[str, str]:
    spans = trace_request(agent_turn)
    first = spans.resource_spans[0].scope_spans[0].spans[0]
    trace_id, span_id = first.trace_id.hex(), first.span_id.hex()
    context = trace_api.set_span_in_context(
        trace_api.NonRecordingSpan(
            trace_api.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True)
        )
    )

    def emit(logger) -> None:
        logger.emit(
            context=context,
            event_name="gen_ai.evaluation.result",
            attributes={
                "gen_ai.evaluation.name": "user_feedback",
                "gen_ai.evaluation.score.value": 0.0,
                "gen_ai.evaluation.score.label": "thumbs_down",
                "gen_ai.evaluation.explanation": "<b>wrong</b> price",
            },
        )
        logger.emit(  # tracegrade's own (--export-otlp) sent back to a tracegrade receiver
            context=context,
            event_name="gen_ai.evaluation.result",
            attributes={"gen_ai.evaluation.name": "overall", "tracegrade.verdict": "fail"},
        )

    with Store(path) as store:
        store.write([spans], [logs_request(emit, {"service.name": "support-widget"})])
    return trace_id, span_id


def test_recorded_evaluations_are_shown_beside_the_scores(tmp_path: Path) -> None:
    trace_id, span_id = _store(tmp_path / "s.db")
    app = create_app(UiConfig(db=str(tmp_path / "s.db")))
    with TestClient(app, base_url="http://localhost") as client:
        data = client.get(f"/traces/{trace_id}.json").json()
        html = client.get(f"/traces/{trace_id}").text
    app.state.ui.close()
    [evaluation] = data["evaluations"]
    assert evaluation["source"] == "event" and evaluation["span_id"] == span_id
    assert (evaluation["name"], evaluation["score"], evaluation["label"]) == (
        "user_feedback",
        0.0,
        "thumbs_down",
    )
    assert evaluation["positive"] is False
    assert data["scores"]["scorers"]  # tracegrade's own, on the same page
    table = html[html.index('id="evaluations"') : html.index("<h2>Lint")]
    assert "user_feedback" in table and "thumbs_down" in table and span_id in table
    assert "&lt;b&gt;wrong&lt;/b&gt; price" in table and "<b>wrong" not in table


def test_a_trace_without_recorded_evaluations_says_so(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        request = trace_request(agent_turn)
        store.write([request])
    trace_id = request.resource_spans[0].scope_spans[0].spans[0].trace_id.hex()
    app = create_app(UiConfig(db=str(tmp_path / "s.db")))
    with TestClient(app, base_url="http://localhost") as client:
        assert client.get(f"/traces/{trace_id}.json").json()["evaluations"] == []
        assert "No evaluation result" in client.get(f"/traces/{trace_id}").text
    app.state.ui.close()
