"""``tracegrade runs`` fits the terminal: columns are left out (and named) rather than every
cell folded to a few characters."""

from __future__ import annotations

import io

from rich.console import Console

from tracegrade.cli.runs_table import COLUMNS, fitted_table
from tracegrade.compare.model import RunOverview


def _view(n: int) -> RunOverview:
    return RunOverview(
        run_id=f"20261123-09340{n}-7fffa0",
        created_at="2026-11-23T09:34:03",
        dataset="tau-bench-airline-gpt-4o",
        dataset_digest="502812abcdef",
        label="nightly release candidate",
        git_sha="0123456789abcdef",
        git_branch="main",
        agent_version="1.4.2",
        models=("gpt-4o",),
        cases=100,
        repeat=1,
        passed=50,
        pass_rate=0.5,
        score=0.771,
        hallucination_rate=0.15,
        latency_p50_ms=1200.0,
        latency_p95_ms=4100.0,
        latency_mean_ms=1800.0,
        latency_total_ms=180000.0,
        cost_usd=0.42,
        baseline=n == 0,
    )


def _render(width: int) -> list[str]:
    views = [_view(0), _view(1)]
    out = io.StringIO()
    Console(file=out, width=width, color_system=None).print(fitted_table(views, width))
    return out.getvalue().splitlines()


def test_at_80_columns_run_ids_stay_whole_and_hidden_columns_are_named():
    lines = _render(80)
    assert all(len(line) <= 80 for line in lines)
    text = "\n".join(lines)
    assert "20261123-093400-7fffa0" in text and "20261123-093401-7fffa0" in text
    assert "not shown at this width" in text and "cost" in text.split("\n\n")[0]
    for kept in ("cases", "pass", "score", "100", "50%", "0.771"):
        assert kept in text


def test_a_wide_terminal_shows_every_column():
    text = "\n".join(_render(220))
    assert "not shown" not in text
    for column in COLUMNS:
        assert column in text
    assert "0.42" in text and "1.2/4.1/1.8" in text and "15%" in text
