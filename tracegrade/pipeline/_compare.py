"""``compare``: two runs, case by case, and the regression verdict (stored runs or run
documents), with the gate's outputs (JSON, Markdown, the step summary, the webhook)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tracegrade.compare import Comparison
from tracegrade.config import load_config
from tracegrade.pipeline.datasets import dataset_filter
from tracegrade.pipeline.gate import (
    compare_documents,
    dataset_name,
    publish,
    resolve_document,
    rules_for,
)
from tracegrade.pipeline.outputs import write_json
from tracegrade.store.traces import Store


@dataclass(frozen=True)
class CompareOptions:
    """Run references (a run id or prefix, ``latest``, ``latest~N``, ``baseline``, or a
    run-document JSON file) and where the comparison goes."""

    base: str
    current: str = "latest"
    db: str | None = None
    config: str | None = None
    alpha: float | None = None
    json_path: str | None = None
    markdown_path: str | None = None
    alert_webhook: str | None = None
    dataset: str | None = None
    """A dataset name, file or ``store:NAME``: ``latest``, ``latest~N`` and ``baseline`` are
    taken among its runs (without it, CURRENT's dataset names BASE's)."""


@dataclass
class Compared:
    """The comparison, and warnings for the face to show (a failed webhook delivery)."""

    comparison: Comparison
    warnings: list[str] = field(default_factory=list)


def compare(options: CompareOptions) -> Compared:
    """Compare run ``base`` with run ``current`` (CURRENT's dataset names BASE's ``baseline``
    and ``latest``), write the JSON, Markdown and step summary, post the webhook on a
    regression.

    Raises:
        InputError: a file that is not a run document.
        StoreError: no store, or nothing stored matches a reference.
    """
    config = load_config(options.config)
    within = None
    if options.dataset is not None:
        with Store(options.db) as store:
            within = dataset_filter(store, options.dataset)
    current, _ = resolve_document(options.current, options.db, within)
    base, is_baseline = resolve_document(options.base, options.db, within or dataset_name(current))
    comparison = compare_documents(
        base,
        current,
        rules_for(config, options.alpha),
        [options.db],
        base_is_baseline=is_baseline,
        config=config,
    )
    if options.json_path:
        write_json(options.json_path, comparison.to_json())
    warnings = publish(comparison, options.alert_webhook, options.markdown_path)
    return Compared(comparison, warnings)
