"""Overhead of ``tracegrade run --agent-cmd`` per case, over the agent process's own time.

    python benchmarks/command_overhead.py [--cases 10] [--json]

The agent is :mod:`benchmarks.agents.echo_agent` (a process that exports one GenAI turn over
OTLP/HTTP and exits). ``--cases`` cases run one at a time, twice in the same run:

- ``exit signal``: as shipped: the case's traces settle once the process has exited and
  they have their agent span (``SettleRule.done_when_ended``);
- ``quiet period``: the rule without that signal (the 0.2 s quiet period), as before issue 16.5.

Reported per mode (ms, p50 / p95 over cases): ``agent`` (the process's wall time: the
baseline), ``settle`` and ``score`` (tracegrade's own time per case), and ``overhead_ms``
(settle + score, p50) with ``x_agent`` (overhead / agent time).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any
from unittest import mock

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from click.testing import CliRunner  # noqa: E402

from benchmarks.common import report  # noqa: E402
from tracegrade.cli import cli  # noqa: E402
from tracegrade.runner.agents import command  # noqa: E402

AGENT = f"{sys.executable} {ROOT / 'benchmarks' / 'agents' / 'echo_agent.py'}"


def _pcts(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


def _run(dataset: Path, out: Path) -> list[dict[str, Any]]:
    args = ["run", str(dataset), "--agent-cmd", AGENT, "--json", str(out), "--no-save"]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    if result.exit_code != 0:
        raise RuntimeError(result.output)
    return [a for case in json.loads(out.read_text())["cases"] for a in case["attempts"]]


def _without_exit_signal() -> Any:
    original = command.CommandAgent.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.settle = dataclasses.replace(self.settle, done_when_ended=False)

    return mock.patch.object(command.CommandAgent, "__init__", init)


def run(cases: int = 10) -> dict[str, dict[str, Any]]:
    """Figures per mode (see the module docstring)."""
    work = Path(tempfile.mkdtemp(prefix="tracegrade-cmd-"))
    dataset = work / "dataset.yaml"
    rows = [
        {"id": f"c{n}", "input": f"Where is order A{n}?", "must_contain": [f"A{n}"]}
        for n in range(cases)
    ]
    dataset.write_text(yaml.safe_dump({"name": "echo", "cases": rows}))
    figures = {}
    for mode in ("exit signal", "quiet period"):
        if mode == "exit signal":
            attempts = _run(dataset, work / "exit.json")
        else:
            with _without_exit_signal():
                attempts = _run(dataset, work / "quiet.json")
        agent = _pcts([a["agent_ms"] for a in attempts])
        settle = _pcts([a["settle_ms"] for a in attempts])
        score = _pcts([a["score_ms"] for a in attempts])
        overhead = settle["p50"] + score["p50"]
        figures[mode] = {
            "agent_ms": agent,
            "settle_ms": settle,
            "score_ms": score,
            "overhead_ms": round(overhead, 1),
            "x_agent": round(overhead / agent["p50"], 3),
        }
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.cases), args.json, _table)


def _table(figures: dict[str, Any]) -> None:
    print(
        f"{'mode':<14}{'agent p50':>10}{'settle p50':>11}{'score p50':>10}"
        f"{'overhead':>9}{'x agent':>8}"
    )
    for mode, f in figures.items():
        print(
            f"{mode:<14}{f['agent_ms']['p50']:>10}{f['settle_ms']['p50']:>11}"
            f"{f['score_ms']['p50']:>10}{f['overhead_ms']:>9}{f['x_agent']:>8}"
        )


if __name__ == "__main__":
    sys.exit(main())
