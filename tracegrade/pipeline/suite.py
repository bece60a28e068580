"""A test session's golden cases (the pytest plugin): one run session per dataset
(:class:`~tracegrade.pipeline._score.RunSession`, as ``tracegrade score`` runs), opened with
the session's first case of the dataset, each case scored as its test runs (against the
traces given to it: an explicit mapping), and finished at the end of the session
(summarised, the document written, compared with the baseline, the signals closed, the gate
published: :func:`tracegrade.pipeline.gate.finish`); and a case compared with its baseline
case.
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import replace
from typing import Any

from tracegrade.compare import Comparison, compare_runs, rules_from
from tracegrade.compare.run_cases import as_run_cases
from tracegrade.config import load_config
from tracegrade.dataset import Case, Dataset
from tracegrade.pipeline._score import RunSession, ScoredRun, ScoreOptions, open_session
from tracegrade.pipeline.gate import OutputOptions, resolve_document
from tracegrade.report.document import case_entry
from tracegrade.scoring.results import CaseResult
from tracegrade.trace import AgentTrace

__all__ = ["CaseResult", "Comparison", "Suite", "resolve_document"]

TRACE_SOURCE = "pytest"
"""The run document's ``trace_source`` for a test session."""


class Suite:
    """The run of one dataset in a test session (``base``: the baseline document and whether
    it is the dataset's baseline, with ``trace_store`` the store holding the traces for its
    diffs).

    Raises:
        ConfigError, DatasetError: as :func:`~tracegrade.pipeline._score.plan_run`.
    """

    def __init__(
        self,
        dataset: Dataset,
        *,
        base: tuple[dict[str, Any], bool] | None = None,
        trace_store: str | None = None,
    ) -> None:
        self.dataset = dataset
        self.trace_store = trace_store
        options = ScoreOptions(
            traces=(),
            dataset=dataset,
            config=load_config(),
            output=OutputOptions(save=False),
        )
        self._stack = ExitStack()
        self.session: RunSession = self._stack.enter_context(open_session(options))
        if base is not None:
            self.session.plan.base = (as_run_cases(base[0]), base[1])
        self.config = self.session.plan.config

    @property
    def threshold(self) -> float:
        """The pass score per case (0-1) of the dataset and config."""
        return self.session.running.threshold

    def score(self, case: Case, traces: list[AgentTrace]) -> CaseResult:
        """``case`` scored against the first of ``traces`` (all counted in the document's
        agent versions and models)."""
        found: list[CaseResult] = []
        self.session.score(
            [traces[:1]],
            dataset=self.dataset.model_copy(update={"cases": [case]}),
            mapping={str(case.id): [traces[0].trace_id]},
            progress=found.append,
        )
        for extra in traces[1:]:
            self.session.facts.add(extra)
        return found[0]  # one case, its one trace: one result

    def finish(self, json_path: str | None) -> ScoredRun:
        """The session's run of this dataset finished (module docstring), its document written
        to ``json_path`` (None: not written); the case log is closed after.

        Raises:
            StoreError: the baseline's store cannot be opened.
        """
        output = OutputOptions(json_path=json_path, save=False)
        self.session.options = replace(self.session.options, output=output)
        with self._stack:
            return self.session.finish(TRACE_SOURCE, trace_stores=[self.trace_store])

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
