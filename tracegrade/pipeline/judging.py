"""The LLM judge of a run: which cases it judges, its credentials checked once, its verdicts
cached in the store (how well it agrees with people: ``judge-check``, :mod:`._agreement`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from tracegrade.config import Config
from tracegrade.dataset import Case, Dataset
from tracegrade.judge.scorer import JudgeScorer
from tracegrade.judge.settings import resolve_settings
from tracegrade.store.judge_cache import JudgeCache
from tracegrade.store.traces import Store


@dataclass(frozen=True)
class JudgeOptions:
    """The LLM judge of a run: ``mode`` None judges the cases with a rubric, True every case
    and trace, False none; ``model`` (else ``$TRACEGRADE_JUDGE_MODEL``), calls at once, and
    rounds per verdict."""

    mode: bool | None = None
    model: str | None = None
    concurrency: int = 4
    repeat: int = 1


def make_judge(
    config: Config, dataset: Dataset | None, cases: Sequence[Case | None], options: JudgeOptions
) -> JudgeScorer | None:
    """The judge scorer for a run over ``cases`` (None: a trace without a case), or None when
    no case is judged. ``options.mode``: None judges cases with a rubric, True every case and
    trace (``--judge``), False none (``--no-judge``: cases with a rubric show the judge
    skipped).

    Raises:
        ConfigError: a case needs the judge and no API key is configured (checked here, once,
            before any trace is scored).
    """
    settings = resolve_settings(
        options.model,
        pricing=config.pricing,
        config=config.judge,
        concurrency=options.concurrency,
        repeat=options.repeat,
    )
    scorer = JudgeScorer(
        settings,
        default=dataset.judge if dataset else None,
        judge_all=bool(options.mode),
        enabled=options.mode is not False,
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
