"""Trend charts as server-side SVG: one line per metric over a dataset's runs.

:func:`line_chart` turns values (oldest run first; None where a run lacks the metric) into
coordinates in a ``WIDTH`` x ``HEIGHT`` view box; the template draws the polyline, points
and axis labels as SVG attributes, so no charting script or inline style is needed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

WIDTH, HEIGHT, PAD, LEFT = 600.0, 160.0, 16.0, 72.0
"""View box size, padding, and the left margin that holds the y-axis labels."""

TICKS = 6
"""Up to this many runs, each has its x-axis label; beyond, the first and the last."""

METRICS: tuple[tuple[str, str, str], ...] = (
    ("score", "mean score", "fraction"),
    ("pass_rate", "pass rate", "fraction"),
    ("hallucination_rate", "hallucination rate", "fraction"),
    ("latency_p95_ms", "p95 latency (ms)", "ms"),
    ("cost_usd", "cost (USD)", "usd"),
)
"""(run row key, title, unit) of each chart on the Trends page."""


@dataclass(frozen=True)
class Point:
    """One run on a chart: view-box coordinates, its value, and the run it links to."""

    x: float
    y: float
    value: float
    run_id: str
    label: str
    tick: str = ""
    """The x-axis label under the point (the run's label, else its id); empty where the
    axis has too many runs to label each (only the first and last are)."""


@dataclass(frozen=True)
class Chart:
    """A line chart: ``points`` (runs lacking the metric are left out), ``polyline`` (the
    SVG ``points`` attribute), the y-axis bounds as formatted labels."""

    key: str
    title: str
    points: list[Point]
    polyline: str
    y_min: str
    y_max: str

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "values": [{"run_id": p.run_id, "value": p.value} for p in self.points],
        }


_FORMATS: dict[str, Callable[[float], str]] = {
    "fraction": lambda v: f"{100 * v:.0f}%",
    "ms": lambda v: f"{v:,.0f}",
    "usd": lambda v: f"${v:.4f}",
}


def line_chart(key: str, title: str, unit: str, runs: Sequence[dict[str, Any]]) -> Chart:
    """The chart of ``runs[i][key]`` over the runs (oldest first). Fractions are drawn on
    0..1; other units from 0 to their maximum. The x axis is labelled with the runs' labels
    (see :data:`TICKS`)."""
    fmt = _FORMATS[unit]
    present = [(i, r) for i, r in enumerate(runs) if isinstance(r.get(key), int | float)]
    top = 1.0 if unit == "fraction" else max((float(r[key]) for _, r in present), default=1.0)
    top = top or 1.0
    span_x = max(len(runs) - 1, 1)
    points = []
    for i, run in present:
        value = float(run[key])
        x = LEFT + (WIDTH - LEFT - PAD) * (i / span_x if len(runs) > 1 else 0.5)
        y = HEIGHT - PAD - (HEIGHT - 2 * PAD) * (value / top)
        name = str(run.get("label") or run["run_id"])
        label = f"{name}: {fmt(value)}"
        ticked = len(runs) <= TICKS or i in (0, len(runs) - 1)
        point = Point(
            round(x, 1), round(y, 1), value, run["run_id"], label, name[:18] if ticked else ""
        )
        points.append(point)
    polyline = " ".join(f"{p.x},{p.y}" for p in points)
    return Chart(key, title, points, polyline, fmt(0.0), fmt(top))


def trend_charts(runs: Sequence[dict[str, Any]]) -> list[Chart]:
    """The Trends page's charts (see :data:`METRICS`); a metric no run has (e.g. cost
    without prices) draws no empty chart."""
    charts = [line_chart(key, title, unit, runs) for key, title, unit in METRICS]
    return [chart for chart in charts if chart.points]
