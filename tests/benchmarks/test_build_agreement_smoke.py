"""The build-agreement benchmark (cases built from one reward-1 trial per tau-bench task,
scored against the other trials) runs end to end on the recorded trajectories."""

from __future__ import annotations

from pathlib import Path

from benchmarks.tau_bench.build_agreement import run

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def test_built_cases_predict_the_other_trials_reward(tmp_path):
    result = run(TAU, tmp_path)
    assert result["scored_trials"] == 51  # 17 tasks with a reward-1 trial, 3 other trials each
    assert result["recall"] == 1.0  # no successful trial fails a case built from another
    assert result["accuracy"] >= 0.95  # 49 of 51 measured
