"""``tracegrade score FILE`` end to end at scale: throughput and peak memory against N traces.

    python benchmarks/score_scale.py [--traces 1000 2000] [--workers 1] [--json]

The 100 tau-bench conversations (converted to OTLP/JSON lines) are repeated with fresh trace
ids up to each ``--traces`` count. For each size, in the same run:

- ``baseline``: ``json.loads`` of every line of the file (the floor any reader pays);
- ``score``: ``tracegrade score FILE --no-save`` (reference-free scorers, report printed)
  in a child process: wall seconds, traces/s, ``x_baseline`` (score time / baseline time),
  and the child's peak RSS (MB). Flat memory means the peak does not grow with the count.
- ``x_baseline_cpu``: the same ratio in CPU seconds (the child's user + system time against
  the baseline's process time): what the ratio is on a machine other jobs load, where wall
  time measures the queue. Issue 34's target: at most 6x on 2,000 traces.

tracegrade's modules are byte-compiled (``compileall``) before the first measurement, as pip
leaves an installed package: where ``PYTHONDONTWRITEBYTECODE`` is set (this machine sets it)
an editable checkout would otherwise compile its ~160 imported modules from source on every
run (~0.2 s a command, ~0.25x of the 2,000-trace baseline).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.tau_bench.convert import convert  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"
_MEASURE = (
    "import resource, subprocess, sys; "
    "code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode; "
    "u = resource.getrusage(resource.RUSAGE_CHILDREN); "
    "print(code, u.ru_maxrss, u.ru_utime + u.ru_stime)"
)
CPU_SECONDS: dict[str, float] = {}
"""The CPU seconds (user + system) of the last :func:`run_measured` command, by its text."""


def run_measured(
    command: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[int, float, float, str]:
    """Run ``command`` in a child process: (its exit code, wall seconds, its peak RSS in MB,
    its stderr)."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=cwd,
    )
    seconds = time.perf_counter() - started
    code, kib, cpu = out.stdout.strip().splitlines()[-1].split()
    CPU_SECONDS[" ".join(command)] = float(cpu)
    return int(code), seconds, int(kib) / 1024, out.stderr


def make_file(lines: list[str], count: int, path: Path) -> Path:
    """``count`` traces: the lines repeated, each copy's trace id rewritten (unique)."""
    with path.open("w") as out:
        for n in range(count):
            line = lines[n % len(lines)]
            original = json.loads(line)["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["traceId"]
            out.write(line.replace(original, f"{n:08x}{original[8:]}") + "\n")
    return path


def compile_package() -> None:
    """Byte-compile tracegrade's sources into ``__pycache__`` (module docstring)."""
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", str(ROOT / "tracegrade")],
        stdout=subprocess.DEVNULL,
        check=True,
    )


def measure(path: Path, workers: int) -> dict[str, Any]:
    """Score ``path`` in a child process; wall seconds and the child's peak RSS in MB."""
    tracegrade = Path(sys.executable).with_name("tracegrade")
    command = [str(tracegrade), "score", str(path), "--no-save", "--workers", str(workers)]
    _, seconds, peak_mb, _ = run_measured(command)
    cpu = CPU_SECONDS[" ".join(command)]
    return {
        "seconds": round(seconds, 3),
        "cpu_seconds": round(cpu, 3),
        "peak_rss_mb": round(peak_mb, 1),
    }


def run(counts: list[int], workers: int = 1) -> list[dict[str, Any]]:
    """One row per trace count (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-scale-") as tmp:
        return _rows(counts, workers, Path(tmp))


def _rows(counts: list[int], workers: int, work: Path) -> list[dict[str, Any]]:
    convert(TAU, work)
    compile_package()
    lines = (work / "traces.jsonl").read_text().splitlines()
    rows = []
    for count in counts:
        path = make_file(lines, count, work / f"traces-{count}.jsonl")
        started, started_cpu = time.perf_counter(), time.process_time()
        with path.open("rb") as handle:
            for line in handle:
                json.loads(line)
        baseline = time.perf_counter() - started
        baseline_cpu = time.process_time() - started_cpu
        scored = measure(path, workers)
        rows.append(
            {
                "traces": count,
                "file_mb": round(path.stat().st_size / 2**20, 1),
                "baseline_s": round(baseline, 3),
                "score_s": scored["seconds"],
                "traces_per_s": round(count / scored["seconds"], 1),
                "x_baseline": round(scored["seconds"] / baseline, 2),
                "x_baseline_cpu": round(scored["cpu_seconds"] / baseline_cpu, 2),
                "peak_rss_mb": scored["peak_rss_mb"],
                "workers": workers,
            }
        )
        path.unlink()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, nargs="+", default=[1000, 2000])
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    return report(run(args.traces, args.workers), args.json, _table)


def _table(rows: list[dict[str, Any]]) -> None:
    print(
        f"{'traces':>8}{'file MB':>9}{'score s':>9}{'traces/s':>10}{'x json':>8}"
        f"{'x json cpu':>12}{'peak MB':>9}"
    )
    for row in rows:
        print(
            f"{row['traces']:>8}{row['file_mb']:>9}{row['score_s']:>9}{row['traces_per_s']:>10}"
            f"{row['x_baseline']:>8}{row['x_baseline_cpu']:>12}{row['peak_rss_mb']:>9}"
        )


if __name__ == "__main__":
    sys.exit(main())
