"""Terminal rendering for ``tracegrade review`` and ``tracegrade agreement``: a conversation as
a chat with tracegrade's scores and the feedback beside it, queues, and agreement tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from tracegrade.cli.render import short
from tracegrade.web.chat import Chat

_ROLE = {
    "user": "[bold blue]user[/]",
    "history": "[bold blue]user[/] [dim](earlier turn)[/]",
    "assistant": "[bold green]assistant[/]",
}


def _print_chat(out: Console, chat: Chat) -> None:
    """Each message of the chat, its tool calls on their own lines."""
    for message in chat.messages:
        if message.text:
            out.print(f"  {_ROLE[message.role]}: {escape(message.text)}")
        if message.error:
            out.print(f"  [red]✗ LLM call failed: {escape(short(message.error, 100))}[/]")
        for call in message.tool_calls:
            outcome = (
                f"[red]✗ {escape(short(call.error, 100))}[/]"
                if call.error
                else escape(short(call.result or "", 100))
            )
            arguments = escape(short(call.arguments or "", 80))
            out.print(f"  [yellow]tool[/] {escape(call.name)}({arguments}) → {outcome}")
    if chat.missing:
        out.print(f"  [dim]not stored: {', '.join(chat.missing)}[/]")


def print_conversation(out: Console, view: Mapping[str, Any]) -> None:
    """The chat, then scores, feedback and earlier labels of a :func:`review_view`."""
    out.print(
        f"[bold]conversation[/] {escape(view['key'])} · traces {', '.join(view['trace_ids'])}"
    )
    _print_chat(out, view["chat"])
    scores = view["scores"]
    verdict = {True: "[green]pass[/]", False: "[red]fail[/]", None: "n/a"}[scores["passed"]]
    score = "n/a" if scores["score"] is None else f"{scores['score']:.2f}"
    out.print(f"[bold]tracegrade[/]: {verdict} · score {score}")
    for name, found in scores["scorers"].items():
        value = "n/a" if found["value"] is None else f"{found['value']:.2f}"
        out.print(f"  {escape(name)} {value}: {escape(short(found['reason'] or '', 120))}")
    for found in view["feedback"]:
        polarity = {True: "[green]+[/]", False: "[red]-[/]", None: "?"}[found["positive"]]
        said = found["label"] if found["label"] is not None else found["score"]
        what = f"{escape(found['name'])} = {escape(str(said))} ({found['source']})"
        out.print(f"[bold]feedback[/] {polarity} {what} {escape(found['explanation'] or '')}")
    if view["feedback_total"] > len(view["feedback"]):
        out.print(
            f"[bold]feedback[/] the first {len(view['feedback'])} of {view['feedback_total']:,}"
        )
    for label in view["labels"]:
        who = f"{label['verdict']} by {escape(label['reviewer'])}"
        out.print(f"[bold]label[/] {who}: {escape(label['note'] or '')}")


def queues_table(queues: Sequence[Mapping[str, Any]]) -> Table:
    """Queues with their rule and progress."""
    table = Table(title="review queues", title_justify="left")
    for column in ("queue", "rule", "done", "claimed", "open", "total", "by"):
        table.add_column(column, overflow="fold")
    for queue in queues:
        rule = ", ".join(f"{k}={v}" for k, v in queue["rule"].items()) or "all"
        table.add_row(
            escape(queue["name"]),
            escape(rule),
            str(queue["done"]),
            str(queue["claimed"]),
            str(queue["open"]),
            str(queue["total"]),
            escape(queue["created_by"] or "-"),
        )
    return table


def _num(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def agreement_table(rows: Sequence[Any], title: str = "agreement with people") -> Table:
    """One line per rater and reference: n, agreed, accuracy, precision and recall of "fail",
    Cohen's kappa with its interval, disagreements."""
    table = Table(title=title, title_justify="left")
    for column in (
        "rater",
        "vs",
        "n",
        "agree",
        "accuracy",
        "fail precision",
        "fail recall",
        "kappa [95% CI]",
    ):
        table.add_column(column, justify="left" if column in ("rater", "vs") else "right")
    for row in rows:
        stats = row.stats
        interval = (
            ""
            if stats.kappa_low is None
            else f" [{_num(stats.kappa_low)}, {_num(stats.kappa_high)}]"
        )
        table.add_row(
            escape(row.rater),
            row.reference,
            str(stats.n),
            str(stats.agreed),
            _num(stats.accuracy),
            _num(stats.precision),
            _num(stats.recall),
            escape(_num(stats.kappa) + interval),
        )
    return table


def print_disagreements(out: Console, rows: Sequence[Any], limit: int) -> None:
    """The disagreeing conversations of each rater (at most ``limit`` each)."""
    for row in rows:
        if not row.disagreements:
            continue
        count = len(row.disagreements)
        out.print(f"[bold]{escape(row.rater)}[/] disagrees with {row.reference} on {count}:")
        for pair in row.disagreements[:limit]:
            human, ours = ("pass" if pair.reference else "fail"), ("pass" if pair.rater else "fail")
            why = escape(short(pair.reason, 110))
            out.print(f"  {escape(pair.conversation)}: people {human}, tracegrade {ours} · {why}")
