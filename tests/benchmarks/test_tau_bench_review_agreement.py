"""benchmarks/tau_bench/review_agreement.py on 20 trajectories: rewards imported as labels,
every scorer's agreement reported (the README's table comes from the full 100)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.tau_bench.review_agreement import markdown, measure

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def test_the_rewards_become_labels_and_every_scorer_is_measured(tmp_path: Path) -> None:
    (tmp_path / "twenty.json").write_text(json.dumps(json.loads(TAU.read_text())[:20]))
    report = measure(tmp_path / "twenty.json", tmp_path / "out")
    assert report["labelled"] == 20 and report["conversations"] == 20
    raters = {row["rater"] for row in report["rows"] if row["reference"] == "labels"}
    assert {"overall", "tool_arguments", "production_rules.invented_values"} <= raters
    table = markdown(report)
    assert table.splitlines()[0].startswith("| rater | n | accuracy")
    assert "| overall | 20 |" in table
    assert len((tmp_path / "out" / "labels.jsonl").read_text().splitlines()) == 20
