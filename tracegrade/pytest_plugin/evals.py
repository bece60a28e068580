"""The pytest plugin's implementation (:mod:`tracegrade.pytest_plugin` imports it lazily, so
installing tracegrade does not slow down other test suites): capture an agent's telemetry in
memory, score a golden case, compare with a baseline."""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

try:
    import pytest
except ImportError as exc:  # only pytest loads this module, and it brings pytest
    raise ImportError(f"{__name__} runs inside pytest: pip install pytest") from exc
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

try:  # opentelemetry-sdk >= 1.39 renamed it; the old name warns on every capture
    from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter as InMemoryLogs
except ImportError:  # pragma: no cover - opentelemetry-sdk < 1.39
    from opentelemetry.sdk._logs.export import InMemoryLogExporter as InMemoryLogs

from tracegrade.dataset import Case, Dataset, load_dataset
from tracegrade.normalize import normalize_all
from tracegrade.otlp.codec import logs_from_request, spans_from_request
from tracegrade.pipeline.suite import CaseResult, Comparison, Suite, resolve_document
from tracegrade.runner import telemetry
from tracegrade.trace import AgentTrace

MARKER = "tracegrade"


def dataset_of(marker: pytest.Mark) -> Dataset:
    """The dataset named by ``@pytest.mark.tracegrade(dataset=...)``.

    Raises:
        pytest.UsageError: the marker names no dataset.
    """
    path = marker.kwargs.get("dataset") or (marker.args[0] if marker.args else None)
    if path is None:
        raise pytest.UsageError("@pytest.mark.tracegrade needs dataset='path/to/golden.yaml'")
    resolved = Path(path).resolve()
    return _loaded(resolved, resolved.stat().st_mtime_ns)


@functools.lru_cache(maxsize=16)
def _loaded(path: Path, mtime_ns: int) -> Dataset:
    """A dataset file, read once per version (each case's test asks for it)."""
    return load_dataset(path)


def cases_of(marker: pytest.Mark) -> list[Case]:
    """The marker's dataset cases (of its ``tier`` when given)."""
    return dataset_of(marker).tier(marker.kwargs.get("tier"))


class PytestRuns:
    """The runs of one pytest session: one per dataset (:class:`Suite`), the baselines, and the
    final comparisons and warnings."""

    def __init__(self, config: pytest.Config):
        self.pytest_config = config
        self.suites: dict[str, Suite] = {}
        self.baselines: dict[str, tuple[dict[str, Any], bool] | None] = {}
        self.comparisons: list[Comparison] = []
        self.warnings: list[str] = []

    def suite(self, dataset: Dataset) -> Suite:
        """The run of ``dataset``, opened with its first case."""
        if _key(dataset) not in self.suites:
            self.suites[_key(dataset)] = Suite(
                dataset,
                base=self.baseline(dataset),
                trace_store=self.pytest_config.getoption("tracegrade_db"),
            )
        return self.suites[_key(dataset)]

    def baseline(self, dataset: Dataset) -> tuple[dict[str, Any], bool] | None:
        """The baseline run document for ``dataset`` and whether it is the dataset's
        baseline (None without --tracegrade-baseline)."""
        ref = self.pytest_config.getoption("tracegrade_baseline")
        if not ref:
            return None
        if _key(dataset) not in self.baselines:
            db = self.pytest_config.getoption("tracegrade_db")
            self.baselines[_key(dataset)] = resolve_document(ref, db, dataset.name)
        return self.baselines[_key(dataset)]


@dataclass
class Captured:
    """What :meth:`CaseChecker.capture` recorded: the normalised traces of the block."""

    traces: list[AgentTrace] = field(default_factory=list)


class CaseChecker:
    """The ``tracegrade`` fixture: capture an agent's telemetry, then check a case."""

    def __init__(self, session: PytestRuns, request: pytest.FixtureRequest):
        self.session = session
        self.request = request
        self.captured: Captured | None = None

    @contextlib.contextmanager
    def capture(self, case: Case | None = None) -> Iterator[Captured]:
        """Record every span and log record the process emits inside the block (the global
        OpenTelemetry providers, joined or set once), under a case span for ``case``."""
        spans, logs = InMemorySpanExporter(), InMemoryLogs()
        captured = Captured()
        telemetry.route(SimpleSpanProcessor(spans), SimpleLogRecordProcessor(logs))
        try:
            if case is None:
                yield captured
            else:
                span = telemetry.start_case_span(f"pytest-{uuid.uuid4().hex[:8]}", str(case.id), 0)
                try:
                    with trace.use_span(span, end_on_exit=False):
                        yield captured
                finally:
                    span.end()
        finally:
            telemetry.route(None, None)
            captured.traces = _normalise(spans, logs)
            self.captured = captured

    def check(
        self,
        case: Case,
        traces: Sequence[AgentTrace] | None = None,
        *,
        dataset: Dataset | None = None,
    ) -> CaseResult:
        """Score ``case`` against ``traces`` (default: the last capture's) and fail the test with
        tracegrade's reasons when the case fails or, with ``--tracegrade-baseline``, regressed.

        Raises:
            pytest.fail.Exception: the case failed or regressed (the message lists why).
        """
        suite = self.session.suite(dataset or dataset_of(self._marker()))
        found = list(traces if traces is not None else (self.captured or Captured()).traces)
        if not found:
            pytest.fail(f"tracegrade: no trace captured for case {case.id}", pytrace=False)
        result = suite.score(case, found)
        problems = [] if result.passed else [f"score {result.score}", *result.reasons]
        problems += self._regressed(suite, result)
        if problems:
            pytest.fail(f"tracegrade: case {case.id}: " + "; ".join(problems), pytrace=False)
        return result

    def _marker(self) -> pytest.Mark:
        marker = self.request.node.get_closest_marker(MARKER)
        if marker is None:
            raise pytest.UsageError("tracegrade.check needs @pytest.mark.tracegrade or dataset=")
        return cast(pytest.Mark, marker)

    def _regressed(self, suite: Suite, result: CaseResult) -> list[str]:
        base = self.session.baseline(suite.dataset)
        if base is None:
            return []
        regression = suite.regression_of(result, base[0])
        return [] if regression is None else [regression]


def _normalise(spans: InMemorySpanExporter, logs: InMemoryLogs) -> list[AgentTrace]:
    finished = spans.get_finished_spans()
    if not finished:
        return []
    records = logs.get_finished_logs()
    decoded_logs = logs_from_request(encode_logs(records)) if records else []
    return normalize_all(spans_from_request(encode_spans(finished)), decoded_logs)


def _key(dataset: Dataset) -> str:
    return str(dataset.source or dataset.name)


def finish(state: PytestRuns, json_path: str | None) -> bool:
    """At the end of the session: each dataset's run finished as ``tracegrade score``
    finishes one (:meth:`Suite.finish`: document written, compared with the baseline, gate
    published); True on a regression."""
    for suite in state.suites.values():
        path = _json_path(json_path, suite.dataset.name, several=len(state.suites) > 1)
        done = suite.finish(path)
        state.warnings += done.warnings
        if done.comparison is not None:
            state.comparisons.append(done.comparison)
    return any(c.regression for c in state.comparisons)


def _json_path(path: str | None, name: str | None, *, several: bool) -> str | None:
    """``--tracegrade-json``, the dataset's name joining the file name when the session ran
    several datasets."""
    if path is None or not (several and name):
        return path
    target = Path(path)
    return str(target.with_name(f"{target.stem}-{name}{target.suffix}"))
