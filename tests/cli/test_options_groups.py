"""The option groups ``score`` and ``run`` share (issue 39): built once from a command's
parameters, each by its own names; ``run``'s own ``--repeat`` and ``--concurrency`` are not
the judge's."""

from __future__ import annotations

from tracegrade.cli.options import option_groups, options_of
from tracegrade.pipeline._run import RunOptions
from tracegrade.pipeline.gate import GateOptions, OutputOptions
from tracegrade.pipeline.judging import JudgeOptions


def test_the_judge_group_takes_the_judge_options_not_the_runs():
    params = {
        "dataset_path": "golden.yaml",
        "repeat": 3,
        "concurrency": 8,
        "judge_mode": True,
        "judge_model": "gpt-4o",
        "judge_concurrency": 2,
        "judge_repeat": 5,
        "threshold": 0.8,
        "baseline": "baseline",
        "json_path": "r.json",
        "no_save": True,
    }
    groups = option_groups(params)
    assert groups["judge"] == JudgeOptions(mode=True, model="gpt-4o", concurrency=2, repeat=5)
    assert groups["gate"] == GateOptions(threshold=0.8, baseline="baseline")
    assert groups["output"] == OutputOptions(json_path="r.json", save=False)
    options = options_of(RunOptions, {**params, "judge": True}, dataset_path="dataset")
    assert options.repeat == 3 and options.concurrency == 8
    assert options.judge == JudgeOptions()  # a group is never filled from a plain parameter
