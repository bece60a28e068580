"""``tracegrade judge-check``: agreement of the LLM judge with human labels; and the judge
options and set-up that ``score`` shares."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import click
from rich.markup import escape
from rich.table import Table

from tracegrade.cli.options import (
    config_option,
    db_option,
    files_argument,
    mapping_option,
    messages_key_option,
    report_errors,
    stacked,
)
from tracegrade.cli.render import console
from tracegrade.config import Config, load_config
from tracegrade.dataset import Case, Dataset, load_dataset
from tracegrade.errors import ConfigError, ExitCode
from tracegrade.judge.calibrate import Agreement, judge_check
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.judge.settings import JUDGE_MODEL_ENV, resolve_settings
from tracegrade.pipeline.outputs import write_json
from tracegrade.pipeline.reading import load, load_mapping
from tracegrade.scoring import config_for
from tracegrade.store.judge_cache import JudgeCache
from tracegrade.store.traces import Store

judge_options = stacked(
    [
        click.option(
            "--judge-model",
            envvar=JUDGE_MODEL_ENV,
            show_envvar=True,
            help="Judge model (default gpt-4o; a case's judge.model wins). Endpoint and key: "
            "TRACEGRADE_JUDGE_BASE_URL / TRACEGRADE_JUDGE_API_KEY, else OPENAI_*.",
        ),
        click.option(
            "--judge-concurrency",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Judge calls in flight at once.",
        ),
        click.option(
            "--judge-repeat",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Verdicts per case; the score is their median.",
        ),
    ]
)
"""``--judge-model``, ``--judge-concurrency``, ``--judge-repeat``."""


def make_judge(
    config: Config,
    dataset: Dataset | None,
    cases: Sequence[Case | None],
    *,
    mode: bool | None,
    model: str | None,
    concurrency: int,
    repeat: int,
) -> JudgeScorer | None:
    """The judge scorer for a run over ``cases`` (None: a trace without a case), or None when
    no case is judged. ``mode``: None judges cases with a rubric, True every case and trace
    (``--judge``), False none (``--no-judge``: cases with a rubric show the judge skipped).

    Raises:
        ConfigError: a case needs the judge and no API key is configured (checked here, once,
            before any trace is scored).
    """
    settings = resolve_settings(
        model, pricing=config.pricing, config=config.judge, concurrency=concurrency, repeat=repeat
    )
    scorer = JudgeScorer(
        settings,
        default=dataset.judge if dataset else None,
        judge_all=bool(mode),
        enabled=mode is not False,
    )
    if not any(scorer.spec(case) is not None for case in cases):
        return None
    if scorer.needs_judge(cases):
        settings.require_credentials()
    return scorer


@contextmanager
def judge_cache(db: str | None, scorer: JudgeScorer | None) -> Iterator[None]:
    """Keep the judge's verdicts in the store at ``db`` while the block runs."""
    if scorer is None or not scorer.enabled:
        yield
        return
    with Store(db) as store:
        scorer.cache = JudgeCache(store)
        try:
            yield
        finally:
            scorer.cache = JudgeCache()


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
@click.argument("dataset_path", metavar="DATASET", type=click.Path(exists=True, dir_okay=False))
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
    "--json",
    "json_path",
    type=click.Path(dir_okay=False),
    help="Write the agreement report (JSON).",
)
def command(
    dataset_path: str,
    files: tuple[str, ...],
    db: str | None,
    messages_key: str,
    judge_model: str | None,
    judge_concurrency: int,
    judge_repeat: int,
    mapping: str | None,
    config_path: str | None,
    min_kappa: float | None,
    json_path: str | None,
) -> None:
    """Run the LLM judge on the DATASET cases that carry a human ``label: pass|fail`` (traces
    from FILEs, or the store) and report agreement: accuracy and Cohen's kappa. A case without
    a rubric is judged with the dataset's default rubric, else faithfulness."""
    dataset = load_dataset(dataset_path)
    config = config_for(load_config(config_path), dataset)
    labelled = [c for c in dataset.cases if c.label is not None]
    scorer = make_judge(
        config,
        dataset,
        labelled,
        mode=True,
        model=judge_model,
        concurrency=judge_concurrency,
        repeat=judge_repeat,
    )
    if scorer is None:  # no labelled case: judge_check names the problem
        scorer = JudgeScorer(resolve_settings(judge_model), judge_all=True)
    loaded = load(files, db, messages_key)
    report_errors(loaded.errors)
    if not loaded.traces:
        raise ConfigError("no traces to judge")
    with judge_cache(db, scorer):
        agreement = judge_check(loaded.traces, dataset, scorer, load_mapping(mapping))
    if json_path:
        write_json(json_path, agreement.to_dict())
    out = console()
    out.print(_rows_table(agreement))
    out.print(_summary(agreement))
    below = min_kappa is not None and (agreement.kappa is None or agreement.kappa < min_kappa)
    sys.exit(int(ExitCode.FAILED if below else ExitCode.USAGE if loaded.errors else ExitCode.OK))
