"""Faithfulness (values supported by the retrieved context or the case's reference) and
retrieved content / a reference as evidence for value grounding and the production rules."""

from __future__ import annotations

import dataclasses

from tests.support.traces import make_case, make_trace, tool
from tracegrade.config import defaults
from tracegrade.scoring import build_scorers
from tracegrade.scoring.evaluation import score_trace
from tracegrade.scoring.faithfulness import Faithfulness
from tracegrade.scoring.grounding import ValueGrounding, evidence_texts
from tracegrade.scoring.production import ProductionRules
from tracegrade.scoring.results import hallucinated
from tracegrade.trace import AgentTrace, Retrieval, RetrievedDocument

QUESTION = "How much does the Aurora desk lamp cost?"
CATALOG = (
    RetrievedDocument("lamp-aurora", "Aurora desk lamp: $39.99, warm white LED.", 0.91),
    RetrievedDocument("lamp-borealis", "Borealis floor lamp: $149.00, dimmable.", 0.40),
)


def rag_trace(answer: str, documents=CATALOG, **retrieval) -> AgentTrace:
    trace = make_trace(user_inputs=[QUESTION], final_output=answer)
    found = Retrieval("r1", "Aurora desk lamp price", tuple(documents), **retrieval)
    return dataclasses.replace(trace, retrievals=(found,))


def test_an_answer_quoting_a_retrieved_price_is_faithful():
    score = Faithfulness()(rag_trace("The Aurora desk lamp costs $39.99."), None)
    assert score.value == 1.0
    assert score.details["supported"] == [
        {"kind": "price", "text": "$39.99", "evidence": ["document lamp-aurora"]}
    ]
    assert score.reason == "1/1 values supported by the context"


def test_an_invented_price_is_unfaithful_and_named():
    score = Faithfulness()(rag_trace("The Aurora desk lamp costs $34.99."), None)
    assert score.value == 0.0
    assert score.details["unsupported"] == [{"kind": "price", "text": "$34.99"}]
    assert "unsupported: $34.99" in score.reason


def test_partly_supported_answer_scores_the_fraction():
    answer = "The Aurora lamp is $39.99 and the Borealis is $129.00."
    score = Faithfulness()(rag_trace(answer), None)
    assert score.value == 0.5 and [u["text"] for u in score.details["unsupported"]] == ["$129.00"]


def test_without_retrieval_or_reference_it_is_skipped():
    score = Faithfulness()(make_trace(final_output="It costs $5."), make_case())
    assert score.value is None and "nothing to be faithful to" in score.reason


def test_a_case_reference_is_context_and_evidence():
    case = make_case(reference=[{"id": "policy", "content": "Refunds within 30 days."}])
    trace = make_trace(final_output="You can get a refund within 30 days.")
    score = Faithfulness()(trace, case)
    assert score.value == 1.0
    assert score.details["supported"][0]["evidence"] == ["reference policy"]
    assert Faithfulness()(make_trace(final_output="Refunds within 45 days."), case).value == 0.0


def test_a_plain_text_reference_is_one_document():
    case = make_case(reference="The lamp costs $39.99.")
    assert [d.content for d in case.reference_documents] == ["The lamp costs $39.99."]
    assert Faithfulness()(make_trace(final_output="$39.99"), case).value == 1.0


def test_answer_without_values_is_faithful_by_values():
    assert Faithfulness()(rag_trace("It is a warm white lamp."), None).value == 1.0


def test_retrievals_without_recorded_documents_are_skipped_not_failed():
    trace = rag_trace("It costs $39.99.", documents=(), documents_recorded=False)
    assert Faithfulness()(trace, None).value is None
    ids_only = rag_trace("It costs $39.99.", documents=(RetrievedDocument("a", None, 0.9),))
    assert "no content" in Faithfulness()(ids_only, None).reason


def test_an_empty_retrieval_supports_nothing():
    score = Faithfulness()(rag_trace("It costs $39.99.", documents=()), None)
    assert score.value == 0.0


def test_tool_results_still_count_as_evidence():
    trace = dataclasses.replace(
        rag_trace("Order A100 totals $42.50."),
        tool_calls=(tool("get_order", result='{"order_id": "A100", "total_usd": 42.5}'),),
    )
    score = Faithfulness()(trace, None)
    assert score.value == 1.0 and score.details["supported"][-1]["evidence"] == ["tool get_order"]


# --- retrieved content and the reference as evidence elsewhere -------------------------------


def test_value_grounding_grounds_answer_values_in_retrieved_content():
    assert ValueGrounding()(rag_trace("It costs $39.99."), None).value == 1.0
    bare = make_trace(user_inputs=[QUESTION], final_output="It costs $39.99.")
    assert ValueGrounding()(bare, None).value == 0.0


def test_value_grounding_grounds_in_the_case_reference():
    case = make_case(reference="Shipping takes 4 to 12 days.")
    trace = make_trace(final_output="Shipping takes 12 days.")
    assert ValueGrounding()(trace, case).value == 1.0
    assert ValueGrounding()(trace, None).value == 0.0


def test_production_rules_accept_retrieved_values_and_name_invented_ones():
    rules = ProductionRules()
    assert rules(rag_trace("It costs $39.99."), None).value == 1.0
    invented = rules(rag_trace("It costs $34.99."), None)
    assert invented.value == 0.0
    assert invented.hard_failures == (
        "the answer states values no tool result, retrieved document or input contains: $34.99",
    )


def test_production_rules_wording_is_unchanged_without_context():
    failed = ProductionRules()(make_trace(final_output="It costs $34.99."), None)
    assert failed.hard_failures == (
        "the answer states values no tool result or input contains: $34.99",
    )


def test_evidence_texts_order_and_content():
    case = make_case(reference=["ref text"])
    texts = evidence_texts(rag_trace("x"), case)
    assert texts == [d.content for d in CATALOG] + ["ref text", QUESTION]


def test_faithfulness_is_registered_reported_and_a_hallucination(config=None):
    config = defaults()
    assert "faithfulness" in [s.name for s in build_scorers(config, with_plugins=False)]
    result = score_trace(
        rag_trace("It costs $34.99."),
        None,
        build_scorers(config, with_plugins=False),
        config,
        config.reference_free_weights,
        0.7,
    )
    assert result.scores["faithfulness"] == 0.0
    assert any(r.startswith("faithfulness: 0/1 values supported") for r in result.reasons)
    assert hallucinated({"faithfulness": 0.0}, {})


def test_a_dataset_case_loads_its_reference(tmp_path):
    from tracegrade.dataset import load_dataset

    path = tmp_path / "rag.yaml"
    path.write_text(
        "- id: lamp\n"
        "  input: How much is the lamp?\n"
        "  reference:\n"
        "    - The lamp costs $39.99.\n"
        "    - {id: shipping, content: Ships in 2 days.}\n"
    )
    (case,) = load_dataset(path).cases
    assert [(d.id, d.content) for d in case.reference_documents] == [
        (None, "The lamp costs $39.99."),
        ("shipping", "Ships in 2 days."),
    ]
