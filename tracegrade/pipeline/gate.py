"""The end of a run, shared by ``score`` and ``run`` (:func:`finish`, one order: the
summary's figures exported, the document written and stored, compared with the baseline, the
signals closed, the gate published), with the option groups they share (:class:`GateOptions`,
:class:`OutputOptions`; the judge's: :class:`~tracegrade.pipeline.judging.JudgeOptions`);
and the regression gate of ``compare``, ``score --baseline`` and ``run --baseline``: resolve a
run reference to a document, keep or load traces for the structural diffs, write Markdown
(``--markdown``, ``$GITHUB_STEP_SUMMARY``) and post the webhook.

``compare``: two runs, case by case, and the regression verdict (stored runs or run
documents), with the gate's outputs (JSON, Markdown, the step summary, the webhook).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracegrade.compare import Comparison, RegressionRules, compare_runs, read_document, rules_from
from tracegrade.compare.documents import DocumentStream
from tracegrade.compare.run_cases import (
    CaseTable,
    RunCases,
    TableCases,
    as_run_cases,
    document_head,
)
from tracegrade.compare.runs import DiffCandidates, diff_trace_ids
from tracegrade.config import Config, load_config
from tracegrade.errors import StoreError
from tracegrade.pipeline.datasets import dataset_filter
from tracegrade.pipeline.outputs import write_json, write_outputs, write_text
from tracegrade.pipeline.reading import from_store
from tracegrade.pipeline.signals import RunSignals
from tracegrade.report.alerts import STEP_SUMMARY_ENV, append_step_summary, post_webhook
from tracegrade.report.comparison import markdown, run_markdown
from tracegrade.report.document import case_entry
from tracegrade.run_document import StreamedDocument, document_json, read_head
from tracegrade.scoring.results import CaseResult
from tracegrade.store.database import is_postgres
from tracegrade.store.runs import (
    Gate,
    baselines,
    iter_run_cases,
    load_run,
    load_run_head,
    resolve_run,
    save_gate,
)
from tracegrade.store.traces import Store, default_path
from tracegrade.trace import AgentTrace


def store_exists(db: str | None) -> bool:
    """True when the store at ``db`` (default location) is a URL or an existing file; reading a
    reference never creates a store."""
    location = default_path(db)
    return is_postgres(location) or Path(location).exists()


def resolve_document(
    ref: str, db: str | None, dataset: str | None = None
) -> tuple[dict[str, Any], bool]:
    """The run document ``ref`` names (a run-document JSON file, or a stored run: id, prefix,
    ``latest``, ``latest~N``, ``baseline``; see :func:`tracegrade.store.runs.resolve_run`), and
    whether it is its dataset's baseline.

    Raises:
        InputError: a file that is not a run document.
        StoreError: no store, or nothing stored matches ``ref``.
    """
    if Path(ref).is_file():
        return read_document(ref), False
    if not store_exists(db):
        raise StoreError(f"{ref!r}: not a file, and no store at {default_path(db)}")
    with Store(db) as store:
        run_id = resolve_run(store, ref, dataset=dataset)
        doc = load_run(store, run_id)
        return doc, run_id in baselines(store).values()


Base = tuple[RunCases, bool]
"""BASE of ``score --baseline`` / ``run --baseline``: its cases, and whether it is its
dataset's baseline."""


def resolve_base(ref: str, db: str | None, dataset: str | None, table: CaseTable) -> Base:
    """:func:`resolve_document`, streamed into ``table`` (the run's cases read once, a batch
    at a time, from the store or the JSON file: never held whole).

    Raises:
        InputError: a file that is not a run document.
        StoreError: no store, or nothing stored matches ``ref``.
    """
    if Path(ref).is_file():
        stream = DocumentStream(ref)
        cases = table.add(stream.cases(), source=str(ref))
        cases.head = document_head(stream.head)
        return cases, False
    if not store_exists(db):
        raise StoreError(f"{ref!r}: not a file, and no store at {default_path(db)}")
    with Store(db) as store:
        run_id = resolve_run(store, ref, dataset=dataset)
        head = load_run_head(store, run_id)
        return table.add(iter_run_cases(store, run_id), head), run_id in baselines(store).values()


def current_source(doc: StreamedDocument, base: Base | None) -> Mapping[str, Any] | RunCases:
    """The finished run ``doc`` as the comparison with ``base`` reads it: into BASE's
    :class:`~tracegrade.compare.run_cases.CaseTable` when BASE is in one (its cases, a
    :class:`~tracegrade.report.caselog.CaseLog`, read once), else the document's JSON-ready
    data."""
    data = document_json(doc)
    if base is not None and isinstance(base[0], TableCases):
        return base[0].table.add(data["cases"], document_head(data))
    return data


class StoredTraces(Mapping[str, AgentTrace]):
    """Trace id -> AgentTrace, loaded on first use from ``preloaded``, else the first of
    ``stores`` that holds it; a trace none holds is simply absent."""

    def __init__(self, stores: Sequence[Store], preloaded: Mapping[str, AgentTrace] | None = None):
        self.stores = stores
        self.cache: dict[str, AgentTrace | None] = dict(preloaded or {})

    def _load(self, trace_id: str) -> AgentTrace | None:
        for store in self.stores:
            loaded = from_store(store, trace_ids=[trace_id]).traces
            if loaded:
                return loaded[0]
        return None

    def __getitem__(self, trace_id: str) -> AgentTrace:
        if trace_id not in self.cache:
            self.cache[trace_id] = self._load(trace_id)
        found = self.cache[trace_id]
        if found is None:
            raise KeyError(trace_id)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter([k for k, v in self.cache.items() if v is not None])

    def __len__(self) -> int:
        return sum(v is not None for v in self.cache.values())


class BaselineTraces:
    """``score --baseline``: of the traces a run scores, only those the comparison with
    BASE may diff (a :class:`~tracegrade.scoring.streaming.TraceKeeper`): a trace is kept
    when one of its results, alone for its case, would regress or improve
    (:class:`DiffCandidates`), so the traces held are bounded by the changed results, not by
    the traces scored (BASE's traces scored and not kept are noted in BASE's
    :class:`~tracegrade.compare.run_cases.RunCases`, on disk for a
    :class:`~tracegrade.compare.run_cases.TableCases`); after the run, exactly the traces the
    comparison diffs (:meth:`preloaded`)."""

    def __init__(self, base: Mapping[str, Any] | RunCases, rules: RegressionRules) -> None:
        self.base = as_run_cases(base)
        self.rules = rules
        self.candidates = DiffCandidates(self.base, rules)
        self.kept: dict[str, AgentTrace] = {}

    def wants(self, trace_id: str, results: Sequence[CaseResult]) -> bool:
        """Whether a result of the trace, alone for its case, needs a diff (in a worker)."""
        return any(self.candidates.wanted(case_entry(result)) for result in results)

    def take(self, trace_id: str, trace: AgentTrace | None) -> None:
        """A trace scored: kept when wanted; else its id noted when it is one of BASE's."""
        if trace is not None:
            self.kept[trace_id] = trace
        else:
            self.base.note_scored(trace_id)

    def preloaded(
        self,
        current: Mapping[str, Any] | RunCases,
        read_again: Callable[[set[str]], Mapping[str, AgentTrace]] | None,
    ) -> dict[str, AgentTrace]:
        """Trace id -> trace, for the finished run ``current`` (its document, or its
        :func:`current_source`): every trace scored that ``compare_runs(BASE, current,
        rules)`` will diff (:func:`diff_trace_ids`). Those not kept (a case with several
        results) come from ``read_again`` (their ids; None: the store the run read has them).
        Forgets the traces kept."""
        base_ids, current_ids = diff_trace_ids(self.base, current, self.rules)
        scored = current_ids | (base_ids & self.kept.keys()) | self.base.scored_among(base_ids)
        found = {t: self.kept[t] for t in scored if t in self.kept}
        self.kept.clear()
        missing = scored - found.keys()
        if missing and read_again is not None:
            found.update(read_again(missing))
        return found


def rules_for(config: Config, alpha: float | None) -> RegressionRules:
    """The config's regression rules, ``--alpha`` winning."""
    file = config.files[-1] if config.files else "tracegrade.yaml"
    return rules_from(config.regression, file).with_alpha(alpha)


def compare_documents(
    base: Mapping[str, Any] | RunCases,
    current: Mapping[str, Any] | RunCases,
    rules: RegressionRules,
    dbs: Sequence[str | None],
    *,
    base_is_baseline: bool = False,
    config: Config,
    preloaded: Mapping[str, AgentTrace] | None = None,
) -> Comparison:
    """:func:`compare_runs` with the traces of the stores at ``dbs`` (those that exist) for
    the structural diffs."""
    with ExitStack() as stack:
        stores = [stack.enter_context(Store(db)) for db in dict.fromkeys(dbs) if store_exists(db)]
        return compare_runs(
            base,
            current,
            rules,
            traces=StoredTraces(stores, preloaded),
            pricing=config.pricing,
            base_is_baseline=base_is_baseline,
        )


def publish(comparison: Comparison, webhook: str | None, markdown_path: str | None) -> list[str]:
    """Write ``--markdown`` and the GitHub step summary of the comparison, and post the
    webhook on a regression; returns warnings (a failed delivery: reported, nothing more)."""
    _summary(markdown(comparison), markdown_path)
    if webhook and comparison.regression:
        delivery = post_webhook(webhook, comparison)
        if not delivery.ok:
            return [
                f"alert webhook failed after {delivery.attempts} attempt(s): "
                f"{delivery.error} (the verdict is unchanged)"
            ]
    return []


def compare_with_base(
    doc: Mapping[str, Any] | RunCases,
    base: tuple[Mapping[str, Any] | RunCases, bool] | None,
    *,
    dbs: Sequence[str | None],
    config: Config,
    alpha: float | None,
    preloaded: Mapping[str, AgentTrace] | None = None,
) -> Comparison | None:
    """``--baseline`` of ``score`` / ``run``: the comparison of the finished run ``doc`` (its
    document or :func:`current_source`) with ``base`` (a document or :func:`resolve_base`'s
    source, and whether it is the baseline), None without one."""
    if base is None:
        return None
    return compare_documents(
        base[0],
        doc,
        rules_for(config, alpha),
        dbs,
        base_is_baseline=base[1],
        config=config,
        preloaded=preloaded,
    )


def publish_gate(
    doc: StreamedDocument,
    comparison: Comparison | None,
    webhook: str | None,
    markdown_path: str | None,
) -> list[str]:
    """After a run of ``score`` / ``run``: publish the comparison (:func:`publish`); without
    one, write the run's Markdown summary where asked. Returns warnings."""
    if comparison is not None:
        return publish(comparison, webhook, markdown_path)
    if markdown_path or os.environ.get(STEP_SUMMARY_ENV):  # else the cases need no reading
        _summary(run_markdown(doc), markdown_path)
    return []


def record_gate(db: str | None, doc: StreamedDocument, comparison: Comparison | None) -> None:
    """Keep the gate of the run ``doc``, stored in the store at ``db``, beside it: the run it
    was compared with, the verdict, the cases that regressed (the dashboard's Runs page says
    "regressed vs baseline (N cases)" and links to the comparison)."""
    if comparison is None:
        return
    gate = Gate(
        comparison.base.run_id,
        comparison.base.baseline,
        comparison.regression,
        comparison.counts()["regressed"],
        tuple(comparison.reasons),
    )
    with Store(db) as store:
        save_gate(store, doc.head.run.run_id, gate)


def _summary(text: str, markdown_path: str | None) -> None:
    """Markdown ``text`` to ``--markdown`` (when given) and the GitHub step summary."""
    if markdown_path:
        write_text(markdown_path, text)
    append_step_summary(text)


def dataset_name(doc: Mapping[str, Any]) -> str | None:
    """The run document's dataset name (None for reference-free runs).

    Raises:
        InputError: ``doc`` is not a ``tracegrade.run/1`` document (the field named).
    """
    dataset = read_head(doc).run.dataset
    return dataset.name if dataset else None


@dataclass(frozen=True)
class GateOptions:
    """When a run passes: the pass score per case and the pass rate (in [0, 1]), the mean
    score it needs (``--min-score``), and the baseline it is compared with (a run reference;
    ``alpha`` the significance of a regression), with where the comparison goes (the webhook
    on a regression, ``--markdown``)."""

    threshold: float | None = None
    min_pass_rate: float = 1.0
    min_score: float | None = None
    baseline: str | None = None
    alpha: float | None = None
    alert_webhook: str | None = None
    markdown_path: str | None = None


@dataclass(frozen=True)
class OutputOptions:
    """Where a run goes: ``--json``, ``--junit``, the store (``save``), and an OTLP endpoint
    (base URL) its results and figures are sent to (``--export-otlp``; None: not sent)."""

    json_path: str | None = None
    junit_path: str | None = None
    save: bool = True
    export_otlp: str | None = None


@dataclass
class Finished:
    """The end of a run: where it was stored (None: not saved), the comparison with the
    baseline (None without one), and the warnings to show."""

    stored_in: str | None
    comparison: Comparison | None
    warnings: list[str]


def finish(
    doc: StreamedDocument,
    signals: RunSignals,
    *,
    output: OutputOptions,
    gate: GateOptions,
    store: str | None,
    base: Base | None,
    compared: BaselineInputs,
) -> Finished:
    """A finished run's end, the same for ``score`` and ``run`` (module docstring): its
    figures exported, its document written and stored in the store at ``store`` (unless not
    saved), compared with ``base`` (``compared``: the stores holding its traces, the config,
    the traces already at hand; the gate kept beside the stored run: :func:`record_gate`), the
    signals closed, the gate published.

    Raises:
        StoreError: the store cannot be opened.
    """
    signals.summary(doc.head.summary)
    stored_in = write_outputs(doc, store, output.json_path, output.junit_path, not output.save)
    current = current_source(doc, base)
    comparison = compare_with_base(
        current,
        base,
        dbs=compared.dbs,
        config=compared.config,
        alpha=gate.alpha,
        preloaded=compared.preloaded(current) if compared.preloaded else None,
    )
    if stored_in:
        record_gate(store, doc, comparison)
    warnings = signals.close()
    warnings = publish_gate(doc, comparison, gate.alert_webhook, gate.markdown_path) + warnings
    return Finished(stored_in, comparison, warnings)


@dataclass(frozen=True)
class BaselineInputs:
    """What the comparison with the baseline reads besides the two runs: the stores holding
    the traces (for the structural diffs), the config (rules, pricing) and, when the run kept
    them, the traces it will diff (of the finished run's source)."""

    dbs: Sequence[str | None]
    config: Config
    preloaded: Callable[[Mapping[str, Any] | RunCases], Mapping[str, AgentTrace]] | None = None


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
