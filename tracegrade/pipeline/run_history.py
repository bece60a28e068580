"""What the dashboard and the ``runs`` / ``history`` commands read: stored runs' overviews,
two stored runs compared, one trace's reference-free scores, traces by id; and what a report
calls a scorer (:mod:`tracegrade.scoring.labels`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict
from typing import Any

from tracegrade.compare import Comparison, RunOverview, compare_runs, overview
from tracegrade.compare.overviews import hallucinated
from tracegrade.config import Config, Pricing
from tracegrade.errors import StoreError
from tracegrade.pipeline._score import evaluate_dataset
from tracegrade.pipeline.datasets import dataset_filter
from tracegrade.pipeline.reading import traces_by_id
from tracegrade.run_document import CaseEntry, read_cases, read_head
from tracegrade.scoring.labels import reason_line, scorer_label
from tracegrade.store.runs import (
    Gate,
    baselines,
    case_trace_ids,
    gates,
    load_run,
    load_run_head,
    recent_runs,
    resolve_run,
    run_datasets,
)
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace

__all__ = [
    "Comparison",
    "Gate",
    "RunOverview",
    "compare_stored",
    "marked_runs",
    "passed_hallucinating",
    "resolve_pair",
    "reason_line",
    "reference_free",
    "scorer_label",
    "stored_histories",
    "stored_overviews",
]


def stored_overviews(
    store: Store, dataset: str | None, label: str | None, limit: int
) -> list[RunOverview]:
    """The overviews of the newest runs (dataset name or file, label filters)."""
    marked = set(baselines(store).values())
    docs = recent_runs(store, dataset=dataset_filter(store, dataset), label=label, limit=limit)
    return [overview(d, baseline=read_head(d).run.run_id in marked) for d in docs]


def stored_histories(
    store: Store, dataset: str | None, label: str | None, limit: int
) -> list[tuple[str | None, list[RunOverview]]]:
    """Per dataset, its newest ``limit`` runs' overviews, oldest first: one trend per dataset
    (``dataset``: only that one, a name or a file), never several datasets in one trend.
    Runs scored without a dataset form their own group (name None). Without ``dataset`` and
    with no stored run at all, an empty list.

    Raises:
        StoreError: ``dataset`` (or ``label``) was given and no stored run matches; the
            message names the datasets that have runs.
    """
    name = dataset_filter(store, dataset)
    names = run_datasets(store) if name is None else [name]
    marked = set(baselines(store).values())
    groups = []
    for each in names:
        docs = recent_runs(
            store, dataset=each, label=label, limit=limit, reference_free=each is None
        )
        views = [overview(d, baseline=read_head(d).run.run_id in marked) for d in reversed(docs)]
        groups.append((each, views))
    groups = [(each, views) for each, views in groups if views]
    if not groups and (dataset is not None or label is not None):
        raise StoreError(_nothing_matches(store, name, label))
    return groups


def _nothing_matches(store: Store, dataset: str | None, label: str | None) -> str:
    what = " of dataset " + repr(dataset) if dataset else ""
    what += f" labelled {label!r}" if label else ""
    known = [n for n in run_datasets(store) if n is not None]
    hint = f"datasets with runs: {', '.join(known)}" if known else "no run is stored there yet"
    return f"no stored runs{what} in {store.location} ({hint})"


CHANGED = ("regressed", "improved")
"""Statuses of the cases whose traces a stored comparison diffs."""


def _changed_traces(
    store: Store, docs: tuple[dict[str, Any], dict[str, Any]], comparison: Comparison
) -> dict[str, AgentTrace]:
    """The normalised traces of the cases whose status changed, by trace id."""
    changed = {c.case_id for c in comparison.cases if c.status in CHANGED}
    ids = [
        trace_id
        for doc in docs
        for case in read_cases(doc["cases"])
        if str(case.case_id) in changed
        for trace_id in case_trace_ids(case)
    ]
    return traces_by_id(store, ids)


def compare_stored(
    store: Store, base_id: str, current_id: str, pricing: Pricing
) -> tuple[Comparison, dict[str, Any]]:
    """The comparison of two stored runs (structural diffs from their traces when stored),
    and per side the case id -> position map for links.

    Raises:
        StoreError: either run is not stored.
    """
    base, current = load_run(store, base_id), load_run(store, current_id)
    first = compare_runs(base, current)
    traces = _changed_traces(store, (base, current), first)
    comparison = compare_runs(base, current, traces=traces, pricing=pricing) if traces else first
    positions = {
        side: {str(c.case_id): i for i, c in enumerate(read_cases(doc["cases"]))}
        for side, doc in (("base", base), ("current", current))
    }
    return comparison, positions


def marked_runs(store: Store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Listing rows (:func:`tracegrade.store.browse.run_row`) with ``baseline`` (the run is
    its dataset's baseline) and ``gate`` (its :class:`Gate` as a dict when it was scored with
    ``--baseline``, else None) added."""
    marked = set(baselines(store).values())
    found = gates(store, [str(r["run_id"]) for r in rows])
    return [
        {
            **r,
            "baseline": r["run_id"] in marked,
            "gate": asdict(gate) if (gate := found.get(str(r["run_id"]))) else None,
        }
        for r in rows
    ]


def passed_hallucinating(cases: Iterable[CaseEntry]) -> int:
    """How many passing ``cases`` count in the hallucination rate
    (:func:`~tracegrade.compare.overviews.hallucinated`): why a pass rate and a hallucination
    rate can add up to more than 100%."""
    return sum(1 for c in cases if c.passed and hallucinated(c))


def resolve_pair(store: Store, base_ref: str, current_ref: str) -> tuple[str, str]:
    """The run ids of ``base_ref`` and ``current_ref`` (run ids or prefixes, ``latest``,
    ``latest~N``, ``baseline``), as ``tracegrade compare`` reads them: CURRENT first, then
    BASE's ``baseline`` and ``latest`` within CURRENT's dataset.

    Raises:
        StoreError: nothing stored matches a reference (the message says which).
    """
    current = resolve_run(store, current_ref)
    head = load_run_head(store, current)
    dataset = read_head(head).run.dataset
    return resolve_run(store, base_ref, dataset=dataset.name if dataset else None), current


def reference_free(trace: AgentTrace, config: Config) -> dict[str, Any]:
    """The reference-free scores of one trace, as ``tracegrade score`` gives them without a
    dataset: ``score``, ``passed`` and per scorer ``{value, reason}``."""
    result = evaluate_dataset([trace], None, config=config, judge=False).results[0]
    return {
        "score": result.score,
        "passed": result.passed,
        "scorers": {
            name: {"value": d.get("value"), "reason": d.get("reason")}
            for name, d in result.details.items()
        },
    }
