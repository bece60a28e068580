"""A test session's golden cases: each case scored as it runs (the pytest plugin), the
session's run document, and the comparison with a baseline run, case by case and whole.

Each case is scored by :func:`tracegrade.pipeline._score.score` (the same scorers, judge and
summary as ``tracegrade score``), against the trace given to it (an explicit mapping).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracegrade.compare import Comparison, compare_runs, read_document, rules_from
from tracegrade.config import Config, load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.pipeline._score import ScoreOptions, score
from tracegrade.pipeline.gate import OutputOptions
from tracegrade.report.document import case_entry, document
from tracegrade.run_document import StreamedDocument, document_json
from tracegrade.scoring import build_scorers, config_for
from tracegrade.scoring.evaluation import run_threshold
from tracegrade.scoring.identity import evaluator_of
from tracegrade.scoring.results import CaseResult, RunResult
from tracegrade.scoring.summary import summarize
from tracegrade.store.runs import load_run, resolve_run
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

__all__ = ["CaseResult", "Comparison", "Suite", "resolve_baseline"]


@dataclass
class Suite:
    """The scored cases of one dataset in a session (``config``: the dataset's, layered on
    :func:`~tracegrade.config.load_config`)."""

    dataset: Dataset
    config: Config = field(init=False)
    results: list[CaseResult] = field(default_factory=list)
    traces: list[AgentTrace] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.config = config_for(load_config(), self.dataset)

    @property
    def threshold(self) -> float:
        """The pass score per case (0-1) of the dataset and config."""
        return run_threshold(None, self.dataset, self.config)

    def score(self, case: Case, traces: list[AgentTrace]) -> CaseResult:
        """``case`` scored against the first of ``traces`` (all kept for the document)."""
        options = ScoreOptions(
            traces=traces[:1],
            dataset=self.dataset.model_copy(update={"cases": [case]}),
            config=self.config,
            mapping={str(case.id): [traces[0].trace_id]},
            keep_results=True,
            output=OutputOptions(save=False),
        )
        with score(options) as run:
            results = run.results or []
        self.results.append(results[0])  # one case, its one trace: one result
        self.traces.extend(traces)
        return results[0]

    def run_document(self) -> StreamedDocument:
        """The session's ``tracegrade.run/1`` document for this dataset."""
        result = RunResult(tuple(self.results), summarize(self.results, self.threshold, 0))
        return document(
            result,
            self.traces,
            self.dataset,
            trace_source="pytest",
            config_sources=self.config.sources,
            evaluator=evaluator_of(
                build_scorers(self.config), self.dataset, self.config, {"threshold": self.threshold}
            ).to_dict(),
        )

    def regression_of(self, result: CaseResult, base: dict[str, Any]) -> str | None:
        """Why ``result`` regressed against its case in the baseline document ``base``, or
        None when it did not."""
        current = {"run": {"run_id": "pytest"}, "summary": {}, "cases": [case_entry(result)]}
        base_case = {**base, "cases": [c for c in base["cases"] if c["case_id"] == result.case_id]}
        compared = compare_runs(base_case, current, rules_from(self.config.regression)).cases
        if not compared or compared[0].status != "regressed":
            return None
        return (
            f"regressed against baseline {base['run']['run_id']}: {', '.join(compared[0].reasons)}"
        )

    def compare(self, base: dict[str, Any]) -> Comparison:
        """The session's run compared with the baseline document ``base``."""
        rules = rules_from(self.config.regression)
        current = document_json(self.run_document())
        return compare_runs(base, current, rules, pricing=self.config.pricing)


def resolve_baseline(ref: str, db: str | None, dataset: str | None) -> dict[str, Any]:
    """The baseline run document ``ref`` names: a run-document JSON file, or a stored run
    (``baseline``, ``latest``, a run id) of ``dataset`` in the store at ``db``.

    Raises:
        InputError: a file that is not a run document.
        StoreError: nothing stored matches ``ref``.
    """
    if Path(ref).is_file():
        return read_document(ref)
    with Store(db) as store:
        return load_run(store, resolve_run(store, ref, dataset=dataset))
