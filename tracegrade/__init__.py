"""tracegrade: evaluate AI agents from their OpenTelemetry traces.

The trace is the only source of truth about what an agent did: tracegrade decodes OTLP
spans and log records, normalises them into an :class:`~tracegrade.trace.AgentTrace`
whatever instrumentation emitted them, and scores that. The names a Python user needs::

    from tracegrade import evaluate_dataset, from_files, load_dataset

    loaded = from_files(["traces.jsonl"])            # OTLP/JSON, protobuf, transcripts, any-agent
    run = evaluate_dataset(loaded.traces, load_dataset("golden.yaml"))
    print(run.summary.pass_rate, [r.case_id for r in run.results if not r.passed])

Names are imported on first use, so ``import tracegrade`` (and the CLI) stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tracegrade.version import __version__

_EXPORTS: dict[str, str] = {
    # reading traces: files of any supported format, or the store (SQLite path or PostgreSQL URL)
    "from_files": "tracegrade.pipeline.reading",
    "from_store": "tracegrade.pipeline.reading",
    "iter_from_files": "tracegrade.pipeline.reading",
    "iter_from_store": "tracegrade.pipeline.reading",
    "Loaded": "tracegrade.pipeline.reading",
    "Store": "tracegrade.store.traces",
    # normalising decoded spans and log records
    "normalize_trace": "tracegrade.normalize",
    "normalize_all": "tracegrade.normalize",
    "AgentTrace": "tracegrade.trace",
    "ToolCall": "tracegrade.trace",
    "LlmCall": "tracegrade.trace",
    # golden datasets, configuration, evaluation and its results
    "load_dataset": "tracegrade.dataset",
    "Dataset": "tracegrade.dataset",
    "Case": "tracegrade.dataset",
    "load_config": "tracegrade.config",
    "Config": "tracegrade.config",
    "evaluate_dataset": "tracegrade.pipeline._score",
    "CaseResult": "tracegrade.scoring.results",
    "RunResult": "tracegrade.scoring.results",
    "RunSummary": "tracegrade.scoring.results",
    "Score": "tracegrade.scoring.score",
    # run documents (score --json, run --json): read and typed
    "read_run_document": "tracegrade.run_document",
    "RunDocument": "tracegrade.run_document",
    "RunHead": "tracegrade.run_document",
    "CaseEntry": "tracegrade.run_document",
}

__all__ = [
    "__version__",
    "from_files",
    "from_store",
    "iter_from_files",
    "iter_from_store",
    "Loaded",
    "Store",
    "normalize_trace",
    "normalize_all",
    "AgentTrace",
    "ToolCall",
    "LlmCall",
    "load_dataset",
    "Dataset",
    "Case",
    "load_config",
    "Config",
    "evaluate_dataset",
    "CaseResult",
    "RunResult",
    "RunSummary",
    "Score",
    "read_run_document",
    "RunDocument",
    "RunHead",
    "CaseEntry",
]

if TYPE_CHECKING:
    from tracegrade.config import Config, load_config
    from tracegrade.dataset import Case, Dataset, load_dataset
    from tracegrade.normalize import normalize_all, normalize_trace
    from tracegrade.pipeline._score import evaluate_dataset
    from tracegrade.pipeline.reading import (
        Loaded,
        from_files,
        from_store,
        iter_from_files,
        iter_from_store,
    )
    from tracegrade.run_document import CaseEntry, RunDocument, RunHead, read_run_document
    from tracegrade.scoring.results import CaseResult, RunResult, RunSummary
    from tracegrade.scoring.score import Score
    from tracegrade.store.traces import Store
    from tracegrade.trace import AgentTrace, LlmCall, ToolCall


def __getattr__(name: str) -> Any:
    """Import a public name's module on first use (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'tracegrade' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
