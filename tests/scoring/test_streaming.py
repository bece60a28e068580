"""Evaluation over batches (scoring.streaming) gives exactly what evaluating the whole list
gives: the same results in the same order, the same summary, under every matching rule."""

from __future__ import annotations

import pytest

from tests.support.traces import make_case, make_dataset, make_trace, tool
from tracegrade.scoring import build_scorers, evaluate
from tracegrade.scoring.evaluation import CASE_ID_ATTR
from tracegrade.scoring.streaming import TraceFacts, evaluate_batches, stream_results

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


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("size", [1, 2, 7])
@pytest.mark.parametrize("dataset", [DATASET, None], ids=["dataset", "reference-free"])
def test_batches_give_the_results_of_one_list(config, dataset, size, workers):
    scorers = build_scorers(config, with_plugins=False)
    whole = evaluate(TRACES, dataset, scorers, config)
    batches = [TRACES[i : i + size] for i in range(0, len(TRACES), size)]
    streamed, facts = evaluate_batches(batches, dataset, scorers, config, workers=workers)
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


@pytest.mark.parametrize("workers", [1, 2])
def test_a_scored_batch_is_not_held_while_the_next_is_read(config, workers):
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


@pytest.mark.parametrize("limit", [None, 1, 3, 20])
@pytest.mark.parametrize("dataset", [DATASET, None], ids=["dataset", "reference-free"])
def test_prepared_items_and_a_limit_give_the_results_of_the_traces_kept(config, dataset, limit):
    """``prepare`` (run in the workers with --workers) skips items, ``limit`` stops the run:
    the results of evaluating the traces kept, in one process or two, and progress in order."""
    scorers = build_scorers(config, with_plugins=False)
    items = [t.trace_id for t in TRACES]  # stand-ins for decoded traces
    by_id = {t.trace_id: t for t in TRACES if t.trace_id not in ("t2", "t5")}
    kept = [t for t in TRACES if t.trace_id in by_id][:limit]
    whole = evaluate(kept, dataset, scorers, config)
    runs = []
    for workers in (1, 2):
        results: list = []
        seen: list = []
        leftover, facts = stream_results(
            [items[:3], items[3:]],
            dataset,
            scorers,
            config,
            results.append,
            progress=seen.append,
            workers=workers,
            prepare=by_id.get,
            limit=limit,
        )
        assert tuple(results) == whole.results and facts == TraceFacts.of(kept)
        assert leftover == (whole.summary.unmatched_traces if dataset else 0)
        runs.append(seen)
    assert runs[0] == runs[1] and len(runs[0]) >= len(kept)


def test_an_error_in_a_worker_is_the_error_of_one_process(config):
    scorers = build_scorers(config, with_plugins=False)

    def prepare(item):
        if item == "t4":
            raise ValueError("cannot normalise t4")
        return next(t for t in TRACES if t.trace_id == item)

    items = [t.trace_id for t in TRACES]
    for workers in (1, 2):
        with pytest.raises(ValueError, match="cannot normalise t4"):
            stream_results(
                [items], DATASET, scorers, config, lambda r: None, prepare=prepare, workers=workers
            )


def test_a_pass_runs_with_the_collector_tuned_and_leaves_it_as_it_was(config):
    """_util.heap: during a pass young collections are rare and what existed before is frozen
    (no full collection walks it); afterwards the thresholds and the frozen count are back,
    also after a failing pass, and nested passes restore only at the outermost end."""
    import gc

    from tracegrade._util.heap import YOUNG_THRESHOLD, scoring_heap

    before = gc.get_threshold(), gc.get_freeze_count()
    seen: list[tuple[int, int]] = []

    def prepare(item):
        seen.append((gc.get_threshold()[0], gc.get_freeze_count()))
        return item

    scorers = build_scorers(config, with_plugins=False)
    stream_results([TRACES], None, scorers, config, lambda result: None, prepare=prepare)
    assert len(seen) == len(TRACES)
    assert all(young == YOUNG_THRESHOLD and frozen > 0 for young, frozen in seen)
    assert (gc.get_threshold(), gc.get_freeze_count()) == before

    with pytest.raises(RuntimeError), scoring_heap():
        with scoring_heap():
            pass
        assert gc.get_threshold()[0] == YOUNG_THRESHOLD  # the inner end restored nothing
        raise RuntimeError("a failing pass")
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
