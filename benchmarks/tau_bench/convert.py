"""Convert tau-bench trajectories to OTLP traces and a golden dataset.

    python benchmarks/tau_bench/convert.py TRAJECTORIES.json OUT_DIR

writes ``OUT_DIR/traces.jsonl`` (OTLP/JSON, Collector file format: one trace per
trajectory, GenAI-semconv spans; the root carries ``tracegrade.case_id``) and
``OUT_DIR/dataset.yaml`` (one case per trajectory).

tau-bench's reward is 1 when replaying the agent's actions leaves the database exactly as
replaying the task's gold actions does, and every ``outputs`` value appears in one of the
agent's replies (lowercased, commas removed). So each case carries:

- the gold **write** actions (they change the database) as ``expected_tool_calls`` with exact
  arguments, ``required`` (a missing or different one fails the case);
- every write tool as ``strict_tools``: a performed write that is not one of the gold ones
  changes the database (failed calls change nothing, so they do not count);
- the task's ``outputs`` as ``must_contain`` over every reply, i.e. every assistant turn
  without a tool call (``contain_scope: replies``), as tau-bench checks its "respond" actions;
- the gold read actions, which cannot change the database and so do not affect the reward,
  in ``metadata.read_actions``, with the recorded ``reward`` and the task id.

The dataset passes a case at score 1.0 over correctness and must_contain.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import yaml

from tracegrade.otlp.files import write_jsonl
from tracegrade.otlp.transcripts import to_request

WRITE_TOOLS = (
    "book_reservation",
    "cancel_reservation",
    "send_certificate",
    "update_reservation_baggages",
    "update_reservation_flights",
    "update_reservation_passengers",
)
"""tau-bench airline tools that change the database (tau_bench/envs/airline/tools)."""
MODEL = "gpt-4o"
"""The recording is historical_trajectories/gpt-4o-airline.json; messages carry no model."""


def case_id(record: dict[str, Any]) -> str:
    return f"task{record['task_id']}-trial{record['trial']}"


def case_for(record: dict[str, Any]) -> dict[str, Any]:
    """The golden case of one trajectory (see the module docstring)."""
    task = record["info"]["task"]
    actions = task["actions"]
    writes = [a for a in actions if a["name"] in WRITE_TOOLS]
    first_user = next(m["content"] for m in record["traj"] if m["role"] == "user")
    case: dict[str, Any] = {
        "id": case_id(record),
        "input": first_user,
        "expected_tool_calls": [
            {"name": a["name"], "arguments": a["kwargs"], "required": True} for a in writes
        ],
        "strict_tools": list(WRITE_TOOLS),
        "tags": ["tau-bench", "airline"],
        "metadata": {
            "task_id": record["task_id"],
            "trial": record["trial"],
            "reward": record["reward"],
            "user_id": task.get("user_id"),
            "read_actions": [a for a in actions if a["name"] not in WRITE_TOOLS],
        },
    }
    if task.get("outputs"):
        case["must_contain"] = [str(o) for o in task["outputs"]]
        case["contain_scope"] = "replies"
    return case


def trace_request(record: dict[str, Any]) -> Any:
    """The OTLP request of one trajectory, its root tagged with the case id."""
    tagged = {**record, "model": MODEL, "tracegrade.case_id": case_id(record)}
    return to_request(tagged, messages_key="traj")


def convert(trajectories: Path, out_dir: Path) -> tuple[int, int]:
    """Write traces.jsonl and dataset.yaml; returns (traces, cases)."""
    records = json.loads(trajectories.read_text(encoding="utf-8"))
    out_dir.mkdir(parents=True, exist_ok=True)
    traces = write_jsonl(out_dir / "traces.jsonl", [trace_request(r) for r in records])
    dataset = {
        "name": "tau-bench-airline-gpt-4o",
        "description": f"From {trajectories.name}: one case per tau-bench trajectory "
        "(see benchmarks/tau_bench).",
        "threshold": 1.0,
        "weights": {"correctness": 1.0, "hallucination": 1.0},
        "cases": [case_for(r) for r in records],
    }
    with open(out_dir / "dataset.yaml", "w", encoding="utf-8") as out:
        yaml.safe_dump(dataset, out, sort_keys=False, allow_unicode=True, width=120)
    return traces, len(dataset["cases"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trajectories", type=Path)
    parser.add_argument("out_dir", type=Path)
    args = parser.parse_args(argv)
    traces, cases = convert(args.trajectories, args.out_dir)
    print(
        f"wrote {traces} traces to {args.out_dir / 'traces.jsonl'} and {cases} cases to "
        f"{args.out_dir / 'dataset.yaml'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
