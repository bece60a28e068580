"""``--export-otlp`` in the use cases: a run's (or a follower's) evaluation records and
figures sent to an OTLP endpoint while it scores (:mod:`tracegrade.report.otlp_export` sends,
:mod:`tracegrade.report.evaluation_signals` says what).

``score``, ``run`` and ``score --follow`` open one :class:`RunSignals` (a no-op without an
endpoint), hand it each case result as it is scored and the run's summary (or each closed
window's results) at the end, and close it; closing returns the warnings to show. Nothing
here changes a verdict or an exit code.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from tracegrade.report.evaluation_signals import (
    RunContext,
    evaluation_records,
    run_figures,
    window_figures,
)
from tracegrade.run_document import RunSummaryEntry
from tracegrade.scoring.identity import Evaluator
from tracegrade.scoring.results import CaseResult
from tracegrade.store.follow import ResultRow

if TYPE_CHECKING:
    from tracegrade.report.otlp_export import OtlpExport

__all__ = ["RunSignals", "open_signals", "run_signals"]


class RunSignals:
    """One run's evaluation signals: its :class:`RunContext` and, with an endpoint, its
    :class:`OtlpExport` (None: every method does nothing)."""

    def __init__(self, otlp: OtlpExport | None, context: RunContext) -> None:
        self.otlp, self.context = otlp, context

    def result(
        self,
        result: CaseResult,
        repeat: int | None = None,
        version: int | None = None,
        evaluator: Evaluator | None = None,
    ) -> None:
        """Send one case result's evaluation records (``repeat``: its attempt, when cases
        repeat; ``version``: the trace or conversation version a follower scored;
        ``evaluator``: who scored it, when not the run's own evaluator)."""
        if self.otlp is not None:
            context = (
                self.context if evaluator is None else replace(self.context, evaluator=evaluator)
            )
            self.otlp.send(evaluation_records(result, context, repeat, version))

    def summary(self, summary: RunSummaryEntry) -> None:
        """Record a finished run's figures (its document's ``summary``, read)."""
        if self.otlp is not None:
            self.otlp.record(run_figures(summary, self.context.dataset))

    def window(
        self,
        rows: Sequence[ResultRow],
        window_s: float,
        start_s: float | None = None,
        judge_cost: Mapping[str, float] | None = None,
    ) -> None:
        """Record a closed window's figures (the current results of the traces it counts;
        ``start_s`` its start, ``judge_cost`` what the judge spent in it per service)."""
        if self.otlp is not None:
            figures = window_figures(rows, window_s, self.context.dataset, start_s, judge_cost)
            self.otlp.record(figures)

    def problem(self) -> str | None:
        """The first failure, once (a follower shows it as soon as it happens)."""
        return self.otlp.problem() if self.otlp is not None else None

    def close(self) -> list[str]:
        """Send what is left (bounded) and stop; the warning to show, if any (the first
        call's: later calls return none)."""
        otlp, self.otlp = self.otlp, None
        if otlp is None:
            return []
        warning = otlp.close().warning()
        return [warning] if warning else []


def open_signals(
    endpoint: str | None, context: RunContext, *, periodic: bool = False
) -> RunSignals:
    """The :class:`RunSignals` of ``--export-otlp ENDPOINT`` (None: one that sends nothing);
    ``periodic``: figures also sent every ``OTEL_METRIC_EXPORT_INTERVAL`` (a follower). The
    caller closes it.

    Raises:
        ConfigError: ENDPOINT is not an http(s) URL, or the OTLP protocol is unknown.
    """
    if not endpoint:
        return RunSignals(None, context)
    from tracegrade.report.otlp_export import ExportTarget, OtlpExport  # the SDK: only here

    return RunSignals(OtlpExport(ExportTarget.resolve(endpoint), periodic=periodic), context)


@contextmanager
def run_signals(endpoint: str | None, context: RunContext) -> Iterator[RunSignals]:
    """:func:`open_signals`, closed on the way out (a finished run closes it first itself,
    to show its warning).

    Raises:
        ConfigError: as :func:`open_signals`.
    """
    signals = open_signals(endpoint, context)
    try:
        yield signals
    finally:
        signals.close()
