"""Rich terminal rendering of normalised traces and lint reports."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import MofNCompleteColumn, Progress, TextColumn
from rich.table import Table
from rich.tree import Tree

from tracegrade.curate.build import BuildReport
from tracegrade.normalize.explain import Explanation
from tracegrade.normalize.lint import LintReport
from tracegrade.report import terminal
from tracegrade.trace import AgentTrace, LlmCall, Retrieval, ToolCall

_STATUS_STYLE = {"ok": "green", "partial": "yellow", "missing": "red", "implausible": "red"}


def built_line(report: BuildReport, existing: int, path: str) -> str:
    """``dataset build``'s summary: cases written (or added), from how many conversations,
    near-duplicates collapsed, already in the dataset (``--append``), without a user input."""
    return (
        f"{len(report.cases)} case(s) {'added to' if existing else 'written to'} {path} from "
        f"{report.selected} of {report.conversations} conversation(s); "
        f"{report.duplicates} near-duplicate(s) collapsed"
        + (f", {report.already_in} already in the dataset" if report.already_in else "")
        + (f", {report.skipped} without a user input" if report.skipped else "")
        + (f"; {existing} existing case(s) kept" if existing else "")
    )


def console() -> Console:
    """The console commands print to (see :mod:`tracegrade.report.terminal`)."""
    return terminal.console()


def stored_line(run_id: str, location: str) -> str:
    """Where a finished run was stored, and the commands that read it back."""
    return (
        f"run {run_id} stored in {location}: `tracegrade runs show {run_id}`, "
        "`tracegrade compare`, `tracegrade history`, `tracegrade ui` read it "
        "(--no-save: not stored)"
    )


def short(value: Any, limit: int = 90) -> str:
    """One line of at most ``limit`` characters for ``value`` (JSON for structures)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tokens(input_tokens: int | None, output_tokens: int | None) -> str:
    if input_tokens is None and output_tokens is None:
        return "tokens n/a"
    return f"{input_tokens or 0:,} in / {output_tokens or 0:,} out tokens"


def _tool_label(call: ToolCall) -> str:
    args = short(call.arguments, 70) if call.arguments_recorded else "?"
    timing = f" · {call.duration_ms:.1f} ms" if call.duration_ms is not None else ""
    label = f"[bold]tool[/] {escape(call.name)}({escape(args)}){timing}"
    if call.error:
        return f"{label} [red]✗ {escape(short(call.error, 80))}[/]"
    result = "[dim]no result recorded[/]" if call.result is None else escape(short(call.result, 80))
    return f"{label} → {result}"


def _llm_label(index: int, call: LlmCall) -> str:
    parts = [
        call.model or "model?",
        f"{call.duration_ms:.0f} ms",
        _tokens(call.input_tokens, call.output_tokens),
    ]
    if call.finish_reason:
        parts.append(call.finish_reason)
    label = f"[cyan]LLM #{index + 1}[/] " + " · ".join(escape(p) for p in parts)
    return label + (f" [red]✗ {escape(call.error)}[/]" if call.error else "")


def _add_retrieval(tree: Tree, retrieval: Retrieval) -> None:
    """A retrieval's node: retriever, query, timing and count, then one line per document."""
    query = "?" if retrieval.query is None else short(retrieval.query, 70)
    found = (
        f"{len(retrieval.documents)} document(s)"
        if retrieval.documents_recorded
        else "[dim]documents not recorded[/]"
    )
    label = (
        f"[blue]retrieval[/] {escape(retrieval.name or '?')}({escape(query)}) · "
        f"{retrieval.duration_ms:.1f} ms → {found}"
    )
    if retrieval.error:
        label += f" [red]✗ {escape(short(retrieval.error, 80))}[/]"
    node = tree.add(label)
    for document in retrieval.documents:
        head = escape(document.id or "(no id)")
        if document.score is not None:
            head += f" [dim]score {document.score:.3g}[/]"
        content = (
            "[dim]content not recorded[/]"
            if document.content is None
            else escape(short(document.content, 100))
        )
        node.add(f"{head} · {content}")


def trace_tree(trace: AgentTrace) -> Tree:
    """A tree: header, user inputs, LLM calls with the tool calls they requested, retrievals
    (with their documents) where they happened among the LLM calls, answer, gaps."""
    header = (
        f"[bold]trace {trace.trace_id}[/] · {escape(trace.root_span_name)} · "
        f"{', '.join(trace.conventions) or 'no known convention'} · {trace.duration_ms:,.0f} ms · "
        f"{_tokens(trace.input_tokens, trace.output_tokens)}"
    )
    tree = Tree(header)
    if trace.conversation_id or trace.history:
        name = escape(trace.conversation_id) if trace.conversation_id else "(no id)"
        node = tree.add(f"conversation {name} · turn {len(trace.history) + 1}")
        if trace.history:
            earlier = node.add(f"[dim]history[/] ({len(trace.history)})")
            for text in trace.history:
                earlier.add(f"[dim]{escape(short(text))}[/]")
    users = tree.add(f"[magenta]user inputs[/] ({len(trace.user_inputs)})")
    for text in trace.user_inputs:
        users.add(escape(short(text)))
    by_turn: dict[int | None, list[ToolCall]] = {}
    for call in trace.tool_calls:
        by_turn.setdefault(call.llm_call_index, []).append(call)
    retrievals = sorted(trace.retrievals, key=lambda r: r.start_unix_nano)
    for index, llm in enumerate(trace.llm_calls):
        while retrievals and retrievals[0].start_unix_nano <= llm.start_unix_nano:
            _add_retrieval(tree, retrievals.pop(0))
        node = tree.add(_llm_label(index, llm))
        if llm.output_text:
            node.add(f"[dim]{escape(short(llm.output_text))}[/]")
        for call in by_turn.get(index, []):
            node.add(_tool_label(call))
    for call in by_turn.get(None, []):
        tree.add(_tool_label(call))
    for retrieval in retrievals:
        _add_retrieval(tree, retrieval)
    answer = trace.final_output
    tree.add(
        "[green]answer[/] " + (escape(short(answer, 200)) if answer is not None else "[dim]none[/]")
    )
    if trace.gaps:
        gaps = tree.add("[yellow]gaps[/]")
        for gap in trace.gaps:
            gaps.add(f"{gap.field}: {escape(gap.reason)}")
    return tree


def traces(items: Sequence[AgentTrace], *, total: bool = True) -> None:
    """Print one tree per trace, then (unless ``total`` is False: a streamed listing prints
    :func:`traces_total` at its end) a one-line total."""
    out = console()
    for trace in items:
        out.print(trace_tree(trace))
        out.print()
    if total:
        tools = sum(len(t.tool_calls) for t in items)
        traces_total(len(items), sum(len(t.llm_calls) for t in items), tools)


def explanations(items: Sequence[Explanation]) -> None:
    """Print, per trace, each span's role and what gave it, then each derived field with the
    span and the ``map: attribute`` it came from, then unread content (``inspect --explain``)."""
    out = console()
    for item in items:
        spans = Table(title=f"trace {item.trace.trace_id} · spans", title_justify="left")
        for column in ("span", "role", "because", "maps"):
            spans.add_column(column, overflow="fold")
        for span in item.spans:
            spans.add_row(
                f"{span.name} ({span.span_id})",
                span.role or "-",
                span.role_origin or "-",
                ", ".join(span.conventions) or "-",
            )
        out.print(spans)
        fields = Table(title="fields", title_justify="left")
        for column in ("field", "value", "span", "read from"):
            fields.add_column(column, overflow="fold")
        for found in item.fields:
            fields.add_row(found.field, found.value, found.span, found.read_from)
        out.print(fields)
        for where, attribute in item.unread:
            out.print(
                f"[yellow]unread content[/] in {attribute} (span {where}): add a convention map"
            )
        out.print()


def traces_total(count: int, llm_calls: int, tool_calls: int) -> None:
    """The one-line total of :func:`traces`."""
    console().print(f"{count} trace(s), {llm_calls} LLM call(s), {tool_calls} tool call(s)")


def lint_reports(reports: Sequence[LintReport], *, total: bool = True) -> None:
    """Print one table per trace, then (unless ``total`` is False) :func:`lint_total`."""
    out = console()
    for report in reports:
        conventions = ", ".join(report.conventions) or "no known convention"
        table = Table(
            title=f"trace {report.trace_id} · {conventions}",
            title_justify="left",
        )
        for column in ("input", "status", "detail", "used by"):
            table.add_column(column, overflow="fold")
        for check in report.checks:
            style = _STATUS_STYLE[check.status]
            table.add_row(
                check.input, f"[{style}]{check.status}[/]", escape(check.detail), check.used_by
            )
        out.print(table)
    if total:
        lint_total(len(reports), sum(1 for r in reports if not r.ok))


def lint_total(count: int, missing: int) -> None:
    """The one-line total of :func:`lint_reports`."""
    console().print(f"{count} trace(s), {missing} with missing inputs")


@contextmanager
def progress_counter(label: str, shown_from: int) -> Iterator[Callable[[Any], None]]:
    """A count of the items done on stderr (the total is not known while streaming), shown
    from ``shown_from`` items on; yields the function to call per item."""
    progress = Progress(
        TextColumn(label),
        MofNCompleteColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = progress.add_task(label, total=None)
    seen = 0

    def advance(_result: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == shown_from:
            progress.start()
        progress.advance(task)

    try:
        yield advance
    finally:
        if progress.live.is_started:  # stopping one never started writes a blank line
            progress.stop()
