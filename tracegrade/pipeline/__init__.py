"""The use cases every face calls: read traces, score, run, follow, build a dataset, compare.

``tracegrade score``, ``tracegrade run``, the Python API (:func:`tracegrade.evaluate_dataset`),
the pytest plugin and the dashboard all go through these functions, so the same input gives
the same result on every face. A command parses its options, calls one function here and
renders what it returns.

- :mod:`._score`: :func:`score` (:class:`ScoreOptions` -> :class:`ScoredRun`);
- :mod:`._run`: :func:`run` (:class:`RunOptions` -> :class:`RunOutcome`), the agents;
- :mod:`.follow`: the production follower (``score --follow``), :mod:`.follow_workers` its
  scoring processes (:mod:`tracegrade.store.leases` renews their claims);
- :mod:`.retention`: :func:`prune` (``prune``), a receiver's retention (``collect
  --retention``);
- :mod:`.dataset`: :func:`build` (``dataset build``);
- :mod:`._compare`: :func:`compare` (``compare``); :mod:`.gate`: baselines and the gate;
- :mod:`.judging`: the judge of a run, :func:`check_judge` (``judge-check``);
- :mod:`.evaluate`: :func:`evaluate_dataset`, the Python API's one call;
- :mod:`.suite`: a test session's cases (the pytest plugin);
- :mod:`.reading`: the one way to read traces (files or the store; which traces);
- :mod:`.export`: ``--export-otlp`` (results and figures sent to an OTLP backend);
- :mod:`.views`: what the dashboard and ``runs``/``history`` read; :mod:`.outputs`;
- :mod:`.review` (queues, labels and their files), :mod:`._promote`, :mod:`._agreement`,
  :mod:`.conversations`: the review loop (queues, labels, golden cases from
  reviewed conversations, agreement with people; ``judge-check``: :mod:`.judge_check`);
- the dashboard's page data lives beside its routes (:mod:`tracegrade.web.pages`, with
  :mod:`tracegrade.web.chat` and :mod:`tracegrade.web.waterfall`).
"""

from typing import TYPE_CHECKING

from tracegrade._util.lazy_import import lazy

_EXPORTS = {
    # scoring and running
    "ScoreOptions": "tracegrade.pipeline._score",
    "ScoredRun": "tracegrade.pipeline._score",
    "score": "tracegrade.pipeline._score",
    "RunOptions": "tracegrade.pipeline._run",
    "AgentOptions": "tracegrade.runner.agents.options",
    "RunOutcome": "tracegrade.pipeline._run",
    "run": "tracegrade.pipeline._run",
    "evaluate_dataset": "tracegrade.pipeline.evaluate",
    # datasets, comparisons, the judge
    "DatasetBuildOptions": "tracegrade.pipeline.dataset",
    "build": "tracegrade.pipeline.dataset",
    "CompareOptions": "tracegrade.pipeline._compare",
    "compare": "tracegrade.pipeline._compare",
    "JudgeCheckOptions": "tracegrade.pipeline._agreement",
    # the review loop
    "QueueRule": "tracegrade.pipeline.review",
    "build_queue": "tracegrade.pipeline.review",
    "record_label": "tracegrade.pipeline.review",
    "promote": "tracegrade.pipeline._promote",
    "AgreementOptions": "tracegrade.pipeline._agreement",
    "agreement": "tracegrade.pipeline._agreement",
    "check_judge": "tracegrade.pipeline._agreement",
    # retention
    "PruneOptions": "tracegrade.pipeline.retention",
    "prune": "tracegrade.pipeline.retention",
    # reading traces
    "load": "tracegrade.pipeline.reading",
    "load_batches": "tracegrade.pipeline.reading",
    "traces_by_id": "tracegrade.pipeline.reading",
    "from_files": "tracegrade.pipeline.reading",
    "from_store": "tracegrade.pipeline.reading",
}
__all__ = [
    "ScoreOptions",
    "ScoredRun",
    "score",
    "RunOptions",
    "AgentOptions",
    "RunOutcome",
    "run",
    "evaluate_dataset",
    "DatasetBuildOptions",
    "build",
    "CompareOptions",
    "compare",
    "JudgeCheckOptions",
    "check_judge",
    "QueueRule",
    "build_queue",
    "record_label",
    "promote",
    "AgreementOptions",
    "agreement",
    "PruneOptions",
    "prune",
    "load",
    "load_batches",
    "traces_by_id",
    "from_files",
    "from_store",
]
__getattr__, __dir__ = lazy(_EXPORTS)

if TYPE_CHECKING:
    from tracegrade.pipeline._agreement import (
        AgreementOptions,
        JudgeCheckOptions,
        agreement,
        check_judge,
    )
    from tracegrade.pipeline._compare import CompareOptions, compare
    from tracegrade.pipeline._promote import promote
    from tracegrade.pipeline._run import RunOptions, RunOutcome, run
    from tracegrade.pipeline._score import ScoredRun, ScoreOptions, score
    from tracegrade.pipeline.dataset import DatasetBuildOptions, build
    from tracegrade.pipeline.evaluate import evaluate_dataset
    from tracegrade.pipeline.reading import from_files, from_store, load, load_batches, traces_by_id
    from tracegrade.pipeline.retention import PruneOptions, prune
    from tracegrade.pipeline.review import QueueRule, build_queue, record_label
    from tracegrade.runner.agents.options import AgentOptions
