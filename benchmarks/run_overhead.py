"""Overhead of ``tracegrade run`` over the agent it drives.

    python benchmarks/run_overhead.py [--cases 50] [--concurrency 10] [--agent-s 0.2] [--json]

A scripted in-process agent awaits ``--agent-s`` seconds and emits a GenAI semconv turn
(``invoke_agent`` > ``chat`` + ``execute_tool``, five spans with the runner's case span).
``--cases`` cases run at ``--concurrency``; the ideal wall time is cases x agent-s /
concurrency (1 s by default). Reported:

- ``receiver_start_s``: starting the in-process OTLP receiver (gRPC + HTTP, store migrations);
- ``run_wall_s``: the runner's wall time from the first case started to the last scored, and
  ``ratio``: ``run_wall_s`` / (ideal + ``receiver_start_s``) (the issue's target: <= 1.5);
- ``command_s``: the whole run (receiver start, run, run document) as ``tracegrade run`` does it;
- tracegrade's own time per case (ms, p50 / p95): ``agent_overhead`` (the attempt's
  conversation beyond the agent's sleep: the case span, contextvars, the daemon thread or
  await, and the force-flush export to the receiver, acknowledged after commit),
  ``settle`` (polling the store until the case's trace has settled) and ``score``
  (loading, normalising and scoring the trace).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from opentelemetry import trace  # noqa: E402
from rich.console import Console  # noqa: E402

from benchmarks.common import report  # noqa: E402
from tracegrade.collector.receiver import Receiver, ReceiverConfig  # noqa: E402
from tracegrade.config import load_config  # noqa: E402
from tracegrade.dataset import load_dataset  # noqa: E402
from tracegrade.report.document import new_run_id  # noqa: E402
from tracegrade.runner.agents import PythonAgent  # noqa: E402
from tracegrade.runner.execute import RunPlan, Scoring  # noqa: E402
from tracegrade.runner.session import EvalRun, run_eval  # noqa: E402
from tracegrade.scoring import build_scorers, config_for  # noqa: E402

AGENT_S = 0.2


def _messages(role: str, text: str) -> str:
    return json.dumps([{"role": role, "parts": [{"type": "text", "content": text}]}])


async def agent(message: str) -> str:
    """The scripted agent: one model call that looks the answer up, then the answer."""
    tracer = trace.get_tracer("benchmarks.run_overhead")
    answer = f"The order {message.split()[-1]} ships tomorrow."
    with tracer.start_as_current_span(
        "invoke_agent bench",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "bench"},
    ):
        with tracer.start_as_current_span(
            "chat bench-model",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "bench-model",
                "gen_ai.usage.input_tokens": 120,
                "gen_ai.usage.output_tokens": 30,
                "gen_ai.input.messages": _messages("user", message),
            },
        ):
            await asyncio.sleep(AGENT_S)
        with tracer.start_as_current_span(
            "execute_tool lookup_order",
            attributes={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "lookup_order",
                "gen_ai.tool.call.arguments": json.dumps({"order": message.split()[-1]}),
                "gen_ai.tool.call.result": json.dumps({"ships": "tomorrow"}),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat bench-model",
            attributes={
                "gen_ai.operation.name": "chat",
                "gen_ai.request.model": "bench-model",
                "gen_ai.usage.input_tokens": 160,
                "gen_ai.usage.output_tokens": 12,
                "gen_ai.input.messages": _messages("user", message),
                "gen_ai.output.messages": _messages("assistant", answer),
            },
        ):
            pass
    return answer


def _dataset(folder: Path, cases: int) -> Path:
    path = folder / "bench.json"
    path.write_text(
        json.dumps(
            [
                {
                    "id": f"case-{i}",
                    "input": f"When does order A{i:04d} ship? A{i:04d}",
                    "expected_tools": ["lookup_order"],
                    "expected_fields": ["ships"],
                }
                for i in range(cases)
            ]
        )
    )
    return path


def _receiver_start_s(db: str) -> float:
    started = time.perf_counter()
    receiver = Receiver(ReceiverConfig(grpc_port=0, http_port=0, db=db)).start()
    elapsed = time.perf_counter() - started
    receiver.stop()
    return elapsed


def _pcts(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
    }


def run(cases: int = 50, concurrency: int = 10, agent_s: float = AGENT_S) -> dict[str, Any]:
    """Measure one run (see the module docstring); figures in s and ms."""
    global AGENT_S
    AGENT_S = agent_s
    with tempfile.TemporaryDirectory() as folder:
        dataset = load_dataset(_dataset(Path(folder), cases))
        receiver_s = _receiver_start_s(str(Path(folder) / "warm.db"))
        config = config_for(load_config(None), dataset)
        scoring = Scoring(
            build_scorers(config, ()), config, dataset.weights or config.weights, config.threshold
        )
        plan = RunPlan(new_run_id(), dataset.cases, concurrency=concurrency, timeout_s=30)
        started = time.perf_counter()
        quiet = Console(file=io.StringIO())
        doc = run_eval(
            EvalRun(
                dataset,
                plan,
                PythonAgent("benchmarks.run_overhead:agent", agent),
                scoring,
                progress_console=quiet,
            ),
            str(Path(folder) / "run.db"),
        )
        command_s = time.perf_counter() - started
    attempts = [a for c in doc.cases for a in c.attempts]
    ideal = cases * agent_s / concurrency
    runner = doc.head.summary.runner
    wall = runner.wall_s if runner else 0.0
    return {
        "cases": cases,
        "concurrency": concurrency,
        "agent_s": agent_s,
        "passed": doc.head.summary.passed,
        "ideal_s": round(ideal, 3),
        "receiver_start_s": round(receiver_s, 3),
        "run_wall_s": wall,
        "command_s": round(command_s, 3),
        "ratio": round(wall / (ideal + receiver_s), 3),
        "agent_overhead_ms": _pcts([a.agent_ms - agent_s * 1000 for a in attempts]),
        "settle_ms": _pcts([a.settle_ms for a in attempts]),
        "score_ms": _pcts([a.score_ms for a in attempts]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=50)
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--agent-s", type=float, default=AGENT_S)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.cases, args.concurrency, args.agent_s), args.json, _table)


def _table(figures: dict[str, Any]) -> None:
    print(
        f"{figures['cases']} cases x {figures['agent_s']} s at concurrency "
        f"{figures['concurrency']}: {figures['passed']} passed"
    )
    print(
        f"ideal {figures['ideal_s']} s + receiver start-up {figures['receiver_start_s']} s; run "
        f"wall {figures['run_wall_s']} s (ratio {figures['ratio']}); whole command "
        f"{figures['command_s']} s"
    )
    for key in ("agent_overhead_ms", "settle_ms", "score_ms"):
        print(f"{key:<20} p50 {figures[key]['p50']:>8} ms   p95 {figures[key]['p95']:>8} ms")


if __name__ == "__main__":
    raise SystemExit(main())
