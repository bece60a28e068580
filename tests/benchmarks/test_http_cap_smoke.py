"""Smoke run of ``benchmarks/http_cap.py``: a guarded uvicorn server at its cap of 1,024
connections decides for every newcomer which to close, and the benchmark reports the server's
CPU and the decision's share of it. (The figures themselves are for a quiet machine.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_http_cap_benchmark_times_a_decision_per_newcomer():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "http_cap.py"), "--newcomers", "1500", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        cwd=ROOT,
    )
    result = json.loads(out.stdout)
    assert result["newcomers"] == 1500
    assert result["decisions"] == 1500  # the cap was full for each
    assert 0 < result["decision_s"] <= result["cpu_s"]
    assert 0 < result["decision_share"] <= 1
    assert 0 <= result["refused_of_last_held"] <= result["held"]
