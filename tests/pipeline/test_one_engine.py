"""Issue 24: one engine behind every face. On the README's main job (100 real tau-bench
GPT-4o conversations and their golden dataset), ``tracegrade score --json``, the Python API
(``tracegrade.evaluate_dataset``) and a pytest-plugin session over the same cases give the
same cases, verdicts and summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from benchmarks.tau_bench.convert import convert
from tracegrade import evaluate_dataset, from_files, load_dataset
from tracegrade.cli import cli
from tracegrade.report.document import case_entry
from tracegrade.run_document import RunDocument

# Loaded here so pytester's in-process run finds numpy and scipy already imported.
import tracegrade.pytest_plugin.evals  # noqa: F401,E402  isort: skip

pytest_plugins = ["pytester"]

TAU = Path(__file__).parents[2] / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
VOLATILE = ("usage",)  # wall-clock durations of scoring, not of the traces: equal anyway


@pytest.fixture(scope="module")
def main_job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tau")
    convert(TAU, out)
    return out


@pytest.fixture(scope="module")
def from_cli(main_job: Path) -> dict:
    path = main_job / "R.json"
    result = CliRunner().invoke(
        cli,
        [
            "score",
            str(main_job / "traces.jsonl"),
            "--dataset",
            str(main_job / "dataset.yaml"),
            "--json",
            str(path),
            "--no-save",
        ],
    )
    assert result.exit_code in (0, 1), result.output
    return json.loads(path.read_text())


def _cases(cases: list[dict]) -> list[dict]:
    return sorted(cases, key=lambda c: str(c["case_id"]))


def test_the_python_api_gives_the_same_cases_and_summary(main_job, from_cli):
    traces = from_files([main_job / "traces.jsonl"]).traces
    run = evaluate_dataset(traces, load_dataset(main_job / "dataset.yaml"))
    api_cases = [case_entry(r).model_dump(mode="json", exclude_unset=True) for r in run.results]
    assert _cases(api_cases) == _cases(from_cli["cases"])
    summary = from_cli["summary"]
    assert run.summary.passed == summary["passed"] and run.summary.results == summary["results"]
    assert run.summary.score == summary["score"]
    assert dict(run.summary.axes) == summary["axes"]


PLUGIN_TEST = """
import pytest
from tracegrade import from_files

TRACES = {{t.root_attributes["tracegrade.case_id"]: t for t in from_files([{traces!r}]).traces}}

@pytest.mark.tracegrade(dataset={dataset!r})
def test_case(tracegrade, tracegrade_case):
    tracegrade.check(tracegrade_case, traces=[TRACES[tracegrade_case.id]])
"""


def _masked(doc: dict) -> dict:
    """The document without what differs between two runs of the same traces by design: the
    run's id and time, where its traces came from (the file, or ``pytest``) and the git commit
    of the working directory (pytester's is outside the repository)."""
    volatile = ("run_id", "created_at", "trace_source", "git_sha")
    run = {k: v for k, v in doc["run"].items() if k not in volatile}
    return {**doc, "run": run, "cases": _cases(doc["cases"])}


def test_a_pytest_session_writes_the_document_score_writes(
    pytester, monkeypatch, main_job, from_cli
):
    """Issue 39 item 2: a pytest session's run goes through score's run session (open, score
    each case, summarise, finish: document written, compared, export closed, gate published):
    the same document as ``score --json`` on the same traces (the evaluator included), and the
    gate published once for the session (the step summary), not once per case."""
    pytester.makepyfile(
        PLUGIN_TEST.format(
            traces=str(main_job / "traces.jsonl"), dataset=str(main_job / "dataset.yaml")
        )
    )
    out = pytester.path / "session.json"
    step_summary = pytester.path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))
    pytester.runpytest_inprocess("-q", "-p", "no:cacheprovider", f"--tracegrade-json={out}")
    doc = json.loads(out.read_text())
    RunDocument.from_json(doc)  # both faces write a valid tracegrade.run/1 document
    assert doc["run"]["trace_source"] == "pytest"
    assert _masked(doc) == _masked(from_cli)
    assert step_summary.read_text(encoding="utf-8").count("### tracegrade:") == 1
