"""benchmarks/tau_bench/modes.py on the 100 recorded GPT-4o airline trajectories
(datasets/tau-bench, MIT): which trajectory match modes make pass/fail agree with tau-bench's
own reward. The figures are regression floors (docs/guides/trajectories.md quotes them):
expecting the gold writes (required, every write tool strict) with ``superset`` or
``in_order`` reproduces the reward as convert.py's dataset does; the modes that allow no
other call fail nearly every trajectory, since the agent reads before it writes; the whole
gold trajectory, reads included, as other evaluators are given it, predicts the reward
poorly.
"""

from __future__ import annotations

import json

import pytest

from benchmarks.tau_bench.modes import DEFAULT, main, measure

VARIANTS = [
    ("writes", "superset", "exact"),
    ("writes", "in_order", "exact"),
    ("writes", "exact", "exact"),
    ("writes", "superset", "ignore"),
    ("all", "exact", "exact"),
    ("all", "superset", "exact"),
    ("all", "superset", "ignore"),
]


@pytest.fixture(scope="module")
def rows():
    records = json.loads(DEFAULT.read_text(encoding="utf-8"))
    measured = measure(records, VARIANTS)
    return {(r["gold"], r["tool_calls_match"], r["arguments_match"]): r for r in measured}


def test_the_gold_writes_with_superset_or_in_order_reproduce_the_reward(rows):
    for mode in ("superset", "in_order"):
        row = rows[("writes", mode, "exact")]
        assert (row["cases"], row["passed"]) == (100, 50)
        assert row["accuracy"] == 0.99 and row["recall"] == 1.0 and row["precision"] == 0.98


def test_modes_that_allow_no_other_call_fail_an_agent_that_reads_first(rows):
    row = rows[("writes", "exact", "exact")]
    assert row["passed"] <= 1 and row["recall"] <= 0.05


def test_ignoring_the_arguments_passes_wrong_writes(rows):
    ignored, compared = (
        rows[("writes", "superset", "ignore")],
        rows[("writes", "superset", "exact")],
    )
    assert ignored["passed"] > compared["passed"]
    assert ignored["false_positive"] > compared["false_positive"]
    assert ignored["precision"] < 0.85


def test_the_whole_gold_trajectory_predicts_the_reward_poorly(rows):
    exact, superset = rows[("all", "exact", "exact")], rows[("all", "superset", "exact")]
    assert exact["recall"] < 0.2 and exact["accuracy"] < 0.65
    assert superset["recall"] < 0.6 and superset["accuracy"] < 0.8
    assert rows[("all", "superset", "ignore")]["precision"] < superset["precision"]


def test_the_script_prints_every_variant(capsys):
    assert main(["--limit", "4", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert len(printed) == 2 * 5 * 4 and {r["cases"] for r in printed} == {4}
