"""ordered_map: results of forked workers in the input's order, progress in order."""

from __future__ import annotations

import os

import pytest

from tracegrade.parallel import ordered_map


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
