"""``gen_ai.evaluation.result`` log records read into :class:`Evaluation` s (records from the
real SDK, as another evaluator sends them); and the span an evaluation of a trace is about
(:attr:`AgentTrace.evaluated_span_id`)."""

from __future__ import annotations

from opentelemetry import trace as trace_api

from tests.support.sdk import agent_turn, logs_request, trace_request
from tracegrade.normalize import normalize_all
from tracegrade.normalize.evaluations import evaluations_of
from tracegrade.otlp.codec import logs_from_request, spans_from_request
from tracegrade.trace import AgentInfo, AgentTrace, LlmCall

TRACE = "0af7651916cd43dd8448eb211c80319c"
SPAN = "b7ad6b7169203331"


def _context(trace_id: str = TRACE, span_id: str = SPAN):
    span = trace_api.SpanContext(int(trace_id, 16), int(span_id, 16), is_remote=True)
    return trace_api.set_span_in_context(trace_api.NonRecordingSpan(span))


def _emit(logger) -> None:
    logger.emit(
        context=_context(),
        event_name="gen_ai.evaluation.result",
        attributes={
            "gen_ai.evaluation.name": "relevance",
            "gen_ai.evaluation.score.value": 0.25,
            "gen_ai.evaluation.score.label": "not_relevant",
            "gen_ai.evaluation.explanation": "Answers another question.",
            "gen_ai.response.id": "chatcmpl-1",
            "user.id": "u-7",
        },
        timestamp=2_000,
    )
    logger.emit(  # an older SDK: the event name as an attribute; a failed evaluation
        context=_context(),
        attributes={
            "event.name": "gen_ai.evaluation.result",
            "gen_ai.evaluation.name": "user_feedback",
            "gen_ai.evaluation.score.label": "thumbs_down",
            "error.type": "timeout",
        },
        timestamp=1_000,
    )
    logger.emit(context=_context(), event_name="gen_ai.choice", body={"index": 0}, timestamp=3)
    logger.emit(  # no gen_ai.evaluation.name: not an evaluation result
        context=_context(), event_name="gen_ai.evaluation.result", timestamp=4
    )


def test_evaluation_results_are_read_with_their_scores_labels_and_evaluator():
    logs = logs_from_request(logs_request(_emit, {"service.name": "online-judge"}))
    found = evaluations_of(logs)
    assert [e.name for e in found] == ["user_feedback", "relevance"]  # oldest first
    feedback, relevance = found
    assert (relevance.trace_id, relevance.span_id) == (TRACE, SPAN)
    assert relevance.score_value == 0.25 and relevance.score_label == "not_relevant"
    assert relevance.explanation == "Answers another question."
    assert relevance.response_id == "chatcmpl-1" and relevance.error_type is None
    assert relevance.evaluator == "online-judge"
    assert relevance.attributes == {"user.id": "u-7"}
    assert feedback.score_value is None and feedback.score_label == "thumbs_down"
    assert feedback.error_type == "timeout" and feedback.attributes == {}
    assert relevance.to_dict()["attributes"] == {"user.id": "u-7"}


def test_a_record_without_a_trace_id_is_no_evaluation_of_a_trace():
    def emit(logger) -> None:
        logger.emit(
            event_name="gen_ai.evaluation.result", attributes={"gen_ai.evaluation.name": "x"}
        )

    assert evaluations_of(logs_from_request(logs_request(emit))) == []


def test_the_evaluated_span_is_the_outermost_agent_then_the_first_llm_call():
    (trace,) = normalize_all(spans_from_request(trace_request(agent_turn)))
    agent = next(a for a in trace.agents if a.parent_agent_span_id is None)
    assert trace.evaluated_span_id == agent.span_id
    call = LlmCall("c1", None, None, None, None, None, 0, 0.0, None, None)
    bare = AgentTrace(TRACE, (), None, (call, LlmCall("c2", *[None] * 5, 0, 0.0, None, None)), ())
    assert bare.evaluated_span_id == "c1"
    nested = AgentTrace(
        TRACE, (), None, (), (), agents=(AgentInfo("sub", "s2", "s1"), AgentInfo("main", "s1"))
    )
    assert nested.evaluated_span_id == "s1"
    assert AgentTrace(TRACE, (), None, (), ()).evaluated_span_id is None
