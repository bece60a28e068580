"""How well tracegrade's pass/fail predicts tau-bench's own reward.

    python benchmarks/tau_bench/agreement.py R.json

reads the run document written by ``tracegrade score ... --json R.json`` on the output of
``convert.py`` (each case carries ``metadata.reward``) and prints accuracy, precision and
recall of "passed" as a predictor of ``reward == 1``, then every disagreement with its
reasons. ``--json`` prints the figures as JSON instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, from anywhere

from benchmarks.common import report  # noqa: E402


def confusion(outcomes: Iterable[tuple[bool, bool]]) -> dict[str, Any]:
    """Confusion counts, accuracy, precision and recall of ``(rewarded, passed)`` pairs, with
    "passed" predicting "rewarded" (a ratio is None when its denominator is 0)."""
    tp = fp = tn = fn = 0
    for rewarded, passed in outcomes:
        tp, fp = tp + (rewarded and passed), fp + (passed and not rewarded)
        tn, fn = tn + (not passed and not rewarded), fn + (rewarded and not passed)
    total = tp + fp + tn + fn
    return {
        "cases": total,
        "true_positive": tp,
        "false_positive": fp,
        "true_negative": tn,
        "false_negative": fn,
        "accuracy": (tp + tn) / total if total else None,
        "precision": tp / (tp + fp) if tp + fp else None,
        "recall": tp / (tp + fn) if tp + fn else None,
    }


def agreement(doc: dict[str, Any]) -> dict[str, Any]:
    """Confusion counts, accuracy, precision, recall, and the disagreeing cases."""
    outcomes = [(c["metadata"]["reward"] == 1.0, c["passed"]) for c in doc["cases"]]
    disagreements = [
        {
            "case_id": case["case_id"],
            "reward": case["metadata"]["reward"],
            "passed": passed,
            "reasons": case["reasons"],
        }
        for case, (rewarded, passed) in zip(doc["cases"], outcomes, strict=True)
        if rewarded != passed
    ]
    return {**confusion(outcomes), "disagreements": disagreements}


def load_run_document(path: Path) -> dict[str, Any]:
    """The run document at ``path``; ValueError with one line saying why it cannot be read
    (missing, because the score command failed before writing it; not JSON; not a run document)."""
    if not path.is_file():
        raise ValueError(
            f"{path} does not exist: the score command did not write it (see its error above)"
        )
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not a readable JSON run document: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cases"), list):
        raise ValueError(
            f'{path} is not a run document (no "cases" list): write it with score --json'
        )
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_json", type=Path)
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    try:
        document = load_run_document(args.run_json)
    except ValueError as exc:
        print(f"agreement: {exc}", file=sys.stderr)
        return 2
    return report(agreement(document), args.json, _table)


def _table(result: dict[str, Any]) -> None:
    print(
        f"cases {result['cases']}: TP {result['true_positive']}  FP {result['false_positive']}  "
        f"TN {result['true_negative']}  FN {result['false_negative']}"
    )
    print(
        f"accuracy {result['accuracy']:.3f}  precision {result['precision']:.3f}  recall "
        f"{result['recall']:.3f}"
    )
    for case in result["disagreements"]:
        print(
            f"- {case['case_id']}: reward {case['reward']}, passed {case['passed']}: "
            f"{'; '.join(case['reasons'][:4])}"
        )


if __name__ == "__main__":
    sys.exit(main())
