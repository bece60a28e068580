"""The tau-bench validation, end to end: convert.py -> tracegrade score --json -> agreement.

tracegrade's pass/fail must predict tau-bench's own reward on the 100 recorded GPT-4o
airline trajectories (datasets/tau-bench, MIT). The figures are a regression floor: the only
remaining disagreement (task46-trial3) is a trajectory tau-bench never scored (its
``reward_info`` is empty: the run stopped at the step limit) although its database writes
equal the gold ones.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from benchmarks.tau_bench.agreement import agreement, main
from benchmarks.tau_bench.convert import convert
from tracegrade.cli import cli

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau")
    assert convert(TAU, out) == (100, 100)
    return out


@pytest.fixture(scope="module")
def run_doc(converted):
    report = converted / "R.json"
    result = CliRunner().invoke(
        cli,
        [
            "score",
            str(converted / "traces.jsonl"),
            "--dataset",
            str(converted / "dataset.yaml"),
            "--json",
            str(report),
            "--no-save",
        ],
    )
    assert result.exit_code == 1, result.output  # GPT-4o fails about half of the tasks
    return json.loads(report.read_text())


def test_dataset_carries_expected_writes_outputs_and_reward(converted):
    dataset = yaml.safe_load((converted / "dataset.yaml").read_text())
    records = {f"task{r['task_id']}-trial{r['trial']}": r for r in json.loads(TAU.read_text())}
    case = next(c for c in dataset["cases"] if c["id"] == "task0-trial0")
    gold = records["task0-trial0"]["info"]["task"]["actions"]
    assert case["expected_tool_calls"] == [
        {"name": "book_reservation", "arguments": gold[0]["kwargs"], "required": True}
    ]
    with_outputs = next(c for c in dataset["cases"] if records[c["id"]]["info"]["task"]["outputs"])
    assert with_outputs["must_contain"] == records[with_outputs["id"]]["info"]["task"]["outputs"]
    assert all(c["metadata"]["reward"] == records[c["id"]]["reward"] for c in dataset["cases"])


def test_every_case_matches_its_trace_by_case_id(run_doc):
    assert (
        run_doc["summary"]["unmatched_cases"] == 0 and run_doc["summary"]["unmatched_traces"] == 0
    )
    assert len({c["trace_id"] for c in run_doc["cases"]}) == 100


def test_pass_fail_predicts_the_reward(run_doc):
    figures = agreement(run_doc)
    assert figures["accuracy"] >= 0.99
    assert figures["recall"] == 1.0 and figures["precision"] >= 0.98
    assert [d["case_id"] for d in figures["disagreements"]] == ["task46-trial3"]


def test_metadata_and_tags_are_carried_through(run_doc):
    case = run_doc["cases"][0]
    assert case["tags"] == ["tau-bench", "airline"] and "reward" in case["metadata"]
    assert run_doc["schema_version"] == "tracegrade.run/1"


def test_failed_write_then_successful_retry_passes(run_doc):
    # task20-trial1: update_reservation_flights errors once, then succeeds with the gold arguments
    case = next(c for c in run_doc["cases"] if c["case_id"] == "task20-trial1")
    assert case["passed"] and case["metadata"]["reward"] == 1.0


def test_extra_write_is_a_hard_failure(run_doc):
    case = next(c for c in run_doc["cases"] if c["case_id"] == "task28-trial0")
    assert not case["passed"]
    assert any("unexpected call cancel_reservation" in h for h in case["hard_failures"])


def test_missing_run_document_is_one_line_not_a_traceback(tmp_path, capsys):
    """Issue 10 item 3: when ``score`` failed before writing its JSON, agreement says so."""
    assert main([str(tmp_path / "R.json")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "R.json does not exist: the score command did not write it" in err


def test_unreadable_run_document_is_one_line(tmp_path, capsys):
    (tmp_path / "R.json").write_text("{not json")
    assert main([str(tmp_path / "R.json")]) == 2
    assert "is not a readable JSON run document" in capsys.readouterr().err
