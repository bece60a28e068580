"""The Python API's one call: score traces already read, as ``tracegrade score`` does.

:func:`evaluate_dataset` is :func:`tracegrade.pipeline._score.score` over traces in memory,
nothing written or stored: the same scorers (built-in, plugins, the LLM judge for cases with
a rubric), the same matching, the same summary, so the same traces and cases give the same
results and verdicts as the command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tracegrade.config import Config
from tracegrade.dataset import Dataset, Tier
from tracegrade.pipeline._score import ScoreOptions, score
from tracegrade.pipeline.gate import GateOptions, OutputOptions
from tracegrade.pipeline.judging import JudgeOptions
from tracegrade.scoring.results import RunResult
from tracegrade.trace import AgentTrace


def evaluate_dataset(
    traces: Sequence[AgentTrace],
    dataset: Dataset | None = None,
    *,
    config: Config | None = None,
    threshold: float | None = None,
    tier: Tier | None = None,
    judge: bool | None = None,
    mapping: Mapping[str, Sequence[str]] | None = None,
) -> RunResult:
    """Score normalised traces against a golden dataset's cases (reference-free without one)
    with every built-in and plugin scorer and, for cases with a rubric, the LLM judge
    (``judge``: None as ``score``, False never, True every case): what ``tracegrade score``
    does, as one call, nothing written or stored.

    ``config`` defaults to :func:`~tracegrade.config.load_config` (defaults, then
    ``./tracegrade.yaml``); ``threshold`` (0-1) overrides the pass threshold; ``mapping`` maps
    case ids to trace ids.

    Raises:
        ConfigError: the config names an unknown scorer, a plugin cannot be loaded, the judge
            has no credentials, or there are no traces.
    """
    options = ScoreOptions(
        traces=traces,
        dataset=dataset,
        config=config,
        tier=tier,
        mapping=mapping,
        keep_results=True,
        judge=JudgeOptions(mode=judge),
        gate=GateOptions(threshold=threshold),
        output=OutputOptions(save=False),
    )
    with score(options) as run:
        return run.run_result()
