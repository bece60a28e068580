"""``evaluations_for(store, trace_ids)``: the ``gen_ai.evaluation.result`` records other
evaluators sent with stored traces, read by trace id on both store backends (log records
only: a trace whose spans never arrived still has its evaluations)."""

from __future__ import annotations

from opentelemetry import trace as trace_api

from tests.support.sdk import agent_turn, logs_request, trace_request
from tracegrade.pipeline import evaluations_for
from tracegrade.store.traces import Store


def _evaluation(trace_id: str, span_id: str, name: str, value: float):
    context = trace_api.set_span_in_context(
        trace_api.NonRecordingSpan(
            trace_api.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True)
        )
    )

    def emit(logger) -> None:
        logger.emit(
            context=context,
            event_name="gen_ai.evaluation.result",
            attributes={"gen_ai.evaluation.name": name, "gen_ai.evaluation.score.value": value},
        )
        logger.emit(context=context, event_name="gen_ai.choice", body={"index": 0})

    return logs_request(emit, {"service.name": "reviewers"})


def test_evaluations_are_read_by_trace_id_on_both_backends(store_location):
    spans = trace_request(agent_turn)
    first = spans.resource_spans[0].scope_spans[0].spans[0]
    trace_id, span_id = first.trace_id.hex(), first.span_id.hex()
    lonely = "ab" * 16  # evaluated, but its spans never arrived
    with Store(store_location) as store:
        store.write(
            [spans],
            [
                _evaluation(trace_id, span_id, "helpfulness", 0.9),
                _evaluation(lonely, span_id, "helpfulness", 0.1),
            ],
        )
        found = evaluations_for(store, [trace_id.upper(), lonely, "cd" * 16])
    assert set(found) == {trace_id, lonely}  # a trace without evaluations is absent
    [mine] = found[trace_id]
    assert (mine.name, mine.score_value, mine.span_id) == ("helpfulness", 0.9, span_id)
    assert mine.evaluator == "reviewers"
    assert [e.score_value for e in found[lonely]] == [0.1]
