"""Smoke run of ``benchmarks/receiver.py``: it runs, every acknowledged span is stored, and
the figures it reports are sane. (The figures themselves are for a quiet machine, not CI.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_receiver_benchmark_runs_and_stores_what_it_acknowledged():
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "receiver.py"),
            "--seconds",
            "1",
            "--clients",
            "2",
            "--per-client",
            "40",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
        cwd=ROOT,
    )
    results = json.loads(out.stdout)
    assert (
        results["grpc-decode-only"]["ratio"] == 1.0 and results["grpc-decode-only"]["errors"] == 0
    )
    for name in ("collect-grpc", "collect-http"):
        run = results[name]
        assert run["errors"] == 0 and run["acked_spans"] > 0
        # the clients cycle through 2 x 40 distinct requests; a repeat is a resend, stored once
        assert run["stored_spans"] == min(run["acked_spans"], 2 * 40 * 100)
        assert run["ratio"] > 0 and run["rss_mb"] < 300 and run["p50_ms"] <= run["p99_ms"]
