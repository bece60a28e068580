"""``tracegrade judge-check``: agreement of the LLM judge with human labels (a view of
``tracegrade agreement``: the same measures, the same table)."""

from __future__ import annotations

import sys

import click
from rich.markup import escape
from rich.table import Table

from tracegrade.cli.options import (
    config_option,
    dataset_ref,
    db_option,
    files_argument,
    judge_options,
    mapping_option,
    messages_key_option,
    report_errors,
    require_store,
)
from tracegrade.cli.render import console
from tracegrade.cli.review_render import agreement_table
from tracegrade.errors import ExitCode
from tracegrade.judge.calibrate import Agreement
from tracegrade.pipeline._agreement import JudgeCheckOptions, RaterRow, check_judge


def _rows_table(agreement: Agreement) -> Table:
    table = Table(title="labelled cases", title_justify="left")
    for column in ("case", "trace", "label", "judge", "score", "note"):
        table.add_column(column, overflow="fold")
    for row in agreement.rows:
        verdict = row.judge or "[yellow]not judged[/]"
        if row.judge is not None and row.judge != row.label:
            verdict = f"[red]{row.judge}[/]"
        table.add_row(
            escape(row.case_id),
            (row.trace_id or "-")[:12],
            row.label,
            verdict,
            "n/a" if row.score is None else f"{row.score:.2f}",
            escape(row.note[:200]),
        )
    return table


def _summary(agreement: Agreement) -> str:
    def fmt(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    usage = agreement.usage
    cost = "n/a" if usage.cost_usd is None else f"${usage.cost_usd:,.4f}"
    confusion = ", ".join(f"{k} {v}" for k, v in agreement.confusion.items())
    return (
        f"[bold]judge agreement[/] on {agreement.compared} labelled case(s): "
        f"accuracy {fmt(agreement.accuracy)} · Cohen's kappa {fmt(agreement.kappa)} · "
        f"label/judge: {confusion}"
        + (f" · [yellow]{agreement.not_compared} not compared[/]" if agreement.not_compared else "")
        + f"\njudge usage: {usage.calls} call(s), {usage.cached} from cache, "
        f"tokens {usage.input_tokens:,} in / {usage.output_tokens:,} out, est. cost {cost}"
    )


@click.command("judge-check")
@click.argument("dataset_path", metavar="[DATASET]", required=False, callback=dataset_ref)
@files_argument
@db_option
@messages_key_option
@judge_options
@mapping_option
@config_option
@click.option(
    "--min-kappa", type=click.FloatRange(-1, 1), help="Exit 1 when Cohen's kappa is below this."
)
@click.option(
    "--from-review",
    is_flag=True,
    help="Compare with the store's human labels (tracegrade review) instead of DATASET's.",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write the agreement report (JSON).",
)
def command(
    dataset_path: str | None,
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    judge_model: str | None,
    judge_concurrency: int,
    judge_repeat: int,
    mapping: str | None,
    config_path: str | None,
    min_kappa: float | None,
    from_review: bool,
    json_path: str | None,
) -> None:
    """Run the LLM judge on the DATASET cases that carry a human ``label: pass|fail`` (traces
    from FILEs, or the store), or with --from-review on the conversations people labelled
    (tracegrade review), and report agreement as tracegrade agreement does. A case without a
    rubric is judged with the dataset's default rubric, else faithfulness."""
    if from_review or not files:
        require_store(db)
    options = JudgeCheckOptions(
        dataset_path,
        files,
        db,
        messages_key,
        judge_model,
        judge_concurrency,
        judge_repeat,
        mapping,
        config_path,
        json_path,
    )
    agreement, errors = check_judge(options, from_review, report_errors)
    out = console()
    out.print(_rows_table(agreement))
    out.print(agreement_table([RaterRow("judge", "labels", agreement.stats, ())]))
    out.print(_summary(agreement))
    below = min_kappa is not None and (agreement.kappa is None or agreement.kappa < min_kappa)
    sys.exit(int(ExitCode.FAILED if below else ExitCode.USAGE if errors else ExitCode.OK))
