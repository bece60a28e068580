"""``tracegrade agreement``: how well every scorer, production rule, the overall verdict and the
judge agree with human labels and end-user feedback."""

from __future__ import annotations

import click

from tracegrade.cli.options import config_option, reading_db_option
from tracegrade.cli.render import console
from tracegrade.cli.review_render import agreement_table, print_disagreements
from tracegrade.pipeline._agreement import AgreementOptions, agreement


@click.command("agreement")
@reading_db_option
@click.option("--since", help="Labels and feedback since: 30m, 12h, 7d or an ISO date.")
@click.option(
    "--dataset",
    type=click.Path(exists=True, dir_okay=False),
    help="Score the conversations against this dataset's cases (default: reference-free).",
)
@config_option
@click.option(
    "--judge/--no-judge",
    default=False,
    show_default=True,
    help="Run the LLM judge on every conversation (default: stored judge verdicts only).",
)
@click.option(
    "--show",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Disagreeing conversations listed per rater.",
)
@click.option("--json", "json_path", type=click.Path(dir_okay=False), help="Write the report.")
def command(
    db: str | None,
    since: str | None,
    dataset: str | None,
    config_path: str | None,
    judge: bool,
    show: int,
    json_path: str | None,
) -> None:
    """Score the conversations people labelled or end users rated (as tracegrade score does)
    and report, per rater and reference, counts, accuracy, precision and recall of "fail", and
    Cohen's kappa with its 95% interval; then the conversations they disagree on."""
    options = AgreementOptions(db, since, dataset, config_path, judge, json_path)
    report = agreement(options)
    out = console()
    out.print(
        f"{report.conversations} conversation(s): {report.labelled} labelled, "
        f"{report.with_feedback} with end-user feedback"
        + (f", {report.not_scored} matching no case" if report.not_scored else "")
        + f"; a scorer passes at {report.threshold:g}"
    )
    out.print(agreement_table(report.rows))
    print_disagreements(out, report.rows, show)
