"""benchmarks/common.py: the figures a benchmark script prints, as JSON or as its table; and
the tau-bench scripts, which import it, still run as scripts from any directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.common import report

ROOT = Path(__file__).parents[2]


def test_report_prints_indented_json_with_json(capsys):
    tables = []
    assert report({"rows": [1, 2]}, True, tables.append) == 0
    assert json.loads(capsys.readouterr().out) == {"rows": [1, 2]}
    assert tables == []


def test_report_prints_the_table_without_json(capsys):
    assert report([{"stage": "score"}], False, lambda rows: print(rows[0]["stage"])) == 0
    assert capsys.readouterr().out == "score\n"


def test_tau_bench_agreement_runs_as_a_script_outside_the_repo(tmp_path):
    """The README's main job runs ``python benchmarks/tau_bench/agreement.py R.json``."""
    doc = {
        "cases": [
            {"case_id": "a", "metadata": {"reward": 1.0}, "passed": True, "reasons": []},
            {"case_id": "b", "metadata": {"reward": 0.0}, "passed": True, "reasons": ["x"]},
        ]
    }
    (tmp_path / "R.json").write_text(json.dumps(doc))
    script = ROOT / "benchmarks" / "tau_bench" / "agreement.py"
    done = subprocess.run(
        [sys.executable, str(script), "R.json", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    assert (figures["true_positive"], figures["false_positive"], figures["precision"]) == (
        1,
        1,
        0.5,
    )
    assert [d["case_id"] for d in figures["disagreements"]] == ["b"]
