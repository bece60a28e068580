"""The ``runs`` table: one row per stored run, folded and trimmed to the terminal's width."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracegrade.pipeline.run_history import RunOverview
from tracegrade.report.comparison import value


def _seconds(ms: float | None) -> str:
    return "-" if ms is None else f"{ms / 1000:.1f}"


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.0%}"


COLUMNS = (
    "run",
    "time",
    "dataset",
    "label / git / agent",
    "cases",
    "pass",
    "score",
    "halluc.",
    "p50/p95/mean",
    "cost",
)
DROP_ORDER = ("cost", "halluc.", "p50/p95/mean", "label / git / agent", "time")
"""Columns left out, in this order, while the table is wider than the terminal (the run id,
dataset, cases, pass rate and score always stay; ``--json`` has everything)."""
_TEXT = {"dataset", "label / git / agent"}
MIN_TEXT_WIDTH = 12
"""A text column is folded to no fewer characters than this."""


def _cells(v: RunOverview) -> dict[str, str]:
    who = [v.label, " ".join(x for x in ((v.git_sha or "")[:8], v.git_branch) if x)]
    who += [" ".join(x for x in (v.agent_version, ", ".join(v.models)) if x)]
    latency = (v.latency_p50_ms, v.latency_p95_ms, v.latency_mean_ms)
    return {
        "run": escape(v.run_id) + ("\n[bold]baseline[/]" if v.baseline else ""),
        "time": (v.created_at or "")[5:16].replace("T", " "),
        "dataset": escape(f"{v.dataset or '-'} {(v.dataset_digest or '')[:6]}".strip()),
        "label / git / agent": escape("\n".join(x for x in who if x)),
        "cases": str(v.cases) + (f"x{v.repeat}" if v.repeat > 1 else ""),
        "pass": _percent(v.pass_rate),
        "score": value("score", v.score),
        "halluc.": _percent(v.hallucination_rate),
        "p50/p95/mean": "/".join(_seconds(x) for x in latency),
        "cost": value("cost_usd", v.cost_usd),
    }


def _table(views: list[RunOverview], columns: tuple[str, ...] = COLUMNS) -> Table:
    hidden = [c for c in COLUMNS if c not in columns]
    title = "runs (newest first; latency in s)"
    if hidden:
        title += f"; not shown at this width: {', '.join(hidden)} (see --json)"
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    for column in columns:
        if column in ("run", "time"):
            table.add_column(column, no_wrap=True)
        elif column in _TEXT:
            table.add_column(column, overflow="fold", min_width=MIN_TEXT_WIDTH)
        else:
            table.add_column(column, justify="right", no_wrap=True)
    for v in views:
        cells = _cells(v)
        table.add_row(*(cells[c] for c in columns))
    return table


def fitted_table(views: list[RunOverview], width: int) -> Table:
    """The runs table at most ``width`` characters wide where it can be: text columns fold to
    :data:`MIN_TEXT_WIDTH`, and columns of :data:`DROP_ORDER` are left out one by one (and
    named in the title) until it fits."""
    columns: tuple[str, ...] = COLUMNS
    for column in DROP_ORDER:
        if _width(_table(views, columns)) <= width:
            break
        columns = tuple(c for c in columns if c != column)
    return _table(views, columns)


def _width(table: Table) -> int:
    console = Console(width=10_000)
    return console.measure(table).minimum
