"""Overhead of ``--export-otlp`` on ``tracegrade score FILE`` over the main job's traces.

    python benchmarks/export_overhead.py [--repeat 5] [--traces 100] [--json]

The tau-bench conversations of the main job (``benchmarks/tau_bench/convert.py``: OTLP
traces and their golden dataset; the first ``--traces`` of the 100) are scored end to end in
child processes, ``tracegrade score traces.jsonl --dataset dataset.yaml --no-save``, the
modes interleaved (each round starting with the next mode), ``--repeat`` times each:

- ``plain``: without ``--export-otlp`` (the baseline, measured in the same run);
- ``http``, ``grpc``: ``--export-otlp`` to a ``tracegrade collect`` child process (OTLP/HTTP,
  OTLP/gRPC), which stores the records; the figures go to the same receiver (acknowledged,
  not stored);
- ``dead``: ``--export-otlp`` to a port nothing listens on.

Reported per mode: median wall seconds and median CPU seconds of the child (user + system,
its SDK threads included: steadier than wall time on a shared machine), each with
``x_plain`` (median / plain's median; the target is under 1.15), the exit codes seen (the
same in every mode), the ``--export-otlp`` warning lines, and for the exporting modes the
records the receiver stored per run (one per scorer and case, and each case's ``overall``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.score_scale import TAU  # noqa: E402
from benchmarks.tau_bench.convert import convert  # noqa: E402

MODES = ("plain", "http", "grpc", "dead")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Collector:
    """``tracegrade collect`` in a child process on free ports, storing into ``db``."""

    def __init__(self, db: Path) -> None:
        self.db, self.grpc, self.http = db, _free_port(), _free_port()

    def __enter__(self) -> Collector:
        tracegrade = Path(sys.executable).with_name("tracegrade")
        command = [str(tracegrade), "collect", "--db", str(self.db)]
        command += ["--grpc-port", str(self.grpc), "--http-port", str(self.http)]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.process.stdout.readline()  # the readiness line
        return self

    def __exit__(self, *exc: object) -> None:
        self.process.send_signal(signal.SIGINT)  # writes what is queued, then stops
        self.process.wait(timeout=60)

    def records(self) -> int:
        """Log records stored so far."""
        with sqlite3.connect(self.db) as db:
            return int(db.execute("SELECT count(*) FROM log_records").fetchone()[0])


def _inputs(traces: int, work: Path) -> tuple[Path, Path]:
    """The main job's traces and dataset (the first ``traces`` conversations)."""
    subset = work / "trajectories.json"
    subset.write_text(json.dumps(json.loads(TAU.read_text())[:traces]))
    convert(subset, work / "tau")
    return work / "tau" / "traces.jsonl", work / "tau" / "dataset.yaml"


def _command(traces: Path, dataset: Path, endpoint: str | None) -> list[str]:
    tracegrade = Path(sys.executable).with_name("tracegrade")
    command = [str(tracegrade), "score", str(traces), "--dataset", str(dataset), "--no-save"]
    return command + (["--export-otlp", endpoint] if endpoint else [])


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)  # children waited for
    return usage.ru_utime + usage.ru_stime


def _measure(
    mode: str, traces: Path, dataset: Path, collector: Collector
) -> tuple[int, float, float, str]:
    """One run of ``mode`` in a child process: (exit code, wall s, CPU s, stderr)."""
    env = dict(os.environ)
    endpoint = {
        "plain": None,
        "http": f"http://127.0.0.1:{collector.http}",
        "grpc": f"http://127.0.0.1:{collector.grpc}",
        "dead": f"http://127.0.0.1:{_free_port()}",
    }[mode]
    env["OTEL_EXPORTER_OTLP_PROTOCOL"] = "grpc" if mode == "grpc" else "http/protobuf"
    cpu, started = _cpu_s(), time.perf_counter()
    done = subprocess.run(
        _command(traces, dataset, endpoint),
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    return done.returncode, time.perf_counter() - started, _cpu_s() - cpu, done.stderr


def run(repeat: int = 5, traces: int = 100) -> dict[str, Any]:
    """Figures per mode (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-export-") as tmp:
        work = Path(tmp)
        trace_file, dataset = _inputs(traces, work)
        times: dict[str, list[float]] = {mode: [] for mode in MODES}
        cpu: dict[str, list[float]] = {mode: [] for mode in MODES}
        codes: dict[str, set[int]] = {mode: set() for mode in MODES}
        stored: dict[str, list[int]] = {"http": [], "grpc": []}
        warnings: dict[str, int] = {mode: 0 for mode in MODES}
        with Collector(work / "received.db") as collector:
            for round_ in range(repeat):
                for mode in MODES[round_ % 4 :] + MODES[: round_ % 4]:  # each mode goes first
                    before = collector.records() if mode in stored else 0
                    code, seconds, cpu_s, stderr = _measure(mode, trace_file, dataset, collector)
                    times[mode].append(seconds)
                    cpu[mode].append(cpu_s)
                    codes[mode].add(code)
                    warnings[mode] += stderr.count("--export-otlp")
                    if mode in stored:
                        stored[mode].append(collector.records() - before)
    plain, plain_cpu = statistics.median(times["plain"]), statistics.median(cpu["plain"])
    return {
        "traces": traces,
        "repeat": repeat,
        "modes": {
            mode: {
                "median_s": round(statistics.median(times[mode]), 3),
                "x_plain": round(statistics.median(times[mode]) / plain, 3),
                "cpu_median_s": round(statistics.median(cpu[mode]), 3),
                "cpu_x_plain": round(statistics.median(cpu[mode]) / plain_cpu, 3),
                "runs_s": [round(t, 3) for t in times[mode]],
                "exit_codes": sorted(codes[mode]),
                "warnings": warnings[mode],
                **({"records_stored": stored[mode]} if mode in stored else {}),
            }
            for mode in MODES
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--traces", type=int, default=100)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.repeat, args.traces), args.json, _table)


def _table(figures: dict[str, Any]) -> None:
    print(f"{figures['traces']} traces, {figures['repeat']} runs per mode (medians)")
    print(
        f"{'mode':<7}{'wall s':>8}{'x plain':>9}{'CPU s':>8}{'x plain':>9}{'exit':>6}"
        f"{'warnings':>10}  records stored"
    )
    for mode, f in figures["modes"].items():
        records = ", ".join(map(str, f.get("records_stored", []))) or "-"
        exits = ",".join(map(str, f["exit_codes"]))
        print(
            f"{mode:<7}{f['median_s']:>8}{f['x_plain']:>9}{f['cpu_median_s']:>8}"
            f"{f['cpu_x_plain']:>9}{exits:>6}{f['warnings']:>10}  {records}"
        )


if __name__ == "__main__":
    sys.exit(main())
