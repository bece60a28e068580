"""Hallucination checks from the case: must_not_contain (hard) and must_contain (fraction)."""

from __future__ import annotations

from tests.support.traces import gap, llm, make_case, make_trace
from tracegrade.scoring.hallucination import Hallucination, searched_text


def halluc(answer, llm_calls=(), **case_fields):
    return Hallucination()(
        make_trace(final_output=answer, llm_calls=llm_calls), make_case(**case_fields)
    )


def test_must_not_contain_hit_is_a_hard_failure():
    score = halluc("Your refund of $500 is on its way.", must_not_contain=["refund"])
    assert score.hard_failures == ("answer contains forbidden phrase 'refund'",)


def test_must_not_contain_hit_scores_zero_even_when_must_contain_is_satisfied():
    score = halluc(
        "Order shipped; refund issued.", must_contain=["shipped"], must_not_contain=["refund"]
    )
    assert score.value == 0.0


def test_must_not_contain_absent_is_not_a_failure():
    score = halluc("Your order has shipped.", must_not_contain=["refund"])
    assert score.value == 1.0 and score.hard_failures == ()


def test_forbidden_phrases_found_are_in_details():
    assert halluc("refund and credit", must_not_contain=["refund", "voucher"]).details[
        "forbidden_found"
    ] == ["refund"]


def test_must_contain_scores_the_fraction_found():
    score = halluc("Flight HAT001 departs at 10:00.", must_contain=["HAT001", "10:00", "gate B4"])
    assert abs(score.value - 2 / 3) < 1e-9
    assert score.details["required_missing"] == ["gate B4"]


def test_must_contain_matches_case_insensitively():
    assert halluc("your code is abc123", must_contain=["ABC123"]).value == 1.0


def test_must_contain_matches_on_word_boundaries():
    assert halluc("We offer refunds.", must_contain=["refund"]).value == 0.0


def test_thousands_separator_in_the_answer_is_ignored():
    assert halluc("The total is 1,327 dollars.", must_contain=["1327"]).value == 1.0


def test_part_of_a_separated_number_does_not_match():
    assert halluc("The total is 1,327 dollars.", must_contain=["327"]).value == 0.0


def test_part_of_a_separated_number_is_not_a_forbidden_hit():
    assert halluc("The total is 1,327 dollars.", must_not_contain=["327"]).hard_failures == ()


def test_scope_final_searches_only_the_final_answer():
    calls = [
        llm(output_text="Let me look up order 1327.", tool_call_ids=("c1",), span_id="l1"),
        llm(output_text="Your order has shipped.", span_id="l2"),
    ]
    assert halluc("Your order has shipped.", calls, must_contain=["1327"]).value == 0.0


def test_scope_replies_includes_earlier_assistant_turns_without_tool_calls():
    calls = [
        llm(output_text="Order 1327 has shipped.", span_id="l1"),
        llm(output_text="Anything else?", span_id="l2"),
    ]
    score = halluc("Anything else?", calls, must_contain=["1327"], contain_scope="replies")
    assert score.value == 1.0


def test_scope_replies_excludes_text_sent_alongside_tool_calls():
    calls = [
        llm(output_text="Let me look up order 1327.", tool_call_ids=("c1",), span_id="l1"),
        llm(output_text="Your order has shipped.", span_id="l2"),
    ]
    score = halluc("Your order has shipped.", calls, must_contain=["1327"], contain_scope="replies")
    assert score.value == 0.0


def test_scope_any_response_includes_text_sent_alongside_tool_calls():
    calls = [
        llm(output_text="Let me look up order 1327.", tool_call_ids=("c1",), span_id="l1"),
        llm(output_text="Your order has shipped.", span_id="l2"),
    ]
    score = halluc(
        "Your order has shipped.", calls, must_contain=["1327"], contain_scope="any_response"
    )
    assert score.value == 1.0


def test_scope_any_response_applies_to_must_not_contain_too():
    calls = [llm(output_text="I will issue a refund now.", tool_call_ids=("c1",), span_id="l1")]
    score = halluc("Done.", calls, must_not_contain=["refund"], contain_scope="any_response")
    assert score.hard_failures


def test_replies_scope_includes_the_final_answer_without_llm_text():
    trace = make_trace(final_output="Order 1327 shipped.", llm_calls=[])
    assert "1327" in searched_text(trace, "replies")


def test_no_answer_without_a_gap_finds_nothing():
    score = Hallucination()(make_trace(final_output=None), make_case(must_contain=["shipped"]))
    assert score.value == 0.0


def test_no_answer_because_content_is_not_captured_is_skipped():
    trace = make_trace(final_output=None, gaps=[gap("message_content", "capture off")])
    score = Hallucination()(trace, make_case(must_not_contain=["refund"]))
    assert score.value is None and score.reason == "capture off"


def test_case_without_phrases_is_skipped():
    assert halluc("anything").value is None


def test_no_case_is_skipped():
    assert Hallucination()(make_trace(), None).value is None
