"""Each scorer's agreement with tau-bench's reward, taken as the human label.

    python benchmarks/tau_bench/review_agreement.py TRAJECTORIES.json OUT_DIR [--json]

Converts the trajectories (``convert.py``: OTLP traces and a golden dataset), imports the
traces into a fresh store ``OUT_DIR/store.db``, writes each trajectory's reward as a label
(``OUT_DIR/labels.jsonl``: pass when the reward is 1; reviewer ``tau-bench``) and takes it in
with ``tracegrade review import``, then runs ``tracegrade agreement --dataset`` and prints its
rows as a Markdown table (``--json``: the report).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from click.testing import CliRunner

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, from anywhere

from benchmarks.tau_bench.convert import case_id, convert  # noqa: E402
from tracegrade.cli import cli  # noqa: E402
from tracegrade.pipeline.reading import from_files  # noqa: E402


def _run(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})
    if result.exit_code != 0:
        raise SystemExit(f"tracegrade {' '.join(args)} failed:\n{result.output}")
    return result.output


def labels(records: list[dict[str, Any]], traces: Path) -> list[dict[str, Any]]:
    """One label line per trajectory: its trace, pass iff the reward is 1."""
    ids = {
        str(t.root_attributes["tracegrade.case_id"]): t.trace_id
        for t in from_files([traces]).traces
    }
    return [
        {
            "trace_ids": [ids[case_id(r)]],
            "reviewer": "tau-bench",
            "verdict": "pass" if r["reward"] == 1.0 else "fail",
            "note": f"tau-bench reward {r['reward']}",
        }
        for r in records
    ]


def measure(trajectories: Path, out: Path) -> dict[str, Any]:
    """The ``tracegrade agreement`` report of the trajectories (see the module docstring)."""
    convert(trajectories, out)
    db = str(out / "store.db")
    Path(db).unlink(missing_ok=True)
    _run("import", str(out / "traces.jsonl"), "--db", db)
    records = json.loads(trajectories.read_text(encoding="utf-8"))
    with open(out / "labels.jsonl", "w", encoding="utf-8") as lines:
        for line in labels(records, out / "traces.jsonl"):
            lines.write(json.dumps(line) + "\n")
    _run("review", "import", str(out / "labels.jsonl"), "--db", db)
    report_path = out / "agreement.json"
    _run(
        "agreement", "--db", db, "--dataset", str(out / "dataset.yaml"), "--json", str(report_path)
    )
    report: dict[str, Any] = json.loads(report_path.read_text(encoding="utf-8"))
    return report


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def markdown(report: dict[str, Any]) -> str:
    """The label rows as a Markdown table."""
    lines = [
        "| rater | n | accuracy | fail precision | fail recall | Cohen's kappa [95% CI] |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for row in report["rows"]:
        if row["reference"] != "labels":
            continue
        interval = (
            ""
            if row["kappa_low"] is None
            else f" [{_num(row['kappa_low'])}, {_num(row['kappa_high'])}]"
        )
        lines.append(
            f"| {row['rater']} | {row['n']} | {_num(row['accuracy'])} | {_num(row['precision'])} "
            f"| {_num(row['recall'])} | {_num(row['kappa'])}{interval} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", type=Path)
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    report = measure(args.trajectories, args.out_dir)
    print(json.dumps(report, indent=2) if args.json else markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
