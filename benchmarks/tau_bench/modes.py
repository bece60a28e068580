"""How each trajectory match mode's pass/fail agrees with tau-bench's own reward.

    python benchmarks/tau_bench/modes.py [TRAJECTORIES.json] [--limit N] [--json]

scores the recorded tau-bench trajectories (default: datasets/tau-bench, 100 GPT-4o airline
conversations) once per variant of their golden dataset and prints, for each variant, the
accuracy, precision and recall of "passed" as a predictor of ``reward == 1`` (agreement.py's
confusion). Every variant keeps the task's ``outputs`` as ``must_contain`` (tau-bench's
"respond" check) and the pass rule of convert.py (threshold 1.0 over correctness and
must_contain); only the trajectory changes:

- ``gold``: ``writes`` expects the task's gold write actions, ``required``, every write tool
  strict (convert.py's case: tau-bench's reward compares the database the writes leave);
  ``all`` expects every gold action, reads too, with nothing required or strict: the
  expected trajectory as LangChain agentevals, Google ADK or AgentCore would be given it;
- ``tool_calls_match``: ``exact``, ``in_order``, ``any_order``, ``superset``, ``subset``;
- ``arguments_match``: ``exact``, ``subset``, ``superset``, ``ignore``.

The traces are read and normalised once; each variant is one
:func:`tracegrade.evaluate_dataset` call, as ``tracegrade score`` scores.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, from anywhere

from benchmarks.common import report  # noqa: E402
from benchmarks.tau_bench.agreement import confusion  # noqa: E402
from benchmarks.tau_bench.convert import case_for, trace_request  # noqa: E402
from tracegrade import evaluate_dataset  # noqa: E402
from tracegrade.dataset import load_dataset_text  # noqa: E402
from tracegrade.normalize import normalize_all  # noqa: E402
from tracegrade.otlp.codec import spans_from_request  # noqa: E402
from tracegrade.trace import AgentTrace  # noqa: E402

TAU = Path(__file__).resolve().parents[2] / "datasets" / "tau-bench"
DEFAULT = TAU / "gpt-4o-airline-even-tasks.json"
GOLDS = ("writes", "all")
TOOL_MODES = ("exact", "in_order", "any_order", "superset", "subset")
ARGUMENT_MODES = ("exact", "subset", "superset", "ignore")


def variant_case(record: dict[str, Any], gold: str, tools: str, arguments: str) -> dict[str, Any]:
    """convert.py's case of ``record`` with the trajectory of one variant (module docstring)."""
    case = case_for(record)
    if gold == "all":
        actions = record["info"]["task"]["actions"]
        case["expected_tool_calls"] = [
            {"name": a["name"], "arguments": a["kwargs"]} for a in actions
        ]
        del case["strict_tools"]
    case["tool_calls_match"] = tools
    case["arguments_match"] = arguments
    return case


def variant_dataset(
    records: Sequence[dict[str, Any]], gold: str, tools: str, arguments: str
) -> dict[str, Any]:
    """The golden dataset of one variant, with convert.py's pass rule."""
    return {
        "name": f"tau-bench-{gold}-{tools}-{arguments}",
        "threshold": 1.0,
        "weights": {"correctness": 1.0, "hallucination": 1.0},
        "cases": [variant_case(r, gold, tools, arguments) for r in records],
    }


def traces_of(records: Sequence[dict[str, Any]]) -> list[AgentTrace]:
    """The normalised trace of each trajectory, its root tagged with the case id."""
    return [t for r in records for t in normalize_all(spans_from_request(trace_request(r)))]


def measure(
    records: Sequence[dict[str, Any]],
    variants: Iterable[tuple[str, str, str]] | None = None,
) -> list[dict[str, Any]]:
    """One row per ``(gold, tool_calls_match, arguments_match)`` variant (default: all 40):
    the variant and agreement.py's confusion figures of its pass/fail against the reward."""
    traces = traces_of(records)
    rewarded = {case_for(r)["id"]: r["reward"] == 1.0 for r in records}
    rows = []
    grid = itertools.product(GOLDS, TOOL_MODES, ARGUMENT_MODES)
    for gold, tools, arguments in variants if variants is not None else grid:
        text = json.dumps(variant_dataset(records, gold, tools, arguments))
        dataset = load_dataset_text(text, ".json", f"{gold}-{tools}-{arguments}.json")
        result = evaluate_dataset(traces, dataset, judge=False)
        outcomes = [(rewarded[c.case_id or ""], c.passed) for c in result.results]
        rows.append(
            {
                "gold": gold,
                "tool_calls_match": tools,
                "arguments_match": arguments,
                "passed": sum(c.passed for c in result.results),
                **confusion(outcomes),
            }
        )
    return rows


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def table(rows: list[dict[str, Any]]) -> None:
    """The figures as a Markdown table (docs/guides/trajectories.md)."""
    print("| gold | tool_calls_match | arguments_match | passed | accuracy | precision | recall |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['gold']} | `{row['tool_calls_match']}` | `{row['arguments_match']}` | "
            f"{row['passed']}/{row['cases']} | {_ratio(row['accuracy'])} | "
            f"{_ratio(row['precision'])} | {_ratio(row['recall'])} |"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", type=Path, nargs="?", default=DEFAULT)
    parser.add_argument("--limit", type=int, help="only the first N trajectories")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    records = json.loads(args.trajectories.read_text(encoding="utf-8"))[: args.limit]
    return report(measure(records), args.json, table)


if __name__ == "__main__":
    sys.exit(main())
