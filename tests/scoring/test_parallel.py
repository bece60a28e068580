"""ordered_map: results of forked workers in the input's order, progress in order."""

from __future__ import annotations

import os

import pytest

from tracegrade.scoring.parallel import ordered_batches, ordered_map


def test_forked_workers_return_results_in_order_and_report_each_in_order():
    seen: list[tuple[int, int]] = []
    results = ordered_map(lambda i: (i, os.getpid()), 200, workers=2, on_result=seen.append)
    assert [i for i, _ in results] == list(range(200)) and seen == results
    assert {pid for _, pid in results} - {os.getpid()}  # the work ran in other processes


def test_one_worker_runs_in_this_process():
    assert {pid for pid in ordered_map(lambda i: os.getpid(), 5)} == {os.getpid()}


def test_workers_must_be_positive():
    with pytest.raises(ValueError, match="workers"):
        ordered_map(lambda i: i, 3, workers=0)


def test_batches_come_back_in_order_computed_elsewhere_with_few_batches_read_ahead():
    read: list[int] = []
    got: list[list[tuple[int, int]]] = []

    def batches():
        for start in range(0, 100, 10):
            read.append(start)
            yield range(start, start + 10)

    for batch in ordered_batches(lambda i: (i, os.getpid()), batches(), workers=2, ahead=1):
        got.append(batch)
        assert len(read) <= len(got) + 1  # at most the next batch was read meanwhile
    assert [i for batch in got for i, _ in batch] == list(range(100))
    assert os.getpid() not in {pid for batch in got for _, pid in batch}


def fails_at(bad: set[int]):
    def task(i: int) -> int:
        if i in bad:
            raise ValueError(f"item {i}")
        return i

    return task


def test_the_first_error_in_input_order_is_raised_with_the_workers_traceback():
    for workers in (1, 2):
        with pytest.raises(ValueError, match="item 7") as raised:
            list(ordered_batches(fails_at({7, 40}), [range(5), range(5, 64)], workers=workers))
    assert "worker process" in "".join(raised.value.__notes__)


def test_a_worker_that_dies_is_an_error_not_a_hang():
    with pytest.raises(RuntimeError, match="without an answer"):
        ordered_map(lambda i: os._exit(3) if i == 5 else i, 40, workers=2)


def test_stopping_early_stops_the_workers_of_the_batches_in_flight(tmp_path):
    import time

    def slow(i: int) -> int:
        if i >= 10:
            with (tmp_path / f"{os.getpid()}.pid").open("w"):
                time.sleep(600)
        return i

    stream = ordered_batches(slow, [range(0, 10), range(10, 20), range(20, 30)], workers=2)
    assert next(stream) == list(range(10))
    while len(list(tmp_path.iterdir())) < 2:  # the next batch's two workers are asleep
        time.sleep(0.01)
    stream.close()  # kills and reaps them
    for pid in (int(path.stem) for path in tmp_path.iterdir()):
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
