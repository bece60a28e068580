"""The rich console report of a run: summary, per-axis averages, failed cases, and with
``verbose`` every case's scores and reasons."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracegrade.report import terminal
from tracegrade.report.simulated import case_lines, summary_lines
from tracegrade.run_document import (
    CaseEntry,
    CategoryFigures,
    ClarifierTotals,
    JudgeTotals,
    LatencySample,
    RunHead,
    RunSummaryEntry,
    Spent,
    StreamedDocument,
    TagFigures,
    document_cases,
    read_head,
)
from tracegrade.scoring.labels import scorer_label
from tracegrade.scoring.results import content_note


def _fmt(value: float | None, pattern: str = "{:.2f}") -> str:
    return "n/a" if value is None else pattern.format(value)


def _duration(ms: float | None) -> str:
    if ms is None:
        return "n/a"
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms"


def _cases(run: int, in_dataset: int | None) -> str:
    """How many cases ran, of the dataset's when ``--case`` or a tier chose fewer."""
    if in_dataset is None or run >= in_dataset:
        return f"{in_dataset if in_dataset is not None else run} cases"
    return f"{run} of {in_dataset} cases"


def _header(head: RunHead) -> str:
    run, summary = head.run, head.summary
    dataset = run.dataset
    what = (
        (
            f"dataset [bold]{escape(str(dataset.name))}[/] "
            f"({_cases(summary.results, dataset.cases)}"
            + (f", tier {run.tier}" if run.tier else "")
            + ")"
        )
        if dataset
        else "reference-free scoring"
    )
    threshold = f"{summary.threshold:.2f}" if summary.threshold is not None else "n/a"
    return f"[bold]tracegrade[/] run {run.run_id} · {what} · threshold {threshold}"


def _axes_table(summary: RunSummaryEntry) -> Table:
    table = Table(title="averages", title_justify="left")
    table.add_column("axis / scorer")
    table.add_column("mean", justify="right")
    table.add_column("not scored", justify="right")
    names = list(summary.axes) + [n for n in summary.scorers if n not in summary.axes]
    for name in names:
        value = summary.axes.get(name, summary.scorers.get(name))
        table.add_row(
            scorer_label(name) + (" (axis)" if name in summary.axes else ""),
            _fmt(value),
            str(summary.excluded.get(name, "")),
        )
    return table


def _totals(summary: RunSummaryEntry) -> str:
    rate = summary.hallucination_rate
    cost = summary.cost_usd
    colour = "[green]" if summary.failed == 0 else "[red]"
    return " · ".join(
        [
            f"[bold]{colour}passed {summary.passed}/{summary.results}[/][/]"
            f" ({_fmt(summary.pass_rate, '{:.0%}')})",
            f"score {_fmt(summary.score)}",
            f"latency p50 {_duration(summary.latency_p50_ms)}"
            f" / p95 {_duration(summary.latency_p95_ms)}"
            f" / mean {_duration(summary.latency_mean_ms)}"
            f" / total {_duration(summary.latency_total_ms)}"
            f" (LLM call p95 {_duration(summary.llm_latency_p95_ms)}, tool call p95 "
            f"{_duration(summary.tool_latency_p95_ms)})",
            "tokens n/a"
            if summary.input_tokens is None and summary.output_tokens is None
            else f"tokens {summary.input_tokens or 0:,} in / {summary.output_tokens or 0:,} out",
            f"est. cost {'n/a' if cost is None else f'${cost:,.4f}'}" + _spent(summary),
            f"hallucination rate {'n/a' if rate is None else f'{rate:.0%}'}",
        ]
    )


def _spent(summary: RunSummaryEntry) -> str:
    """With repeats the tokens and cost above are one attempt per case: add what was spent."""
    spent: Spent | None = summary.spent
    if spent is None or spent.attempts <= summary.results:
        return ""
    cost = spent.cost_usd
    return (
        f" (one attempt per case) · spent over {spent.attempts} attempts: tokens "
        f"{spent.input_tokens or 0:,} in / {spent.output_tokens or 0:,} out, est. cost "
        + ("n/a" if cost is None else f"${cost:,.4f}")
    )


def _judge_line(judge: JudgeTotals) -> str:
    """The judge's own usage, apart from the agent's tokens and cost above it."""
    cost = judge.cost_usd
    errors = judge.errors
    return (
        f"judge {escape(', '.join(judge.models))}: {judge.calls} call(s)"
        f" ({judge.cached} verdict(s) from cache) · tokens {judge.input_tokens:,} in / "
        f"{judge.output_tokens:,} out · est. cost {'n/a' if cost is None else f'${cost:,.4f}'}"
        + (f" · [red]{errors} judge error(s)[/]" if errors else "")
    )


def _cases_table(cases: list[CaseEntry], title: str, verbose: bool) -> Table:
    table = Table(title=title, title_justify="left", show_lines=verbose)
    for column in ("case", "trace", "score", "result", "reasons"):
        table.add_column(column, overflow="fold")
    for case in cases:
        reasons = _reasons(case, verbose)
        verdict = "[green]pass[/]" if case.passed else "[red]FAIL[/]"
        if case.flaky:
            verdict += f" [yellow]flaky[/] (spread {_fmt(case.spread)})"
        table.add_row(
            escape(str(case.case_id or "-")),
            (case.trace_id or "-")[:12],
            _fmt(case.score),
            verdict,
            escape("\n".join(reasons[: 12 if verbose else 3])),
        )
    return table


def _reasons(case: CaseEntry, verbose: bool) -> list[str]:
    """A case's reasons as its row shows them: its hard failures first (a case failing at a
    score of 1.00 says why before anything else), then the note that its traces carry no
    message content (it explains the rest), then its reasons, or with ``verbose`` every
    scorer's value and reason."""
    hard = list(case.hard_failures)
    rest = (
        [f"{scorer_label(name)}: {_fmt(d.value)} — {d.reason}" for name, d in case.details.items()]
        if verbose and case.details
        else case.reasons
    )
    note = content_note(case.notes)
    return [*hard, *([note] if note else []), *(r for r in rest if r not in hard)]


def _followups(case: CaseEntry) -> list[str]:
    """The clarification follow-ups ``tracegrade run`` sent: the agent's question, the reply."""
    return [
        f"follow-up ({sent.written_by}) {escape(str(case.case_id))}: agent asked "
        f"{escape(repr(_clip(sent.question)))} -> {escape(repr(_clip(sent.reply)))}"
        for attempt in case.attempts
        for sent in attempt.followup_messages
    ]


class _Read:
    """What one pass over the cases gathers: the follow-up lines, the first ``limit`` cases
    the table shows (every case when verbose, else the failed ones and those whose traces carry
    no message content), how many more it leaves out, and the cases without content (with the
    first such note, which names the switch)."""

    def __init__(self, cases: Iterable[CaseEntry], verbose: bool, limit: int | None) -> None:
        self.followups: list[str] = []
        self.shown: list[CaseEntry] = []
        self.more = self.cases = self.without_content = 0
        self.content_note: str | None = None
        for case in cases:
            self.cases += 1
            self.followups += _followups(case) + case_lines(case)
            note = content_note(case.notes)
            if note is not None:
                self.without_content += 1
                self.content_note = self.content_note or note
            if verbose or not case.passed or note is not None:
                if limit is None or len(self.shown) < limit:
                    self.shown.append(case)
                else:
                    self.more += 1


def _content_line(read: _Read) -> str:
    """Said once, before the figures: how many cases' traces carry no message content, what
    that leaves unscored, and the switch."""
    return (
        f"[bold yellow]{read.without_content} of {read.cases} case(s): "
        f"{escape(read.content_note or '')}[/]\n[yellow]without content, the answers, "
        "must_contain phrases, tool arguments and hallucination are not checked; tool names "
        "and order, call counts, budgets and errors are still scored[/]"
    )


def _print_clarifier_errors(out: Console, clarifier: ClarifierTotals | None) -> None:
    """The judge's failures while deciding clarification follow-ups (``summary.clarifier.
    errors``, ``"case id: clarifier failed: ..."``): the agent's question stood unanswered."""
    for error in clarifier.errors if clarifier else []:
        out.print(f"[red]judge error on a follow-up: {escape(error)}[/]")


def _print_tags(out: Console, by_tag: Mapping[str, TagFigures]) -> None:
    """One line per case tag: passed/cases, mean score, hallucination rate."""
    for name, totals in by_tag.items():
        rate = totals.hallucination_rate
        out.print(
            f"tag {escape(name)}: passed {totals.passed}/{totals.cases} "
            f"({_rate(totals.pass_rate)}) · score {_fmt(totals.score)} · hallucination rate "
            f"{'n/a' if rate is None else f'{rate:.0%}'}"
        )


def _print_categories(out: Console, categories: Mapping[str, CategoryFigures]) -> None:
    """One line per case category: passed/results and the mean score."""
    for name, totals in categories.items():
        out.print(
            f"category {escape(name)}: passed {totals.passed}/{totals.results} "
            f"({_rate(totals.pass_rate)}) · score {_fmt(totals.score)}"
        )


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.0%}"


def _clip(text: str, limit: int = 100) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _sample_line(sample: LatencySample) -> str:
    """Which latency percentiles were estimated from a sample (``summary.latency_sample``)."""
    values = ", ".join(
        f"{count:,} {kind.replace('_', ' ')}" for kind, count in sample.values.items()
    )
    return (
        f"[dim]latency percentiles estimated from a {sample.method} of {sample.size:,} "
        f"values (of {values} values); counts, means and totals are exact[/]"
    )


def _print_content_and_axes(out: Console, read: _Read, summary: RunSummaryEntry) -> None:
    """The missing-content line (first, when any case lacks content) and the averages table
    (none when no scorer ran: every case failed in the agent)."""
    if read.without_content:
        out.print(_content_line(read))
    if summary.axes or summary.scorers:
        out.print(_axes_table(summary))


def print_report(
    doc: StreamedDocument | Mapping[str, Any],
    *,
    verbose: bool = False,
    console: Console | None = None,
    limit: int | None = None,
    see_all: str | None = None,
) -> None:
    """Print the report of a run document: the failed cases (every case when ``verbose``),
    at most ``limit`` of them (None: all) then how many more and ``see_all``, where to see
    them. ``doc`` is read through :func:`~tracegrade.run_document.read_head` and its
    ``doc["cases"]`` once through :func:`~tracegrade.run_document.read_cases` (it may be a
    :class:`~tracegrade.report.caselog.CaseLog`).

    Raises:
        InputError: ``doc`` is not a ``tracegrade.run/1`` document (the field named).
    """
    out = console or terminal.console()
    head = read_head(doc)
    summary = head.summary
    read = _Read(document_cases(doc), verbose, limit)
    shown, more = read.shown, read.more
    out.print(_header(head))
    _print_content_and_axes(out, read, summary)
    out.print(_totals(summary))
    if summary.latency_sample:
        out.print(_sample_line(summary.latency_sample))
    if summary.judge:
        out.print(_judge_line(summary.judge))
    for line in summary_lines(summary):
        out.print(line)
    if summary.agent_errors:
        out.print(
            f"[red]{summary.agent_errors} case(s) failed in the agent (exception, crash, "
            "non-zero exit, HTTP error or timeout)[/]"
        )
    if summary.flaky:
        out.print(f"[yellow]{summary.flaky} flaky case(s): their repeats disagree on pass/fail[/]")
    for line in read.followups:
        out.print(line)
    _print_clarifier_errors(out, summary.clarifier)
    _print_categories(out, summary.categories)
    _print_tags(out, summary.by_tag)
    unmatched = summary.unmatched_cases - summary.agent_errors
    if unmatched or summary.unmatched_traces:
        out.print(
            f"[yellow]{unmatched} case(s) matched no trace; "
            f"{summary.unmatched_traces} trace(s) matched no case[/]"
        )
    if shown:
        title = "cases" if verbose else "failed cases"
        if not verbose and read.without_content:
            title += " and cases without message content"
        out.print(_cases_table(shown, title, verbose))
    if more:
        what = "case(s)" if verbose else "failed case(s)"
        out.print(f"... and {more:,} more {what}" + (f": {escape(see_all)}" if see_all else ""))
    out.print(_verdict(head))


def _verdict(head: RunHead) -> str:
    """Whether the run passed, and what it needed."""
    run = head.run
    verdict = "[green]run passed[/]" if run.passed else "[red]run failed[/]"
    needs = f"pass rate >= {run.min_pass_rate:.0%}"
    if run.min_score is not None:
        needs += f" and mean score >= {run.min_score:.2f}"
    return f"{verdict} (needs {needs})"
