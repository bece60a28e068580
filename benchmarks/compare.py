"""Time to compare two stored runs: ``tracegrade compare BASE CURRENT`` must stay interactive.

    python benchmarks/compare.py [--cases 10000] [--repeat 3] [--rounds 3] [--json]

Builds two run documents of ``--cases`` cases with ``--repeat`` attempts each (realistic case
entries: scores, axes, usage, value-grounding details; about 10% of the cases change between
the runs, 5% flaky), stores both in a fresh SQLite store, then times, as the median of
``--rounds``: loading both runs back (``load_run``), and ``compare_runs`` (pairing, the
vectorised per-case Wilcoxon tests, the run-level test, structural diffs from the case
results). Reported: seconds for each stage, the total, microseconds per case, and the process
CPU time of both stages (the wall time on a machine shared with other work, where the CPU time
is what an idle machine's wall time would be).
The target on the 2-core CI machine: total under 2 s for 10,000 cases x 3 repeats.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tracegrade.compare import compare_runs  # noqa: E402
from tracegrade.store.runs import load_run, save_run  # noqa: E402
from tracegrade.store.traces import Store  # noqa: E402


def _case(i: int, attempts: list[float], rng: random.Random) -> dict[str, Any]:
    score = statistics.median(attempts)
    ungrounded = [{"kind": "price", "text": f"${rng.randint(1, 999)}.99"}] if score < 0.7 else []
    return {
        "case_id": f"case-{i:05d}",
        "trace_id": f"{i:032x}",
        "passed": score >= 0.7,
        "score": score,
        "scores": {"tool_correctness": score, "value_grounding": 1.0 if not ungrounded else 0.5},
        "axes": {"correctness": score, "groundedness": 1.0, "completeness": score},
        "reasons": [] if score >= 0.7 else ["value_grounding: 1/2 values grounded"],
        "tags": ["orders" if i % 2 else "products"],
        "usage": {
            "duration_ms": rng.uniform(200, 4000),
            "input_tokens": rng.randint(200, 4000),
            "output_tokens": rng.randint(20, 400),
            "cost_usd": rng.uniform(0.0001, 0.01),
        },
        "details": {"value_grounding": {"value": 1.0, "details": {"ungrounded": ungrounded}}},
        "attempts": [{"repeat": r, "passed": s >= 0.7, "score": s} for r, s in enumerate(attempts)],
        "flaky": len({s >= 0.7 for s in attempts}) > 1,
    }


def documents(cases: int, repeat: int, seed: int = 7) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two run documents (see the module docstring)."""
    rng = random.Random(seed)
    base, current = [], []
    for i in range(cases):
        before = [rng.choice((0.9, 0.95, 1.0)) for _ in range(repeat)]
        roll = rng.random()
        if roll < 0.05:
            after = [0.3 if r % 2 else 0.95 for r in range(repeat)]  # flaky
        elif roll < 0.15:
            after = [rng.choice((0.3, 0.4, 0.5)) for _ in range(repeat)]  # regressed
        else:
            after = list(before)
        base.append(_case(i, before, rng))
        current.append(_case(i, after, rng))
    return _doc("base", base, repeat), _doc("current", current, repeat)


def _doc(run_id: str, cases: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    scores = [c["score"] for c in cases]
    return {
        "schema_version": "tracegrade.run/1",
        "run": {
            "run_id": run_id,
            "dataset": {"name": "bench", "digest": "x"},
            "passed": True,
            "repeat": repeat,
        },
        "summary": {"score": sum(scores) / len(scores), "axes": {}, "scorers": {}},
        "cases": cases,
    }


def run(cases: int = 10_000, repeat: int = 3, rounds: int = 3) -> dict[str, Any]:
    """Store two runs and time loading and comparing them; returns the figures."""
    base, current = documents(cases, repeat)
    loads, compares, cpu, regressed = [], [], [], 0
    with tempfile.TemporaryDirectory() as folder, Store(Path(folder) / "bench.db") as store:
        save_run(store, base)
        save_run(store, current)
        for _ in range(rounds):
            started, cpu_started = time.perf_counter(), time.process_time()
            old, new = load_run(store, "base"), load_run(store, "current")
            loaded = time.perf_counter()
            comparison = compare_runs(old, new)
            done = time.perf_counter()
            cpu.append(time.process_time() - cpu_started)
            loads.append(loaded - started)
            compares.append(done - loaded)
            regressed = comparison.counts()["regressed"]
    load_s, compare_s = statistics.median(loads), statistics.median(compares)
    return {
        "cases": cases,
        "repeat": repeat,
        "load_s": round(load_s, 3),
        "compare_s": round(compare_s, 3),
        "total_s": round(load_s + compare_s, 3),
        "us_per_case": round((load_s + compare_s) / cases * 1e6, 1),
        "cpu_s": round(statistics.median(cpu), 3),
        "regressed": regressed,
        "flaky": comparison.counts()["flaky"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    figures = run(args.cases, args.repeat, args.rounds)
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"{figures['cases']} cases x {figures['repeat']} repeats: load {figures['load_s']} s, "
        f"compare {figures['compare_s']} s, total {figures['total_s']} s "
        f"({figures['us_per_case']} us per case; CPU {figures['cpu_s']} s); "
        f"{figures['regressed']} regressed, "
        f"{figures['flaky']} flaky"
    )


if __name__ == "__main__":
    main()
