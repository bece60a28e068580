"""``tracegrade score --baseline``: only the traces of the cases whose result changed are kept
for the structural diffs (issue 16: memory flat in the number of traces), with the comparison
of a run that kept every trace, with one worker or several."""

from __future__ import annotations

import gc
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from benchmarks.tau_bench.convert import convert
from tracegrade.cli import cli
from tracegrade.compare import RegressionRules
from tracegrade.compare.run_cases import ComparedCases
from tracegrade.config import load_config
from tracegrade.dataset import load_dataset
from tracegrade.pipeline import _score, gate
from tracegrade.pipeline.gate import BaselineTraces, compare_with_base
from tracegrade.pipeline.reading import from_files, iter_from_files
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.results import CaseResult
from tracegrade.scoring.streaming import stream_results

ROOT = Path(__file__).parents[2]
TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
FLIPPED = (3, 41, 77)
"""The cases whose pass/fail the baseline flips: the only ones that change."""


@pytest.fixture(scope="module")
def tau(tmp_path_factory) -> dict[str, Any]:
    """100 tau-bench traces, their dataset, the run document of scoring them, and a baseline:
    that document with the :data:`FLIPPED` cases' pass/fail flipped."""
    out = tmp_path_factory.mktemp("tau")
    assert convert(TAU, out) == (100, 100)
    report = out / "run.json"
    args = ["score", str(out / "traces.jsonl"), "--dataset", str(out / "dataset.yaml")]
    result = CliRunner().invoke(cli, [*args, "--json", str(report), "--no-save"])
    assert result.exit_code == 1, result.output
    base = json.loads(report.read_text())
    for n in FLIPPED:
        base["cases"][n]["passed"] = not base["cases"][n]["passed"]
    (out / "base.json").write_text(json.dumps(base))
    return {"dir": out, "args": args, "base": base}


def gated(
    tau: dict[str, Any], monkeypatch, *extra: str, base: Path | None = None
) -> dict[str, Any]:
    """``score --baseline`` of the tau traces (against ``base``, default the fixture's): the
    run document, and what the gate compared (the traces preloaded, the comparison)."""
    seen: dict[str, Any] = {}

    def compare(doc, base, **kwargs):
        seen["preloaded"] = dict(kwargs["preloaded"])
        seen["comparison"] = compare_with_base(doc, base, **kwargs)
        return seen["comparison"]

    monkeypatch.setattr(gate, "compare_with_base", compare)
    report = tau["dir"] / f"gated{len(extra)}.json"
    base = base or tau["dir"] / "base.json"
    args = [*tau["args"], "--json", str(report), "--no-save", "--baseline", str(base), *extra]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 1, result.output
    return {**seen, "doc": json.loads(report.read_text())}


def comparison_json(found: dict[str, Any]) -> dict[str, Any]:
    """The comparison's JSON but for the current run's id and time (new each run)."""
    data = found["comparison"].to_json()
    new = ("run_id", "created_at")
    data["current"] = {k: v for k, v in data["current"].items() if k not in new}
    return data


def assert_compared_as_with_every_trace(tau: dict[str, Any], base: dict, found: dict) -> None:
    """The comparison ``score --baseline`` made is the one it made when it kept every trace."""
    every = {t.trace_id: t for t in from_files([tau["dir"] / "traces.jsonl"]).traces}
    config = config_for(load_config(None), load_dataset(tau["dir"] / "dataset.yaml"))
    before = compare_with_base(
        found["doc"], (base, False), dbs=[None], config=config, alpha=None, preloaded=every
    )
    assert found["comparison"].to_json() == before.to_json()


def test_only_the_changed_cases_traces_are_preloaded_and_the_comparison_is_unchanged(
    tau, monkeypatch
):
    tables = set(Path(tempfile.gettempdir()).glob("tracegrade-compare-*"))
    found = gated(tau, monkeypatch)
    flipped = {tau["base"]["cases"][n]["trace_id"] for n in FLIPPED}
    assert set(found["preloaded"]) == flipped  # of 100 traces scored
    # neither run's cases held: read from a temporary file, deleted once the command is done
    assert isinstance(found["comparison"].cases, ComparedCases)
    gc.collect()
    assert set(Path(tempfile.gettempdir()).glob("tracegrade-compare-*")) == tables
    diffed = [c for c in found["comparison"].cases if c.diff is not None]
    assert len(diffed) == 3 and all(c.diff.source == "traces" for c in diffed)
    assert_compared_as_with_every_trace(tau, tau["base"], found)


def test_a_base_trace_the_run_scored_for_another_case_is_read_again(tau, monkeypatch):
    """BASE diffs case 3 with the trace the run scores for case 50 (unchanged, not kept
    while the run streams): it is read again from the file."""
    base = json.loads(json.dumps(tau["base"]))
    other = base["cases"][50]["trace_id"]
    base["cases"][3]["trace_id"] = other
    (tau["dir"] / "moved.json").write_text(json.dumps(base))
    found = gated(tau, monkeypatch, base=tau["dir"] / "moved.json")
    assert set(found["preloaded"]) == {base["cases"][n]["trace_id"] for n in (41, 77)} | {
        other,
        found["doc"]["cases"][3]["trace_id"],
    }
    case = next(c for c in found["comparison"].cases if c.diff and c.diff.base_trace_id == other)
    assert case.diff.source == "traces"
    assert_compared_as_with_every_trace(tau, base, found)


def test_two_workers_give_the_comparison_one_gives(tau, monkeypatch):
    one = gated(tau, monkeypatch)
    two = gated(tau, monkeypatch, "--workers", "2")
    assert two["preloaded"].keys() == one["preloaded"].keys()
    assert comparison_json(two) == comparison_json(one)
    assert two["doc"]["cases"] == one["doc"]["cases"]


def test_the_stream_keeps_only_the_traces_of_changed_results(tau):
    """While 100 traces are scored, only the 3 whose result changed are held."""
    dataset = load_dataset(tau["dir"] / "dataset.yaml")
    config = config_for(load_config(None), dataset)
    keeper = BaselineTraces(tau["base"], RegressionRules())
    taken: list[str] = []
    take = keeper.take

    def counting(trace_id, trace):
        taken.append(trace_id)
        take(trace_id, trace)

    keeper.take = counting  # type: ignore[method-assign]
    batches = iter_from_files([tau["dir"] / "traces.jsonl"], batch_size=10)
    stream_results(batches, dataset, build_scorers(config), config, lambda _: None, keeper=keeper)
    assert len(taken) == 100
    assert set(keeper.kept) == {tau["base"]["cases"][n]["trace_id"] for n in FLIPPED}


def _result(case_id: str, trace_id: str, score: float) -> CaseResult:
    return CaseResult(case_id, trace_id, True, score, {}, ())


def _doc(*results: CaseResult) -> dict[str, Any]:
    cases = [
        {"case_id": r.case_id, "trace_id": r.trace_id, "passed": r.passed, "score": r.score}
        for r in results
    ]
    return {"run": {}, "summary": {}, "cases": cases}


def test_a_case_scored_twice_has_the_trace_it_is_diffed_with_read_again(tau):
    """Two results for a case: the representative one (the lower of the two middle ones) is
    unchanged alone, but the case's median score improved: its trace, not kept while the run
    streamed, is read again after it; the other one is not handed on."""
    traces = from_files([tau["dir"] / "traces.jsonl"]).traces
    base_trace, low, high = (t.trace_id for t in traces[:3])
    keeper = BaselineTraces(_doc(_result("a", base_trace, 0.5)), RegressionRules())
    scored = [(traces[1], _result("a", low, 0.5)), (traces[2], _result("a", high, 0.9))]
    for trace, result in scored:
        keeper.take(trace.trace_id, trace if keeper.wants(trace.trace_id, [result]) else None)
    assert list(keeper.kept) == [high]
    asked: list[set[str]] = []

    def read_again(ids: set[str]) -> dict[str, Any]:
        asked.append(ids)
        return {t.trace_id: t for t in traces if t.trace_id in ids}

    current = _doc(_result("a", low, 0.5), _result("a", high, 0.9))
    assert keeper.preloaded(current, read_again) == {low: traces[1]}
    assert asked == [{low}]


@pytest.mark.parametrize("defer", [False, True])
def test_traces_read_again_are_those_the_run_read(tau, defer):
    traces = from_files([tau["dir"] / "traces.jsonl"]).traces
    wanted = {traces[5].trace_id, traces[60].trace_id, "not-in-the-file"}
    found = _score._read_again([str(tau["dir"] / "traces.jsonl")], "messages", defer, wanted)
    assert found == {traces[5].trace_id: traces[5], traces[60].trace_id: traces[60]}
