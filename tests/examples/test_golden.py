"""The golden dataset (datasets/ecommerce) scored on traces of the example agent, driven by the
scripted model in-process: the good script passes every case; each regression script fails
the cases it should, for the right reason."""

from __future__ import annotations

import re

import pytest

from tests.examples.conftest import exported_traces, score_cases, scripted_model
from tests.support.ecommerce_model import load_script
from tracegrade.dataset import Case

_PRICE = re.compile(r"\$\d[\d,]*\.\d\d")


def _skipped_tool(case: Case) -> str | None:
    """The tool the skip_tool script leaves out: the last planned step of the last turn."""
    script = next(s for s in load_script().values() if s.case_id == case.id)
    steps = script.turns[-1].steps
    return steps[-1][0][0] if steps else None


@pytest.fixture(scope="module")
def good_answers(_session_exporter, _model_servers, dataset):
    """The good script's run over every case, and its final answers per case (computed once)."""
    patch = pytest.MonkeyPatch()
    if ("good",) not in _model_servers:
        _model_servers[("good",)] = scripted_model("good").start()
    server = _model_servers[("good",)]
    patch.setenv("OPENAI_BASE_URL", server.base_url)
    patch.setenv("OPENAI_API_KEY", "test-key")
    _session_exporter.clear()
    try:
        result = score_cases(_session_exporter, dataset, dataset.cases)
        traces = {t.trace_id: t for t in exported_traces(_session_exporter)}
    finally:
        patch.undo()
        _session_exporter.clear()
    return result, {r.case_id: traces[r.trace_id].final_output for r in result.results}


def test_good_model_passes_every_case_with_full_marks(good_answers, dataset):
    result, _ = good_answers
    assert {r.case_id: r.reasons for r in result.results if not r.passed} == {}
    assert [r.case_id for r in result.results] == [c.id for c in dataset.cases]
    assert {r.case_id: r.score for r in result.results} == {c.id: 1.0 for c in dataset.cases}
    assert result.summary.passed == len(dataset.cases) >= 20


def test_good_answers_quote_the_shop_data(good_answers):
    _, answers = good_answers
    assert (
        "Sony WH-1000XM5: brand: Sony; category: Electronics; price: $279.99"
        in answers["headphones-under-300"]
    )
    assert "tracking number: 794612345678" in answers["tracking-0002"]
    assert answers["cancel-which-order"].startswith("Done, I cancelled it:")
    assert "in stock: yes" in answers["running-shoes-multi-turn"]


def test_skipping_a_required_tool_fails_every_case_that_needs_it(spans, model, dataset):
    model("skip_tool")
    result = score_cases(spans, dataset, dataset.cases)
    for outcome in result.results:
        case = next(c for c in dataset.cases if c.id == outcome.case_id)
        tool = _skipped_tool(case)
        if tool is None:
            assert outcome.passed, outcome.reasons  # nothing to skip: the out-of-scope case
            continue
        assert not outcome.passed, case.id
        assert any(tool in reason for reason in outcome.reasons), (tool, outcome.reasons)


def test_skipped_required_call_is_a_hard_failure(spans, model, dataset):
    model("skip_tool")
    case = next(c for c in dataset.cases if c.id == "return-laptop-0004")
    (outcome,) = score_cases(spans, dataset, [case]).results
    assert outcome.hard_failures == ("required call initiate_return not made as expected",)
    assert outcome.scores["groundedness"] == 1.0  # it did check eligibility first


def test_invented_prices_fail_every_case_whose_answer_states_a_price(
    spans, model, dataset, good_answers
):
    _, answers = good_answers
    model("invented_price")
    result = score_cases(spans, dataset, dataset.cases)
    priced = {case_id for case_id, text in answers.items() if _PRICE.search(text or "")}
    assert len(priced) >= 12
    assert {r.case_id for r in result.results if not r.passed} == priced
    for outcome in result.results:
        if outcome.case_id in priced:
            ungrounded = outcome.details["value_grounding"]["details"]["ungrounded"]
            assert ungrounded and {v["kind"] for v in ungrounded} == {"price"}, outcome.case_id
            assert outcome.hard_failures == ()  # a soft failure: below the dataset's threshold
            assert outcome.score < dataset.threshold


def test_smoke_tier_is_a_handful_of_cases(dataset):
    smoke = dataset.tier("smoke")
    assert 4 <= len(smoke) <= 6
    assert {c.id for c in smoke} <= {c.id for c in dataset.cases}


def test_dataset_covers_the_design_documents_cases(dataset):
    from tests.examples.conftest import REPO
    from tracegrade.dataset import load_dataset

    seeds = [
        c
        for name in ("product_discovery", "order_management")
        for c in load_dataset(REPO / "datasets" / "e-commerce-agents" / f"{name}.json").cases
    ]
    ours = {c.input: c for c in dataset.cases}
    for seed in seeds:
        assert seed.input in ours
        case = ours[seed.input]
        assert (case.expected_tools, case.expected_fields, case.criteria) == (
            seed.expected_tools,
            seed.expected_fields,
            seed.criteria,
        )


def test_latency_budget_over_fails_the_case(spans, model, dataset):
    model("good", delay_s=0.1)
    case = next(c for c in dataset.cases if c.id == "headphones-under-300")
    tight = case.model_copy(update={"max_latency_ms": 150.0})
    (outcome,) = score_cases(spans, dataset, [tight]).results
    assert not outcome.passed
    assert any(h.startswith("over budget: trace latency_ms") for h in outcome.hard_failures), (
        outcome.hard_failures
    )
