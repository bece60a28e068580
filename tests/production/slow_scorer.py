"""A scorer that takes its time, as a slow LLM judge or one backing off from rate limits
does, and records each call (trace id, one line) in a file, so tests can count how often a
trace was scored across worker processes. Used as ``--scorer
tests.production.slow_scorer:slow``."""

from __future__ import annotations

import os
import time
from collections import Counter
from pathlib import Path
from typing import Any

DELAY_ENV = "TRACEGRADE_TEST_SCORER_DELAY_S"
"""Seconds each call sleeps (default 0.1)."""
LOG_ENV = "TRACEGRADE_TEST_SCORER_LOG"
"""File each call appends its trace id to (none: not recorded)."""


def slow(trace: Any, case: Any) -> float:
    """Sleep, record the call, score 1."""
    time.sleep(float(os.environ.get(DELAY_ENV, "0.1")))
    log = os.environ.get(LOG_ENV)
    if log:
        with open(log, "a", encoding="utf-8") as out:  # one short append: atomic
            out.write(f"{trace.trace_id}\n")
    return 1.0


def calls(log: Path) -> Counter[str]:
    """How many times each trace id was scored, from the log."""
    return Counter(log.read_text().split()) if log.exists() else Counter()
