"""Golden cases built from real conversations predict tau-bench's reward.

    python benchmarks/tau_bench/build_agreement.py TRAJECTORIES.json OUT_DIR [--json]

From the tau-bench trajectories (several trials per task): converts them to OTLP traces
(``convert.py``), runs ``tracegrade dataset build`` on one successful trial (reward 1) per
task, with the airline write tools as ``--exact-args`` and the lookups as ``--ignore-tool``,
then ``tracegrade score`` on the *other* trials of those tasks against the built cases (a
mapping file links each case to its task's other trials: tau-bench's simulated user words
each trial differently), and prints how
well pass/fail predicts each scored trial's own reward (accuracy, precision, recall; the
disagreements with their reasons). Nothing of tau-bench's gold labels goes into the cases:
only what the chosen trial's trace shows.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, from anywhere

from benchmarks.common import report  # noqa: E402
from benchmarks.tau_bench.agreement import confusion  # noqa: E402
from benchmarks.tau_bench.convert import WRITE_TOOLS, case_id, convert, trace_request  # noqa: E402
from tracegrade.cli import cli  # noqa: E402
from tracegrade.otlp.files import write_jsonl  # noqa: E402
from tracegrade.pipeline.reading import from_files  # noqa: E402

READ_TOOLS = ("get_*", "search_*", "list_*", "calculate", "think")
"""The airline lookups (tau_bench/envs/airline/tools): they cannot change the database, so the
reward does not depend on them, and the built cases do not expect them."""


def trace_ids_by_case(traces: Path) -> dict[str, str]:
    """``taskN-trialM`` -> trace id, from the converted traces' ``tracegrade.case_id``."""
    return {
        str(t.root_attributes["tracegrade.case_id"]): t.trace_id
        for t in from_files([traces]).traces
    }


def plan(records: list[dict[str, Any]]) -> tuple[dict[int, str], dict[int, list[str]]]:
    """Per task with a reward-1 trial: the first such trial (the source), and the others."""
    by_task: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for record in records:
        by_task[record["task_id"]].append(record)
    sources, others = {}, {}
    for task, trials in sorted(by_task.items()):
        good = [r for r in sorted(trials, key=lambda r: r["trial"]) if r["reward"] == 1.0]
        if good:
            sources[task] = case_id(good[0])
            others[task] = [case_id(r) for r in trials if r is not good[0]]
    return sources, others


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(cli, list(args))
    if result.exit_code not in (0, 1):
        raise SystemExit(f"tracegrade {' '.join(args)} failed: {result.output}")
    return result


def run(trajectories: Path, out: Path) -> dict[str, Any]:
    """Convert, build, score; returns the agreement figures (see the module docstring)."""
    records = json.loads(trajectories.read_text(encoding="utf-8"))
    convert(trajectories, out)
    traces = out / "traces.jsonl"
    ids = trace_ids_by_case(traces)
    sources, others = plan(records)
    exact = [arg for tool in WRITE_TOOLS for arg in ("--exact-args", tool)]
    exact += [arg for glob in READ_TOOLS for arg in ("--ignore-tool", glob)]
    picks = [arg for task in sources for arg in ("--trace-id", ids[sources[task]])]
    built = out / "built.yaml"
    built.unlink(missing_ok=True)
    invoke("dataset", "build", str(traces), "--out", str(built), *exact, *picks)
    mapping = {sources[task]: [ids[c] for c in others[task]] for task in sources}
    (out / "mapping.yaml").write_text(yaml.safe_dump(mapping), encoding="utf-8")
    scored = {c for task in others for c in others[task]}
    other_traces = out / "other-trials.jsonl"  # without the source trials themselves
    write_jsonl(other_traces, [trace_request(r) for r in records if case_id(r) in scored])
    report = out / "built-run.json"
    invoke(
        "score",
        str(other_traces),
        "--dataset",
        str(built),
        "--mapping",
        str(out / "mapping.yaml"),
        "--json",
        str(report),
        "--no-save",
    )
    reward = {ids[case_id(r)]: r["reward"] for r in records}
    return agreement(json.loads(report.read_text(encoding="utf-8")), reward)


def agreement(doc: dict[str, Any], reward: dict[str, float]) -> dict[str, Any]:
    """Confusion counts, accuracy, precision, recall of passed vs. the scored trial's reward."""
    scored = [case for case in doc["cases"] if case["trace_id"] is not None]
    outcomes = [(reward[case["trace_id"]] == 1.0, case["passed"]) for case in scored]
    disagreements = [
        {
            "case_id": case["case_id"],
            "trace_id": case["trace_id"],
            "reward": reward[case["trace_id"]],
            "passed": passed,
            "reasons": case["reasons"],
        }
        for case, (rewarded, passed) in zip(scored, outcomes, strict=True)
        if rewarded != passed
    ]
    figures = confusion(outcomes)
    return {
        "scored_trials": figures.pop("cases"),
        **figures,
        "disagreements": disagreements,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    return report(run(args.trajectories, args.out_dir), args.json, _table)


def _table(result: dict[str, Any]) -> None:
    print(
        f"built cases scored against {result['scored_trials']} other trials: "
        f"TP {result['true_positive']}  FP {result['false_positive']}  "
        f"TN {result['true_negative']}  FN {result['false_negative']}"
    )
    print(
        f"accuracy {result['accuracy']:.3f}  precision {result['precision']:.3f}  "
        f"recall {result['recall']:.3f}"
    )
    for case in result["disagreements"]:
        print(
            f"- {case['case_id']} vs trace {case['trace_id']}: reward {case['reward']}, "
            f"passed {case['passed']}: {'; '.join(case['reasons'][:4])}"
        )


if __name__ == "__main__":
    sys.exit(main())
