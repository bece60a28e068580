"""The LLM judge of a run (which cases it judges, its credentials checked once, its verdicts
cached in the store), and ``judge-check``: how well it agrees with human labels."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tracegrade.config import Config, load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.errors import ConfigError, InputError
from tracegrade.judge.calibrate import Agreement, judge_check
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.judge.settings import resolve_settings
from tracegrade.pipeline.datasets import open_dataset
from tracegrade.pipeline.outputs import write_json
from tracegrade.pipeline.reading import ErrorSink, load, load_mapping
from tracegrade.scoring import config_for
from tracegrade.store.judge_cache import JudgeCache
from tracegrade.store.traces import Store


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


@dataclass(frozen=True)
class JudgeCheckOptions:
    """``judge-check``: the dataset (a path or ``store:NAME``), where its traces come from,
    the judge."""

    dataset: str | None
    files: Sequence[str] = ()
    db: str | None = None
    messages_key: str = "messages"
    judge_model: str | None = None
    judge_concurrency: int = 4
    judge_repeat: int = 1
    mapping: str | None = None
    config: str | None = None
    json_path: str | None = None


def check_judge(
    options: JudgeCheckOptions, on_errors: ErrorSink = lambda errors: None
) -> tuple[Agreement, list[InputError]]:
    """Run the judge on the dataset's cases that carry a human ``label`` and measure the
    agreement (written to ``json_path`` when given); also the input errors met.

    Raises:
        ConfigError: no traces to judge; no judge credentials.
        DatasetError: a bad dataset.
    """
    if options.dataset is None:
        raise ConfigError("judge-check needs a DATASET whose cases carry labels")
    dataset = open_dataset(options.dataset, options.db)
    config = config_for(load_config(options.config), dataset)
    labelled = [c for c in dataset.cases if c.label is not None]
    scorer = make_judge(
        config,
        dataset,
        labelled,
        mode=True,
        model=options.judge_model,
        concurrency=options.judge_concurrency,
        repeat=options.judge_repeat,
    )
    if scorer is None:  # no labelled case: judge_check names the problem
        scorer = JudgeScorer(resolve_settings(options.judge_model), judge_all=True)
    loaded = load(options.files, options.db, options.messages_key)
    on_errors(loaded.errors)
    if not loaded.traces:
        raise ConfigError("no traces to judge")
    with judge_cache(options.db, scorer):
        agreement = judge_check(loaded.traces, dataset, scorer, load_mapping(options.mapping))
    if options.json_path:
        write_json(options.json_path, agreement.to_dict())
    return agreement, loaded.errors
