"""A comparison (:class:`~tracegrade.compare.Comparison`) for people: the rich console report
(green where CURRENT is better, red where worse) and the Markdown summary (``--markdown``,
``$GITHUB_STEP_SUMMARY``, pull-request comments)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracegrade.compare import CaseComparison, Comparison, Delta, RunOverview, TraceDiff, overview
from tracegrade.report import terminal
from tracegrade.report.simulated import summary_texts
from tracegrade.run_document import CaseEntry, StreamedDocument, document_cases

LOWER_IS_BETTER = frozenset(
    {"hallucination_rate", "latency_p50_ms", "latency_p95_ms", "latency_mean_ms", "cost_usd"}
)
METRIC_NAMES = {
    "pass_rate": "pass rate",
    "score": "mean score",
    "hallucination_rate": "hallucination rate",
    "latency_p50_ms": "latency p50",
    "latency_p95_ms": "latency p95",
    "latency_mean_ms": "latency mean",
    "cost_usd": "cost",
}
SHOWN = ("regressed", "improved", "flaky", "new", "removed")
CHANGED_LISTED = 100
"""Changed cases (:data:`SHOWN`) the console and the Markdown list at most; the rest are
counted (every case is in ``--json``): a large run's step summary stays within GitHub's 1 MiB."""


def changed_cases(comparison: Comparison) -> tuple[list[CaseComparison], int]:
    """The first :data:`CHANGED_LISTED` changed cases, in comparison order, and how many more
    changed (read once: a comparison read from disk is not held)."""
    listed: list[CaseComparison] = []
    more = 0
    for case in comparison.cases:
        if case.status not in SHOWN:
            continue
        if len(listed) < CHANGED_LISTED:
            listed.append(case)
        else:
            more += 1
    return listed, more


def _more_changed(more: int) -> str:
    every = "tracegrade compare BASE CURRENT --json FILE"
    return f"and {more:,} more changed cases (every case: {every})"


def value(metric: str, number: float | None) -> str:
    """A metric value in its unit (rates as %, latency ms, cost USD, scores 2 decimals)."""
    if number is None:
        return "n/a"
    if metric.endswith("_rate"):
        return f"{number:.1%}"
    if metric.endswith("_ms"):
        return f"{number:,.0f} ms"
    if metric.endswith("_usd"):
        return f"${number:,.4f}"
    return f"{number:.3f}"


def signed(metric: str, d: Delta) -> str:
    """The delta with its sign (rates in percentage points)."""
    if d.delta is None:
        return "n/a"
    if metric.endswith("_rate"):
        return f"{d.delta * 100:+.1f} pt"
    if metric.endswith("_ms"):
        return f"{d.delta:+,.0f} ms"
    if metric.endswith("_usd"):
        return f"{d.delta:+,.4f} $"
    return f"{d.delta:+.3f}"


NOTICEABLE_RATIO = 0.10
"""A latency or cost changes noticeably when it moves by at least this share of BASE: timing
jitter (a +1 ms on 40 ms) is no change to flag."""
NOTICEABLE_POINTS = 0.005
"""A rate or score changes noticeably when it moves by at least this much (half a percentage
point; the third decimal of a score)."""


def noticeable(metric: str, d: Delta) -> bool:
    """Whether the change of ``metric`` is more than noise (:data:`NOTICEABLE_RATIO` of the
    base for latency and cost, :data:`NOTICEABLE_POINTS` for rates and scores)."""
    if not d.delta:
        return False
    if metric.endswith(("_ms", "_usd")):
        base = abs(d.base or 0.0)
        return abs(d.delta) >= NOTICEABLE_RATIO * base if base else True
    return abs(d.delta) >= NOTICEABLE_POINTS


def better(metric: str, d: Delta) -> bool | None:
    """True when CURRENT is better on ``metric``, False when worse, None when equal, unknown
    or within noise (:func:`noticeable`): what is coloured green / red (🟢 / 🔴)."""
    if d.delta is None or not noticeable(metric, d):
        return None
    return (d.delta < 0) if metric in LOWER_IS_BETTER else (d.delta > 0)


def _colored(metric: str, d: Delta) -> str:
    text = escape(signed(metric, d))
    verdict = better(metric, d)
    return text if verdict is None else f"[{'green' if verdict else 'red'}]{text}[/]"


def _run_name(view: RunOverview) -> str:
    extra = [x for x in (view.label, view.agent_version, (view.git_sha or "")[:8]) if x]
    tag = " (baseline)" if view.baseline else ""
    return f"{view.run_id}{tag}" + (f" [{', '.join(extra)}]" if extra else "")


def _metrics_table(comparison: Comparison) -> Table:
    table = Table(title="run", title_justify="left")
    for column in ("metric", "base", "current", "delta"):
        table.add_column(column, justify="left" if column == "metric" else "right")
    for metric, d in comparison.deltas.items():
        name = METRIC_NAMES.get(metric, metric)
        table.add_row(name, value(metric, d.base), value(metric, d.current), _colored(metric, d))
    for axis, d in comparison.axes.items():
        table.add_row(f"  {axis}", value(axis, d.base), value(axis, d.current), _colored(axis, d))
    return table


def diff_lines(diff: TraceDiff | None) -> list[str]:
    """The structural diff in short lines (empty for no diff)."""
    if diff is None:
        return []
    lines = []
    if diff.tools_removed:
        lines.append(f"tools no longer called: {', '.join(diff.tools_removed)}")
    if diff.tools_added:
        lines.append(f"tools newly called: {', '.join(diff.tools_added)}")
    for change in diff.arguments_changed:
        lines.append(
            f"{change.tool}#{change.occurrence + 1} {change.argument}: "
            f"{change.base!r} -> {change.current!r}"
        )
    if diff.newly_ungrounded:
        lines.append(f"newly ungrounded: {', '.join(diff.newly_ungrounded)}")
    if diff.newly_forbidden:
        lines.append(f"newly hit must_not_contain: {', '.join(diff.newly_forbidden)}")
    usage = [
        f"{name} {signed(metric, d)}"
        for name, metric, d in (
            ("tokens", "tokens", diff.tokens),
            ("latency", "latency_ms", diff.latency_ms),
            ("cost", "cost_usd", diff.cost_usd),
        )
        if noticeable(metric, d)
    ]
    if usage:
        lines.append("usage: " + ", ".join(usage))
    if diff.source == "results":
        lines.append("(traces not in the store: diff from the case results only)")
    return lines


def _case_reasons(case: CaseComparison) -> list[str]:
    test = (
        f"{case.test.name} p={case.test.p_value:.2f} over {case.test.n} attempts"
        if case.test and case.test.p_value is not None
        else None
    )
    return [*case.reasons[:4], *diff_lines(case.diff), *([test] if test else [])]


def _cases_table(cases: Iterable[CaseComparison]) -> Table:
    table = Table(title="changed cases", title_justify="left", show_lines=True)
    for column in ("case", "status", "base", "current", "what changed"):
        table.add_column(column, overflow="fold")
    colors = {"regressed": "red", "improved": "green", "flaky": "yellow"}
    for case in cases:
        color = colors.get(case.status)
        status = f"[{color}]{case.status}[/]" if color else case.status
        table.add_row(
            escape(case.case_id),
            status,
            value("score", case.base_score),
            value("score", case.current_score),
            escape("\n".join(_case_reasons(case))),
        )
    return table


def dataset_note(comparison: Comparison) -> str | None:
    """A warning when the runs scored different datasets or versions of one (by digest)."""
    base, current = comparison.base, comparison.current
    if base.dataset != current.dataset:
        return f"the runs scored different datasets ({base.dataset} -> {current.dataset})"
    if (
        base.dataset_digest
        and current.dataset_digest
        and base.dataset_digest != current.dataset_digest
    ):
        return (
            f"dataset {current.dataset} changed between the runs (digest "
            f"{base.dataset_digest[:8]} -> {current.dataset_digest[:8]}): compare case by case"
        )
    return None


def print_comparison(comparison: Comparison, console: Console | None = None) -> None:
    """Print the comparison: the runs, metric and axis deltas, the changed cases, the verdict."""
    out = console or terminal.console()
    out.print(
        f"[bold]compare[/] base {escape(_run_name(comparison.base))} -> current "
        f"{escape(_run_name(comparison.current))}"
    )
    if note := dataset_note(comparison):
        out.print(f"[yellow]{escape(note)}[/]")
    out.print(_metrics_table(comparison))
    counts = comparison.counts()
    out.print(" · ".join(f"{n} {status}" for status, n in counts.items()))
    test = comparison.test
    if test.p_value is not None:
        out.print(
            f"paired {test.name} over {test.n} cases' scores: p={test.p_value:.3g} "
            f"(alpha {test.alpha:g})"
        )
    changed, more = changed_cases(comparison)
    if changed:
        out.print(_cases_table(changed))
    if more:
        out.print(_more_changed(more))
    if comparison.regression:
        out.print("[red bold]regression[/]")
        for reason in comparison.reasons:
            out.print(f"  [red]- {escape(reason)}[/]")
    else:
        out.print("[green]no regression[/]")


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", "<br>")


def markdown(comparison: Comparison) -> str:
    """The comparison as GitHub-flavoured Markdown (a pull-request comment or step summary)."""
    verdict = "❌ **regression**" if comparison.regression else "✅ no regression"
    lines = [
        f"### tracegrade: {verdict}",
        "",
        f"base `{_run_name(comparison.base)}` → current `{_run_name(comparison.current)}`",
        "",
        *[f"- {_md(r)}" for r in comparison.reasons],
        *([f"> {_md(note)}"] if (note := dataset_note(comparison)) else []),
        "",
        "| metric | base | current | delta |",
        "|---|---:|---:|---:|",
    ]
    for metric, d in comparison.deltas.items():
        mark = {True: " 🟢", False: " 🔴", None: ""}[better(metric, d)]
        lines.append(
            f"| {METRIC_NAMES.get(metric, metric)} | {value(metric, d.base)} | "
            f"{value(metric, d.current)} | {signed(metric, d)}{mark} |"
        )
    counts = comparison.counts()
    lines += ["", " · ".join(f"{n} {status}" for status, n in counts.items()), ""]
    changed, more = changed_cases(comparison)
    if changed:
        lines += ["| case | status | base | current | what changed |", "|---|---|---:|---:|---|"]
        lines += [
            f"| {_md(c.case_id)} | {c.status} | {value('score', c.base_score)} | "
            f"{value('score', c.current_score)} | {_md(chr(10).join(_case_reasons(c)))} |"
            for c in changed
        ]
    if more:
        lines += ["", _more_changed(more)]
    return "\n".join(lines) + "\n"


def run_markdown(doc: StreamedDocument | Mapping[str, Any]) -> str:
    """A run's summary as Markdown (the step summary of ``score`` / ``run`` without a
    baseline): verdict, pass rate, mean score, hallucination rate, latency, cost, failed cases.

    Raises:
        InputError: ``doc`` is not a ``tracegrade.run/1`` document (the field named).
    """
    view = overview(doc)
    passed = view.run_passed
    lines = [
        f"### tracegrade: {'✅ run passed' if passed else '❌ run failed'}",
        "",
        f"run `{_run_name(view)}`" + (f" · dataset `{view.dataset}`" if view.dataset else ""),
        "",
        "| passed | pass rate | mean score | hallucination rate | latency p50 / p95 | cost |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {view.passed}/{view.cases} | {value('pass_rate', view.pass_rate)} | "
        f"{value('score', view.score)} | {value('hallucination_rate', view.hallucination_rate)} | "
        f"{value('latency_p50_ms', view.latency_p50_ms)} / "
        f"{value('latency_p95_ms', view.latency_p95_ms)} | {value('cost_usd', view.cost_usd)} |",
    ]
    simulated = [f"- {_md(text)}" for text in summary_texts(*_simulation_summary(doc))]
    lines += ["", *simulated] if simulated else []
    return "\n".join(lines + _failed_rows(document_cases(doc))) + "\n"


def _simulation_summary(
    doc: StreamedDocument | Mapping[str, Any],
) -> tuple[Mapping[str, Any] | None, Mapping[str, Any] | None]:
    """The summary's ``simulated`` and ``simulator`` (``tracegrade run`` with simulated users)."""
    if isinstance(doc, StreamedDocument):
        return doc.head.summary.simulated, doc.head.summary.simulator
    summary = doc.get("summary") or {}
    return summary.get("simulated"), summary.get("simulator")


FAILED_LISTED = 50
"""Failed cases a run's Markdown summary lists; the rest are counted (GitHub caps a step
summary at 1 MiB)."""


def _leading(case: CaseEntry) -> list[str]:
    """A failed case's reasons, its hard failures first (a FAIL at a score of 1.000 says why)."""
    hard = list(case.hard_failures)
    return [*hard, *(r for r in case.reasons if r not in hard)]


def _failed_rows(cases: Iterable[CaseEntry]) -> list[str]:
    """The Markdown table of the first :data:`FAILED_LISTED` failed cases, then how many more
    failed. One pass over ``cases`` (the run document's, possibly streamed from the case log)
    holding only the rows listed."""
    rows: list[str] = []
    more = 0
    for case in cases:
        if case.passed:
            continue
        if len(rows) == FAILED_LISTED:
            more += 1
            continue
        rows.append(
            f"| {_md(str(case.case_id or case.trace_id))} | "
            f"{value('score', case.score)} | {_md('; '.join(_leading(case)[:3]))} |"
        )
    if not rows:
        return []
    tail = (
        [
            "",
            f"and {more:,} more failed cases (all are in the run's JSON or the stored run)",
        ]
        if more
        else []
    )
    return ["", "| failed case | score | reasons |", "|---|---:|---|", *rows, *tail]
