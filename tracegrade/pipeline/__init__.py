"""The use cases every face calls, one module each.

``tracegrade score``, ``tracegrade run``, the Python API (:func:`tracegrade.evaluate_dataset`),
the pytest plugin, the dashboard and the MCP server all go through these functions, so the same
input gives the same result on every face. A command parses its options, calls one function
here and renders what it returns. Each use case, once:

- :mod:`._score`: score traces against a golden dataset or reference-free (``score``; and
  :func:`evaluate_dataset`, traces already read, nothing stored: the Python API);
- :mod:`._run`: run an agent through a dataset's cases and score its traces (``run``);
- :mod:`.suite`: a test session's run of each dataset, through score's run session
  (the pytest plugin);
- :mod:`.follow`: score traces as they settle in the store (``score --follow``), with
  :mod:`.follow_workers` its scoring processes and :mod:`.follow_windows` its windows;
- :mod:`.sessions`: whole conversations scored once they settle (``score --follow
  --sessions``);
- :mod:`.backfill`: score the stored traces the current evaluator has not (``backfill``);
- :mod:`.reading`: read traces from files or the store, and choose which (every command);
- :mod:`.pull`: pull traces from a trace backend into the store (``import --from``);
- :mod:`.retention`: prune the store (``prune``, ``collect --retention``);
- :mod:`.datasets`: open a golden dataset by reference, a file or ``store:NAME``
  (``dataset export``);
- :mod:`.dataset_build`: build golden cases from conversations (``dataset build``);
- :mod:`.gate`: the end of a ``score`` or ``run`` in one order (its option groups: gate,
  outputs), the regression gate against a baseline, and two runs compared (``compare``);
- :mod:`.outputs`: write, store and verdict a finished run (``--json``, ``--junit``);
- :mod:`.signals`: send results and figures to an OTLP backend (``--export-otlp``);
- :mod:`.judging`: the LLM judge of a run;
- :mod:`.run_history`: stored runs listed, compared and traced (``runs``, ``history``, the
  dashboard);
- :mod:`.review`: stored conversations (scored, joined with their feedback), review queues
  and human labels (``review``);
- :mod:`._promote`: a reviewed conversation promoted to a golden case (``review promote``);
- :mod:`._agreement`: tracegrade's verdicts against people's (``agreement``,
  ``judge-check``).

The dashboard's page data lives beside its routes (:mod:`tracegrade.web.pages`).
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
    "evaluate_dataset": "tracegrade.pipeline._score",
    # datasets, comparisons, the judge
    "DatasetBuildOptions": "tracegrade.pipeline.dataset_build",
    "build": "tracegrade.pipeline.dataset_build",
    "CompareOptions": "tracegrade.pipeline.gate",
    "compare": "tracegrade.pipeline.gate",
    "JudgeCheckOptions": "tracegrade.pipeline._agreement",
    # the review loop
    "conversation_feedback": "tracegrade.pipeline.review",
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
    "conversation_feedback",
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
    from tracegrade.pipeline._promote import promote
    from tracegrade.pipeline._run import RunOptions, RunOutcome, run
    from tracegrade.pipeline._score import ScoredRun, ScoreOptions, evaluate_dataset, score
    from tracegrade.pipeline.dataset_build import DatasetBuildOptions, build
    from tracegrade.pipeline.gate import CompareOptions, compare
    from tracegrade.pipeline.reading import from_files, from_store, load, load_batches, traces_by_id
    from tracegrade.pipeline.retention import PruneOptions, prune
    from tracegrade.pipeline.review import (
        QueueRule,
        build_queue,
        conversation_feedback,
        record_label,
    )
    from tracegrade.runner.agents.options import AgentOptions
