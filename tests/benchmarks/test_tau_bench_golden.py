"""Scores must not move when scoring gets faster: the tau-bench run's per-axis results, golden.

``tests/data/golden/tau_bench_axes.json`` holds, per case, every scorer's value, reason and
details and the usage figures, generated from the code before the issue 16 speed work (axes
and detail keys added since are ignored, changed or removed ones fail). The
overall score and pass/fail are left out on purpose: their semantics belong to issue 10 and
may change legitimately. Regenerate only for a documented change of a scorer's result, with
``TRACEGRADE_REGENERATE_GOLDEN=1`` set while running this file.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.tau_bench.convert import convert
from tracegrade.cli import cli

ROOT = Path(__file__).parents[2]
TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
GOLDEN = ROOT / "tests" / "data" / "golden" / "tau_bench_axes.json"


def per_axis(run_doc: dict) -> list[dict]:
    """The scorer-level part of a run document: one entry per case, in report order."""
    return [
        {
            "case_id": c["case_id"],
            "trace_id": c["trace_id"],
            "axes": c["details"],
            "usage": c["usage"],
        }
        for c in run_doc["cases"]
    ]


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("tau")
    assert convert(TAU, out) == (100, 100)
    return out


def run_doc(converted: Path, *extra: str) -> dict:
    report = converted / f"R{len(extra)}.json"
    args = ["score", str(converted / "traces.jsonl"), "--dataset", str(converted / "dataset.yaml")]
    result = CliRunner().invoke(cli, [*args, "--json", str(report), "--no-save", *extra])
    assert result.exit_code == 1, result.output
    return json.loads(report.read_text())


def score(converted: Path, *extra: str) -> list[dict]:
    return per_axis(run_doc(converted, *extra))


def test_per_axis_scores_equal_the_golden(converted):
    got = score(converted)
    if os.environ.get("TRACEGRADE_REGENERATE_GOLDEN"):
        GOLDEN.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert len(got) == len(golden) == 100
    for mine, gold in zip(got, golden, strict=True):
        assert as_in(mine, gold) == gold, mine["case_id"]


def as_in(value, gold):
    """``value`` restricted to the dict keys ``gold`` has: scorers and details added since
    the golden was made are not changes of the ones it records."""
    if isinstance(value, dict) and isinstance(gold, dict):
        return {k: as_in(value[k], gold[k]) if k in value else "<missing>" for k in gold}
    return value


def test_two_worker_processes_give_the_same_results_in_the_same_order(converted):
    one, two = run_doc(converted), run_doc(converted, "--workers", "2")
    assert two["cases"] == one["cases"] and two["summary"] == one["summary"]
    assert len(two["cases"]) == 100  # and the one-worker run equals the golden (above)


@pytest.mark.parametrize(
    "selection",
    [("--limit", "30"), ("--sample", "0.5", "--limit", "20"), ("--since", "2000-01-01")],
)
def test_two_workers_select_the_traces_one_selects(converted, selection):
    one, two = run_doc(converted, *selection), run_doc(converted, *selection, "--workers", "2")
    assert two["cases"] == one["cases"] and two["summary"] == one["summary"]


def test_two_workers_score_a_store_as_one_does(converted, tmp_path):
    db = str(tmp_path / "store.db")
    imported = CliRunner().invoke(cli, ["import", str(converted / "traces.jsonl"), "--db", db])
    assert imported.exit_code == 0, imported.output
    docs = []
    for workers in ("1", "2"):
        report = tmp_path / f"W{workers}.json"
        args = ["score", "--db", db, "--dataset", str(converted / "dataset.yaml"), "--no-save"]
        result = CliRunner().invoke(cli, [*args, "--json", str(report), "--workers", workers])
        assert result.exit_code == 1, result.output
        docs.append(json.loads(report.read_text()))
    assert docs[1]["cases"] == docs[0]["cases"] and docs[1]["summary"] == docs[0]["summary"]
    assert len(docs[0]["cases"]) == 100
