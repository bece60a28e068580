"""The judge's evidence includes retrieved documents and the case's reference, and the
``faithfulness`` scorer asks the judge about statements under ``--judge``. On the recorded
LangChain RAG chain (openinference-instrumentation-langchain)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.judge.conftest import settings_for
from tests.support.judge_replies import verdict
from tests.support.openai_server import error, json_reply
from tracegrade.config import defaults
from tracegrade.dataset import Case, Dataset, ReferenceDocument
from tracegrade.judge.evidence import build_evidence
from tracegrade.judge.faithfulness import JudgedFaithfulness, with_judged_faithfulness
from tracegrade.judge.rubrics import CONTEXT_NOTE, SYSTEM_PROMPT, judge_messages
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.pipeline import reading
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.scoring.faithfulness import Faithfulness
from tracegrade.trace import AgentTrace

RECORDING = Path(__file__).parents[1] / "data" / "frameworks" / "langchain-rag-openinference"
QUOTE = "How much does the Aurora desk lamp cost?"
INVENT = "What is the price of the Borealis floor lamp?"


@pytest.fixture(scope="module")
def rag() -> dict[str, AgentTrace]:
    loaded = reading.from_files(sorted(RECORDING.glob("traces.*")))
    return {t.user_inputs[0]: t for t in loaded.traces}


def test_evidence_holds_the_retrieved_documents(rag):
    evidence = build_evidence(rag[INVENT])
    document = json.loads(evidence.text)
    assert evidence.has_context and not evidence.truncated
    (retrieval,) = document["retrieved_documents"]
    assert retrieval["retrieval"] == "R1" and retrieval["name"] == "VectorStoreRetriever"
    assert retrieval["query"] == '"What is the price of the Borealis floor lamp?"'
    assert retrieval["found"] == "2 document(s)"
    first = retrieval["documents"][0]
    assert first["document"] == "R1.1" and first["id"] == "lamp-borealis"
    assert first["content"].startswith("Borealis floor lamp: dimmable floor lamp, 160 cm tall. ")
    assert "Price $149.00." in evidence.text
    assert list(document)[-2:] == ["retrieved_documents", "final_answer"]
    assert "The Borealis floor lamp costs $129.00." in document["final_answer"]
    system = judge_messages("rubric", evidence)[0]["content"]
    assert system == SYSTEM_PROMPT + "\n\n" + CONTEXT_NOTE


def test_evidence_holds_the_case_reference():
    trace = AgentTrace("t", ("question",), "answer", (), ())
    case = Case(input="question", reference=[ReferenceDocument(id="policy", content="30 days")])
    document = json.loads(build_evidence(trace, case=case).text)
    assert document["reference_context"] == [{"reference": 1, "id": "policy", "content": "30 days"}]


def test_evidence_without_context_is_as_before(contradiction):
    evidence = build_evidence(contradiction, 6000)
    assert not evidence.has_context
    assert "Retrieved documents" not in evidence.text and "Reference" not in evidence.text
    assert judge_messages("rubric", evidence)[0]["content"] == SYSTEM_PROMPT


def test_long_documents_are_cut_fairly_and_the_cut_is_noted(rag):
    evidence = build_evidence(rag[INVENT], 200)
    assert evidence.truncated and evidence.estimated_tokens <= 200
    assert any("retrieved or reference document(s) is cut" in n for n in evidence.notes)


def _judged(server) -> JudgedFaithfulness:
    return JudgedFaithfulness(Faithfulness(), JudgeScorer(settings_for(server), judge_all=True))


def test_judge_statements_join_the_values(judge_server, rag):
    missed = "says $129.00; the catalogue says $149.00"
    server = judge_server([json_reply(verdict(0.2, "Contradicts the document.", [], [missed]))])
    score = _judged(server)(rag[INVENT], None)
    assert score.value == 0.0  # the values' fraction, lower than the judge's 0.2
    assert score.details["unsupported"] == [{"kind": "price", "text": "$129.00"}]
    assert score.details["statements"] == [missed]
    assert score.details["judge"]["score"] == 0.2
    assert f"unsupported statements: {missed}" in score.reason
    sent = server.requests[0]["messages"]
    assert "Price $149.00." in sent[1]["content"] and CONTEXT_NOTE in sent[0]["content"]


def test_the_judge_lowers_a_score_the_values_pass(judge_server, rag):
    server = judge_server([json_reply(verdict(0.5, "One claim unsupported.", [], ["x"]))])
    score = _judged(server)(rag[QUOTE], None)
    assert score.details["unsupported"] == [] and score.value == 0.5


def test_a_judge_error_keeps_the_values_score(judge_server, rag):
    server = judge_server([error(400, "bad request")] * 3)
    score = _judged(server)(rag[QUOTE], None)
    assert score.value == 1.0 and "statements not judged" in score.reason
    assert score.hard_failures == ()


def test_only_judge_all_runs_wrap_faithfulness(judge_server):
    server = judge_server([])
    scorers = build_scorers(defaults(), with_plugins=False)
    assert with_judged_faithfulness(scorers, None) == scorers
    rubric_only = JudgeScorer(settings_for(server))
    assert with_judged_faithfulness(scorers, rubric_only) == scorers
    wrapped = with_judged_faithfulness(scorers, JudgeScorer(settings_for(server), judge_all=True))
    assert [type(s).__name__ for s in wrapped if s.name == "faithfulness"] == ["JudgedFaithfulness"]


def test_a_run_prefetches_and_asks_once_per_rag_trace(judge_server, rag):
    server = judge_server(
        lambda request: json_reply(verdict(1.0, "Supported.")),
    )
    judge = JudgeScorer(settings_for(server), judge_all=True)
    config = defaults()
    scorers = with_judged_faithfulness(build_scorers(config, with_plugins=False), judge)
    traces = [rag[QUOTE], rag[INVENT]]
    cases = [Case(id=q, input=q) for q in (QUOTE, INVENT)]
    result = evaluate(traces, Dataset(cases=cases), [*scorers, judge], config)
    by_id = {r.case_id: r for r in result.results}
    assert by_id[QUOTE].scores["faithfulness"] == 1.0
    assert by_id[INVENT].scores["faithfulness"] == 0.0
    assert len(server.requests) == 2  # one question per trace: the judge axis asks the same
