"""Windowed aggregates of followed traces (``score --follow --window 5m``), per
``service.name``, and the thresholds that raise an alert.

A window covers the results scored in ``[start_s, start_s + window_s)`` (Unix s, aligned to
multiples of ``window_s``). Aggregates: ``traces`` scored, ``failure_rate`` (failed / traces),
``hallucination_rate`` (traces with an invented value or a ``must_not_contain`` hit / traces),
``tool_error_rate`` (failed tool calls / tool calls; None without tool calls),
``p95_latency_ms`` (trace durations) and ``cost_per_trace_usd`` (mean over traces whose cost is
known), ``judge_skipped`` (traces whose judge score was skipped for the judge budget) and
``judge_cost_usd`` (what the judge spent in the window, when known). Each trace counts once,
in the window where it was first scored, by its current result (:mod:`tracegrade.store.results`).
Thresholds (``windows.thresholds`` in the config; null = none) are upper limits; a window
with fewer than ``windows.min_traces`` traces raises nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from tracegrade.errors import ConfigError
from tracegrade.scoring.results import percentile
from tracegrade.store.follow import ResultRow

UNKNOWN_SERVICE = "unknown_service"
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_window(text: str) -> float:
    """Seconds from ``30s`` / ``5m`` / ``1h`` / ``1d``.

    Raises:
        ConfigError: another form, or zero.
    """
    match = _DURATION.match(text.strip())
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"--window {text!r}: use a duration such as 30s, 5m, 1h")
    return float(match.group(1)) * _UNITS_S[match.group(2)]


def window_start(moment_s: float, window_s: float) -> float:
    """The start of the window holding ``moment_s``."""
    return moment_s - moment_s % window_s


def aggregate(rows: Sequence[ResultRow]) -> dict[str, dict[str, Any]]:
    """Aggregates per service (see the module docstring); services sorted by name."""
    by_service: dict[str, list[ResultRow]] = {}
    for row in rows:
        by_service.setdefault(row.service or UNKNOWN_SERVICE, []).append(row)
    return {name: _aggregate(by_service[name]) for name in sorted(by_service)}


def empty() -> dict[str, Any]:
    """The aggregates of a service with no trace left in a window (every trace it had was
    excluded after the window closed)."""
    return {
        "traces": 0,
        "failure_rate": None,
        "hallucination_rate": None,
        "tool_error_rate": None,
        "p95_latency_ms": None,
        "cost_per_trace_usd": None,
        "judge_skipped": 0,
    }


def _aggregate(rows: Sequence[ResultRow]) -> dict[str, Any]:
    tool_calls = sum(r.tool_calls for r in rows)
    costs = [r.cost_usd for r in rows if r.cost_usd is not None]
    durations = [r.duration_ms for r in rows if r.duration_ms is not None]
    return {
        "traces": len(rows),
        "failure_rate": sum(not r.passed for r in rows) / len(rows),
        "hallucination_rate": sum(r.hallucinated for r in rows) / len(rows),
        "tool_error_rate": (
            sum(r.failed_tool_calls for r in rows) / tool_calls if tool_calls else None
        ),
        "p95_latency_ms": percentile(sorted(durations), 95),
        "cost_per_trace_usd": sum(costs) / len(costs) if costs else None,
        "judge_skipped": sum(r.judge_skipped for r in rows),
    }


def breaches(
    aggregates: Mapping[str, Any], thresholds: Mapping[str, float | None], min_traces: int
) -> list[str]:
    """``name value > limit`` for each threshold the window crosses."""
    if aggregates["traces"] < min_traces:
        return []
    return [
        f"{name} {value:.4g} > {limit:g}"
        for name, limit in thresholds.items()
        if limit is not None and (value := aggregates.get(name)) is not None and value > limit
    ]


def line(
    start_s: float,
    window_s: float,
    service: str,
    aggregates: Mapping[str, Any],
    partial_until_s: float | None = None,
    revised: bool = False,
) -> str:
    """One printable line for a window (Unix s); ``partial_until_s``: the window is still
    open and covers only up to that moment (``(partial, until HH:MM:SSZ)``); ``revised``:
    a closed window counted again after late results (``(revised)``)."""
    import datetime as dt

    def stamp(moment_s: float, fmt: str) -> str:
        return dt.datetime.fromtimestamp(moment_s, dt.UTC).strftime(fmt)

    start = stamp(start_s, "%Y-%m-%dT%H:%M:%SZ")
    if partial_until_s is not None:
        start += f" (partial, until {stamp(partial_until_s, '%H:%M:%SZ')})"
    if revised:
        start += " (revised)"

    def show(key: str, fmt: str) -> str:
        value = aggregates.get(key)
        return "-" if value is None else format(value, fmt)

    return (
        f"WINDOW {start} {window_s:g}s service={service} traces={aggregates['traces']}"
        f" failure_rate={show('failure_rate', '.3f')}"
        f" hallucination_rate={show('hallucination_rate', '.3f')}"
        f" tool_error_rate={show('tool_error_rate', '.3f')}"
        f" p95_latency_ms={show('p95_latency_ms', '.0f')}"
        f" cost_per_trace_usd={show('cost_per_trace_usd', '.5f')}"
        + (f" judge_skipped={skipped}" if (skipped := aggregates.get("judge_skipped")) else "")
        + (
            f" judge_cost_usd={aggregates['judge_cost_usd']:.4f}"
            if aggregates.get("judge_cost_usd") is not None
            else ""
        )
    )
