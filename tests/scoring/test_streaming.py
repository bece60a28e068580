"""Evaluation over batches (scoring.streaming) gives exactly what evaluating the whole list
gives: the same results in the same order, the same summary, under every matching rule."""

from __future__ import annotations

import pytest

from tests.scoring.conftest import make_case, make_dataset, make_trace, tool
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.scoring.evaluate import CASE_ID_ATTR
from tracegrade.scoring.streaming import TraceFacts, evaluate_batches

ORDERS, PRICE = "Show me my recent orders", "How much is the Sony?"


def trace(trace_id, user_input=ORDERS, case_id=None, version=None):
    return make_trace(
        trace_id=trace_id,
        user_inputs=[user_input],
        tool_calls=[tool("get_user_orders", {}, result='[{"status": "shipped"}]')],
        final_output="Your order has shipped." if trace_id[-1] in "02468" else "Shipped.",
        root_attributes={CASE_ID_ATTR: case_id} if case_id else {},
        resource_attributes={"service.version": version} if version else {},
    )


TRACES = [
    trace("t0"),  # by input: orders (and a second case with the same input)
    trace("t1", case_id="labelled"),  # by attribute: labelled; its input is ignored
    trace("t2", PRICE),  # named by case priced, and matches it by input too
    trace("t3", case_id="not-in-dataset"),  # falls through to input matching
    trace("t4", PRICE),  # by input only: loses to the named trace for case priced
    trace("t5", "nothing matches this", version="2.0"),  # unused
    trace("t6", case_id="labelled", version="2.0"),
]
DATASET = make_dataset(
    make_case(id="orders", input=ORDERS, expected_tools=["get_user_orders"]),
    make_case(id="orders-again", input=ORDERS),
    make_case(id="labelled", input=PRICE),
    make_case(id="priced", input=PRICE, trace_id="t2"),
    make_case(id="never", input="no trace has this"),
)


@pytest.mark.parametrize("size", [1, 2, 7])
@pytest.mark.parametrize("dataset", [DATASET, None], ids=["dataset", "reference-free"])
def test_batches_give_the_results_of_one_list(config, dataset, size):
    scorers = build_scorers(config, with_plugins=False)
    whole = evaluate(TRACES, dataset, scorers, config)
    batches = [TRACES[i : i + size] for i in range(0, len(TRACES), size)]
    streamed, facts = evaluate_batches(batches, dataset, scorers, config)
    assert streamed == whole
    assert facts == TraceFacts.of(TRACES) and facts.count == 7 and facts.versions["2.0"] == 2


def test_the_precedence_is_applied_once_every_trace_is_seen(config):
    scorers = build_scorers(config, with_plugins=False)
    result, _ = evaluate_batches([[t] for t in TRACES], DATASET, scorers, config)
    chosen = [(r.case_id, r.trace_id) for r in result.results]
    assert chosen == [
        ("orders", "t0"),
        ("orders", "t3"),
        ("orders-again", "t0"),
        ("orders-again", "t3"),
        ("labelled", "t1"),
        ("labelled", "t6"),
        ("priced", "t2"),
        ("never", None),
    ]
    assert result.summary == evaluate(TRACES, DATASET, scorers, config).summary


def test_a_scored_batch_is_not_held_while_the_next_is_read(config):
    """Memory stays flat: once a batch is scored, nothing refers to its traces any more."""
    import gc

    from tracegrade.trace import AgentTrace

    def alive() -> int:
        gc.collect()
        return sum(
            1 for o in gc.get_objects() if type(o) is AgentTrace and o.trace_id.startswith("held-")
        )

    alive_when_reading: list[int] = []

    def batches():
        for start in range(0, 6, 2):
            alive_when_reading.append(alive())
            yield [trace(f"held-{start + n}") for n in range(2)]

    scorers = build_scorers(config, with_plugins=False)
    for dataset in (DATASET, None):
        alive_when_reading.clear()
        _, facts = evaluate_batches(batches(), dataset, scorers, config)
        assert alive_when_reading == [0, 0, 0] and facts.count == 6
