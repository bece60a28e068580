"""Run trends (``tracegrade history``): the columns, text sparklines, and a PNG chart."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from tracegrade._util.extras import import_extra
from tracegrade.compare import RunOverview

COLUMNS: tuple[tuple[str, str], ...] = (
    ("score", "score"),
    ("pass_rate", "pass rate"),
    ("hallucination_rate", "halluc. rate"),
    ("latency_mean_ms", "latency mean"),
    ("latency_p95_ms", "latency p95"),
    ("cost_usd", "cost"),
)
"""(RunOverview field, column title), in the order of the design documents' trend table."""

BARS = "▁▂▃▄▅▆▇█"


def sparkline(values: Sequence[float | None]) -> str:
    """One bar per value, scaled between the lowest and highest; a gap (space) for None; a
    flat middle bar when all values are equal."""
    known = [v for v in values if v is not None]
    if not known:
        return " " * len(values)
    low, high = min(known), max(known)
    span = high - low
    top = len(BARS) - 1
    return "".join(
        " " if v is None else BARS[top // 2 if span == 0 else round((v - low) / span * top)]
        for v in values
    )


def write_png(views: Sequence[RunOverview], names: Sequence[str], path: str | Path) -> Path:
    """Draw each column of :data:`COLUMNS` as a small line chart over the runs (x: ``names``)
    into a PNG at ``path``; returns the path. Uses matplotlib's non-interactive Agg backend."""
    import_extra("matplotlib", "a chart (--png)").use("Agg")
    plt = import_extra("matplotlib.pyplot", "a chart (--png)")

    figure, axes = plt.subplots(len(COLUMNS), 1, figsize=(8, 2 * len(COLUMNS)), sharex=True)
    x = list(range(len(views)))
    for axis, (metric, title) in zip(axes, COLUMNS, strict=True):
        y = [getattr(v, metric) for v in views]
        axis.plot(x, [float("nan") if v is None else v for v in y], marker="o")
        axis.set_ylabel(title)
        axis.grid(True, alpha=0.3)
    axes[-1].set_xticks(x, list(names), rotation=30, ha="right")
    figure.suptitle(f"tracegrade history: {views[-1].dataset or 'runs'}")
    figure.tight_layout()
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=100)
    plt.close(figure)
    return target
