"""``tracegrade score FILE --baseline BASE`` at scale: peak memory and time against N traces.

    python benchmarks/score_baseline.py [--traces 1000 3000] [--workers 1 2] [--changed 10]
        [--repeat 2] [--source DIR] [--json]

The traces are :mod:`benchmarks.score_scale`'s (the 100 tau-bench conversations repeated with
fresh trace ids), scored reference-free. For each size, in the same run, in child processes:

- ``plain``: ``tracegrade score FILE --no-save --json BASE`` (the run the baseline is made
  of): wall seconds and peak RSS (MB);
- ``gated``: ``tracegrade score FILE --no-save --baseline BASE`` with ``--changed`` cases of
  BASE flipped (passed <-> failed, so that many cases regress or improve and get a
  structural diff), for each ``--workers``: seconds, peak RSS and ``x_plain`` (gated peak /
  plain peak). Flat memory means ``x_plain`` does not grow with the count.

Each measurement is repeated ``--repeat`` times (the machine is shared): the min and max
are reported. ``--source DIR``: the tracegrade tree to run (e.g. an older commit's
``git archive``), default this checkout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import report  # noqa: E402
from benchmarks.score_scale import make_file, run_measured  # noqa: E402
from benchmarks.tau_bench.convert import convert  # noqa: E402

TAU = ROOT / "datasets" / "tau-bench" / "gpt-4o-airline-even-tasks.json"


def measure(args: list[str], source: Path) -> tuple[float, float]:
    """``tracegrade ARGS`` of ``source`` in a child process: (wall seconds, peak RSS MB).

    Raises:
        RuntimeError: the command exited with 2 or more (0: passed, 1: failed or regressed).
    """
    command = [sys.executable, "-m", "tracegrade", *args]
    env = {**os.environ, "PYTHONPATH": str(source)}
    code, seconds, peak_mb, stderr = run_measured(command, env=env, cwd=source)
    if code > 1:
        raise RuntimeError(f"tracegrade {' '.join(args)} exited with {code}: {stderr}")
    return seconds, peak_mb


def flip(base: Path, changed: int) -> None:
    """Flip pass/fail of ``changed`` cases of the run document at ``base``, spread evenly."""
    doc = json.loads(base.read_text())
    cases = doc["cases"]
    for case in cases[:: max(1, len(cases) // changed)][:changed]:
        case["passed"] = not case["passed"]
    base.write_text(json.dumps(doc))


def _span(values: list[float], digits: int) -> list[float]:
    return [round(min(values), digits), round(max(values), digits)]


def _size(path: Path, count: int, options: Options) -> dict[str, Any]:
    base = path.with_suffix(".base.json")
    plain_args = ["score", str(path), "--no-save"]
    plain = [measure([*plain_args, "--json", str(base)], options.source)]
    plain += [measure(plain_args, options.source) for _ in range(options.repeat - 1)]
    flip(base, options.changed)
    row: dict[str, Any] = {
        "traces": count,
        "plain_s": _span([s for s, _ in plain], 2),
        "plain_peak_mb": _span([m for _, m in plain], 1),
    }
    for workers in options.workers:
        gated_args = [*plain_args, "--baseline", str(base), "--workers", str(workers)]
        gated = [measure(gated_args, options.source) for _ in range(options.repeat)]
        peaks = [m for _, m in gated]
        row[f"w{workers}"] = {
            "gated_s": _span([s for s, _ in gated], 2),
            "gated_peak_mb": _span(peaks, 1),
            "x_plain": _span([p / min(m for _, m in plain) for p in peaks], 2),
        }
    return row


@dataclass(frozen=True)
class Options:
    """What to measure (see the module docstring)."""

    traces: Sequence[int] = (1000, 3000)
    workers: Sequence[int] = (1, 2)
    changed: int = 10
    repeat: int = 2
    source: Path = ROOT


def run(options: Options) -> list[dict[str, Any]]:
    """One row per trace count (see the module docstring)."""
    with tempfile.TemporaryDirectory(prefix="tracegrade-baseline-") as tmp:
        work = Path(tmp)
        convert(TAU, work)
        lines = (work / "traces.jsonl").read_text().splitlines()
        rows = []
        for count in options.traces:
            path = make_file(lines, count, work / f"traces-{count}.jsonl")
            rows.append(_size(path, count, options))
            path.unlink()
        return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--changed", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--source", type=Path, default=ROOT)
    parser.add_argument("--json", action="store_true")
    args = vars(parser.parse_args(argv))
    as_json = args.pop("json")
    return report(run(Options(**args)), as_json, _table)


def _table(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        print(f"{row['traces']} traces: plain {row['plain_s']} s, {row['plain_peak_mb']} MB")
        for key, value in row.items():
            if key.startswith("w"):
                print(
                    f"  --baseline --workers {key[1:]}: {value['gated_s']} s, "
                    f"{value['gated_peak_mb']} MB, x{value['x_plain']} of plain"
                )


if __name__ == "__main__":
    sys.exit(main())
