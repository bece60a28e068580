"""The scripted shop model (tests/support/ecommerce_model.py) on request bodies alone."""

from __future__ import annotations

import json

import pytest

from tests.examples.conftest import REPO
from tests.support.ecommerce_model import ecommerce_model, load_script, respond
from tracegrade.dataset import load_dataset

REVIVAL = REPO / "datasets" / "ecommerce" / "revival.yaml"
SIMULATED = REPO / "datasets" / "ecommerce" / "simulated.yaml"

TRACKING = (
    "Where is my package for order 550e8400-e29b-41d4-a716-446655440002? I want tracking info."
)


def _body(*messages):
    return {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "You are a shop assistant."}, *messages],
    }


def _called(reply):
    return [
        (c["function"]["name"], json.loads(c["function"]["arguments"]))
        for c in reply.message["tool_calls"]
    ]


def _after_tools(user, calls_and_results):
    """Messages after the tool loop: one assistant tool-call message and its results per step."""
    messages = [{"role": "user", "content": user}]
    for step, (name, result) in enumerate(calls_and_results):
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"c{step}",
                        "type": "function",
                        "function": {"name": name, "arguments": "{}"},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": f"c{step}", "content": json.dumps(result)})
    return messages


def test_every_case_of_the_datasets_has_a_script(dataset):
    scripts = {s.case_id: s for s in load_script().values()}
    cases = [*dataset.cases, *load_dataset(REVIVAL).cases]
    simulated = load_dataset(SIMULATED).cases
    assert set(scripts) == {c.id for c in cases} | {simulated[0].id}
    for case in cases:
        assert scripts[case.id].input == case.input
        assert len(scripts[case.id].turns) == len(case.turns or [case.input]) + len(
            case.clarifications
        )
    for case in simulated:  # one script for both: the revived case differs in the agent only
        assert scripts[simulated[0].id].input == case.input
        assert case.user is not None
        assert len(scripts[simulated[0].id].turns) == case.user.max_turns


def test_first_request_gets_the_first_planned_tool_call():
    reply = respond(_body({"role": "user", "content": TRACKING}))
    assert _called(reply) == [
        ("get_order_tracking", {"order_id": "550e8400-e29b-41d4-a716-446655440002"})
    ]


def test_a_step_of_parallel_calls_is_one_response():
    reply = respond(
        _body(
            {
                "role": "user",
                "content": "Compare the Sony WH-1000XM5 and the Bose QuietComfort Ultra",
            }
        )
    )
    assert _called(reply) == [
        ("search_products", {"query": "Sony WH-1000XM5"}),
        ("search_products", {"query": "Bose QuietComfort Ultra"}),
    ]


def test_answer_is_written_from_the_tool_results_in_the_request():
    result = {"order_id": "X-1", "status": "lost at sea", "carrier": "Ferry", "total": 12.5}
    reply = respond(_body(*_after_tools(TRACKING, [("get_order_tracking", result)])))
    assert reply.message["content"] == (
        "Here is the tracking information:\n"
        "Order ID X-1: status: lost at sea; carrier: Ferry; total: $12.50"
    )


def test_turn_follows_the_number_of_user_messages():
    first = "I want to cancel my order."
    question = respond(_body({"role": "user", "content": first}))
    assert question.message == {"role": "assistant", "content": question.message["content"]}
    assert "Which order" in question.message["content"]
    follow_up = respond(
        _body(
            {"role": "user", "content": first},
            {"role": "assistant", "content": "Which order?"},
            {"role": "user", "content": "550e8400-e29b-41d4-a716-446655440006"},
        )
    )
    assert _called(follow_up)[0][0] == "cancel_order"


def test_skip_tool_drops_the_last_step_and_answers_from_memory():
    skip = ecommerce_model("skip_tool")
    assert (
        skip(_body({"role": "user", "content": TRACKING}))
        .message["content"]
        .endswith("I believe everything is in order.")
    )
    returns = (
        "I want to return the laptop from order 550e8400-e29b-41d4-a716-446655440004, "
        "it has a defective screen"
    )
    after_check = _after_tools(
        returns, [("check_return_eligibility", {"order_id": "o", "return_eligible": True})]
    )
    assert "tool_calls" not in skip(_body(*after_check)).message


def test_invented_price_restates_every_price_ten_percent_lower():
    result = {"order_id": "X-1", "total": 1299.0, "status": "shipped"}
    reply = ecommerce_model("invented_price")(
        _body(*_after_tools(TRACKING, [("get_order_tracking", result)]))
    )
    assert (
        "total: $1,169.10" in reply.message["content"]
        and "$1,299.00" not in reply.message["content"]
    )


def test_unknown_conversation_is_a_loud_400():
    reply = respond(_body({"role": "user", "content": "Sing me a song"}))
    assert reply.status == 400 and "no case starts with 'Sing me a song'" in reply.body


def test_delay_knob_and_variant_checks():
    assert ecommerce_model(delay_s=0.2)(_body({"role": "user", "content": TRACKING})).delay_s == 0.2
    with pytest.raises(
        ValueError,
        match="unknown variant 'bad'; valid: \\['good', 'skip_tool', 'invented_price'\\]",
    ):
        ecommerce_model("bad")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="delay_s must be >= 0"):
        ecommerce_model(delay_s=-1)


def test_a_later_turn_without_the_conversation_before_it_gets_a_question_back():
    lost = respond(_body({"role": "user", "content": "Is the first one in stock?"}))
    assert lost.message == {
        "role": "assistant",
        "content": "Which product do you mean? Tell me its name and I'll check the stock.",
    }
    kept = respond(
        _body(
            {"role": "user", "content": "Show me running shoes under $150"},
            {"role": "assistant", "content": "Running shoes under $150: ..."},
            {"role": "user", "content": "Is the first one in stock?"},
        )
    )
    assert _called(kept) == [("check_stock", {"product_id": "p-3004"})]
