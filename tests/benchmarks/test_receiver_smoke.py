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


def test_receiver_overload_scenario_runs_and_reports_its_figures():
    """The overload scenario, small: 12 exporters of 0.5-1 MiB requests for 2 s. Everything
    acknowledged is stored, acknowledgements come well within the SDK's 10 s timeout, and
    each figure of the issue is reported with its ratio to the decode-only server."""
    out = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "receiver.py"),
            "--overload",
            "--clients",
            "12",
            "--overload-mib",
            "0.5,1",
            "--seconds",
            "2",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
        cwd=ROOT,
    )
    results = json.loads(out.stdout)
    assert results["grpc-decode-only"]["ratio"] == 1.0
    for name in ("collect-grpc", "collect-http"):
        run = results[name]
        assert run["acked_spans"] > 0 and run["error"] == 0
        assert run["stored_spans"] >= run["acked_spans"]  # a request given up on may be stored
        assert run["ack_max_s"] < 10.0 and run["gave_up"] == 0
        for key in ("ratio", "stored_ratio", "ack_p99_ratio", "rss_ratio", "refused"):
            assert key in run, key
