"""Evaluation over a stream of trace batches: each batch is scored and dropped.

:func:`~tracegrade.scoring.evaluation.evaluate` needs every trace at once; a store of a million
traces does not fit. :func:`evaluate_batches` gives the same :class:`RunResult` (the same
results, in the same order) while holding one batch of traces, plus the results (a few KB
each) and a few facts per run (:class:`TraceFacts`); :func:`stream_results` hands each
result to a callback instead and keeps none (``tracegrade score``: memory flat in the number
of traces).

Matching (see :mod:`tracegrade.scoring.evaluation`) prefers, per case, traces labelled with its
id, then the traces it names, then traces with its first input; which rule wins for a case
is known only once every trace is seen. So each trace is scored against every case it
*could* belong to (almost always one), and the results the precedence rejects are dropped
at the end; :func:`stream_results` parks the candidates in a temporary file meanwhile. A
trace that is one turn of a multi-turn case (:mod:`tracegrade.scoring.turns`) is parked
itself, unscored: its conversation is merged and scored at the end, if no other rule matched
the case.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import tempfile
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from tracegrade._util.heap import scoring_heap
from tracegrade.config import Config
from tracegrade.dataset import Case, Dataset, Tier
from tracegrade.dataset.placeholders import same_message
from tracegrade.scoring.evaluation import (
    Progress,
    _normalized,
    _prefetch,
    case_id_of,
    run_threshold,
    run_weights,
    score_trace,
    unmatched,
)
from tracegrade.scoring.parallel import ordered_batches
from tracegrade.scoring.results import CaseResult, RunResult
from tracegrade.scoring.score import Scorer
from tracegrade.scoring.summary import summarize
from tracegrade.scoring.turns import follows_turns, joined_conversations, turn_of
from tracegrade.trace import AgentTrace

__all__ = ["Prepared", "TraceFacts", "TraceKeeper", "evaluate_batches", "stream_results"]


@dataclass
class TraceFacts:
    """What a run document keeps of the traces: how many, their agent versions
    (``service.version``) and the models they called."""

    count: int = 0
    versions: Counter[str] = field(default_factory=Counter)
    models: set[str] = field(default_factory=set)

    def add(self, trace: AgentTrace) -> None:
        """Count one trace."""
        self.note(*_facts_of(trace))

    def note(self, version: str | None, models: Iterable[str]) -> None:
        """Count one trace, of its agent version (if any) and models."""
        self.count += 1
        if version:
            self.versions[version] += 1
        self.models.update(models)

    def merge(self, other: TraceFacts) -> None:
        """Count the traces ``other`` counted too."""
        self.count += other.count
        self.versions.update(other.versions)
        self.models.update(other.models)

    @classmethod
    def of(cls, traces: Iterable[AgentTrace]) -> TraceFacts:
        """The facts of traces held in memory."""
        facts = cls()
        for trace in traces:
            facts.add(trace)
        return facts


class TraceKeeper(Protocol):
    """What :func:`stream_results` tells a caller that needs a few of the traces it scores
    (``score --baseline``: those whose case changed), without holding the others."""

    def wants(self, trace_id: str, results: Sequence[CaseResult]) -> bool:
        """Whether the caller needs the trace ``trace_id`` itself, given its ``results`` (one
        per case it may belong to; none when it may belong to none). Runs in the process that
        scored the trace (a worker with ``workers`` > 1): it must only read."""
        ...

    def take(self, trace_id: str, trace: AgentTrace | None) -> None:
        """Every trace scored, in stream order, in the calling process: ``trace`` when
        :meth:`wants` said so, else None."""
        ...


_Entry = tuple[int, str]
"""Where a candidate result is parked (:class:`_Parked`) and its trace id."""


@dataclass
class _Matches:
    """Per case, the results of each matching rule; per trace (in stream order), its id."""

    cases: list[Case]
    mapping: Mapping[str, Sequence[str]]
    parked: _Parked
    by_attr: dict[int, list[_Entry]] = field(default_factory=dict)
    by_name: dict[int, dict[str, _Entry]] = field(default_factory=dict)
    by_input: dict[int, list[_Entry]] = field(default_factory=dict)
    by_turn: dict[int, list[_Entry]] = field(default_factory=dict)
    """Per multi-turn case, its turn traces parked (not results)."""
    trace_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.ids = {case.id for case in self.cases}
        self.named = [
            [*c.trace_ids, *(i.lower() for i in self.mapping.get(c.id or "", ()))]
            for c in self.cases
        ]

    def candidates(self, trace: AgentTrace) -> list[tuple[int, str]]:
        """(case index, rule) for every case this trace may belong to."""
        out = [(n, "name") for n, names in enumerate(self.named) if trace.trace_id in names]
        if (case_id := case_id_of(trace)) is not None and case_id in self.ids:
            out += [(n, "attr") for n, c in enumerate(self.cases) if c.id == case_id]
        elif trace.user_inputs or trace.history:
            first = _normalized(trace.user_inputs[0]) if trace.user_inputs else None
            out += [
                (n, "input")
                for n, c in enumerate(self.cases)
                if c.input is not None and same_message(c.input, first) and follows_turns(trace, c)
            ]
            out += [(n, "turn") for n, c in enumerate(self.cases) if turn_of(trace, c)]
        return out

    def hold(self, trace: AgentTrace, cases: Sequence[int]) -> None:
        """Park ``trace``, a turn of each of the multi-turn ``cases``, for :meth:`results`."""
        if cases:
            entry = (self.parked.park(trace), trace.trace_id)
            for case in cases:
                self.by_turn.setdefault(case, []).append(entry)

    def record(self, case: int, rule: str, place: int, trace_id: str) -> None:
        """Note that the result parked at ``place`` (trace ``trace_id``) matched ``case``."""
        entry = (place, trace_id)
        if rule == "attr":
            self.by_attr.setdefault(case, []).append(entry)
        elif rule == "name":
            self.by_name.setdefault(case, {})[trace_id] = entry
        else:
            self.by_input.setdefault(case, []).append(entry)

    def results(self, run: _Run, progress: Progress | None) -> tuple[list[int | CaseResult], int]:
        """Each case's results by precedence (their places; its conversations merged and
        scored by ``run`` (``progress`` told); unmatched results when none), and the
        traces unused."""
        results: list[int | CaseResult] = []
        used: set[str] = set()
        for n, case in enumerate(self.cases):
            named = self.by_name.get(n, {})
            chosen = (
                self.by_attr.get(n)
                or [named[i] for i in self.named[n] if i in named]
                or self.by_input.get(n, [])
            )
            used.update(trace_id for _, trace_id in chosen)
            joined = [] if chosen else self._conversations(n, run, progress, used)
            results.extend([place for place, _ in chosen] or joined or [unmatched(case)])
        return results, sum(1 for i in self.trace_ids if i not in used)

    def _conversations(
        self, case: int, run: _Run, progress: Progress | None, used: set[str]
    ) -> list[CaseResult]:
        """The case's turn traces merged into conversations and scored (their ids ``used``)."""
        turns = [self.parked.get_trace(place) for place, _ in self.by_turn.get(case, [])]
        joined = joined_conversations(self.cases[case], turns)
        _prefetch(run.scorers, [(merged, self.cases[case]) for merged, _ in joined])
        results = []
        for merged, ids in joined:
            used.update(ids)
            results.append(result := run.score(merged, self.cases[case]))
            if progress:
                progress(result)
        return results


def evaluate_batches(
    batches: Iterable[Sequence[AgentTrace]],
    dataset: Dataset | None,
    scorers: Sequence[Scorer],
    config: Config,
    *,
    tier: Tier | None = None,
    threshold: float | None = None,
    mapping: Mapping[str, Sequence[str]] | None = None,
    progress: Progress | None = None,
    workers: int = 1,
) -> tuple[RunResult, TraceFacts]:
    """:func:`~tracegrade.scoring.evaluation.evaluate` over batches of traces (same arguments,
    same result), and the :class:`TraceFacts` of the traces seen."""
    results: list[CaseResult] = []
    leftover, facts = stream_results(
        batches,
        dataset,
        scorers,
        config,
        results.append,
        tier=tier,
        threshold=threshold,
        mapping=mapping,
        progress=progress,
        workers=workers,
    )
    threshold = run_threshold(threshold, dataset, config)
    return RunResult(tuple(results), summarize(results, threshold, leftover)), facts


def stream_results(
    batches: Iterable[Sequence[Any]],
    dataset: Dataset | None,
    scorers: Sequence[Scorer],
    config: Config,
    sink: Callable[[CaseResult], None],
    *,
    tier: Tier | None = None,
    threshold: float | None = None,
    mapping: Mapping[str, Sequence[str]] | None = None,
    progress: Progress | None = None,
    workers: int = 1,
    prepare: Callable[[Any], AgentTrace | Prepared | None] | None = None,
    limit: int | None = None,
    on_notes: Callable[[Sequence[Any]], None] | None = None,
    keeper: TraceKeeper | None = None,
) -> tuple[int, TraceFacts]:
    """:func:`evaluate_batches` without holding the results: each result of the run goes to
    ``sink``, in :func:`~tracegrade.scoring.evaluation.evaluate`'s order, and is dropped.
    Without a dataset a result goes as soon as its batch is scored; with one, once every
    trace is seen (the matching precedence needs them all): until then the candidates wait
    in a temporary file, not in memory. Returns the number of traces no case used and the
    :class:`TraceFacts` of the traces seen.

    ``prepare``: the trace of each item of ``batches`` (e.g. normalising a decoded trace),
    or None to skip the item, or both in a :class:`Prepared` with notes for ``on_notes``
    (called in item order); without it the items are traces. ``limit``: at most this many
    traces (reading stops there). With ``workers`` > 1, each batch's items are prepared and
    scored in forked processes while the next batch is read (:func:`ordered_batches`; with a
    ``limit``, once the batch before is scored: no batch is read past the limit), and only
    results (and notes) come back; same results, same order. ``keeper``: told of every trace
    scored, given the few it wants (from a worker, pickled, only those)."""
    run = _Run(
        scorers, config, run_weights(dataset, config), run_threshold(threshold, dataset, config)
    )
    with _Parked() as parked, scoring_heap():
        matches = _Matches(dataset.tier(tier), mapping or {}, parked) if dataset else None
        facts = TraceFacts()
        if workers > 1 and not _prefetching(scorers):
            scored = _in_workers(batches, prepare, matches, run, keeper, workers, limit, on_notes)
            with contextlib.closing(scored):
                for one in itertools.islice(scored, limit):  # the workers stop at the limit
                    _take(one, matches, facts, progress, sink, keeper)
        else:
            for batch in _prepared(batches, prepare, limit, on_notes):
                _score_batch(batch, matches, facts, progress, sink, run, keeper)
                del batch  # let this batch go before the next one is read
        if matches is None:
            return 0, facts
        chosen, leftover = matches.results(run, progress)
        for item in chosen:
            sink(parked.get(item) if isinstance(item, int) else item)
        return leftover, facts


def _in_workers(
    batches: Iterable[Sequence[Any]],
    prepare: Callable[[Any], AgentTrace | Prepared | None] | None,
    matches: _Matches | None,
    run: _Run,
    keeper: TraceKeeper | None,
    workers: int,
    limit: int | None,
    on_notes: Callable[[Sequence[Any]], None] | None,
) -> Generator[_Scored, None, None]:
    """The items of ``batches`` prepared and scored in ``workers`` forked processes, in order
    (with a ``limit``, a batch is read once the last is scored: no input read past it)."""

    def score(item: Any) -> _Scored:
        trace, notes = _unpack(item if prepare is None else prepare(item))
        if trace is None:
            return _Scored(None, notes)
        return _score(trace, notes, matches, run, keeper)

    outcomes = ordered_batches(score, batches, workers, ahead=int(limit is None))
    return _flat(outcomes, on_notes)


@dataclass(frozen=True)
class _Run:
    """What scoring a trace takes besides the trace and its case."""

    scorers: Sequence[Scorer]
    config: Config
    weights: Mapping[str, float]
    threshold: float

    def score(self, trace: AgentTrace, case: Case | None) -> CaseResult:
        """:func:`~tracegrade.scoring.evaluation.score_trace` of this run."""
        return score_trace(trace, case, self.scorers, self.config, self.weights, self.threshold)


def _prefetching(scorers: Sequence[Scorer]) -> bool:
    """Whether a scorer wants each batch's (trace, case) pairs first (the LLM judge): it
    runs in this process."""
    return any(callable(getattr(scorer, "prefetch", None)) for scorer in scorers)


class Prepared(NamedTuple):
    """What ``prepare`` gives of an item: its trace (None: skip it) and notes for the caller
    (e.g. input errors met decoding it)."""

    trace: AgentTrace | None
    notes: Sequence[Any] = ()


def _unpack(prepared: AgentTrace | Prepared | None) -> Prepared:
    return prepared if isinstance(prepared, Prepared) else Prepared(prepared)


def _flat(
    batches: Iterator[list[_Scored]], on_notes: Callable[[Sequence[Any]], None] | None
) -> Generator[_Scored, None, None]:
    """The traces scored, in order (the notes of every item passed on)."""
    for batch in batches:
        for one in batch:
            if one.notes and on_notes:
                on_notes(one.notes)
            if one.trace_id is not None:
                yield one
        del batch


def _prepared(
    batches: Iterable[Sequence[Any]],
    prepare: Callable[[Any], AgentTrace | Prepared | None] | None,
    limit: int | None,
    on_notes: Callable[[Sequence[Any]], None] | None,
) -> Iterator[Sequence[AgentTrace]]:
    """The batches' traces (``prepare``d), at most ``limit`` of them."""
    left = limit
    for batch in batches:
        if prepare is not None:
            batch = [t for t in _kept(map(prepare, batch), on_notes) if t is not None]
        if left is not None:
            batch = batch[:left]
            left -= len(batch)
        if batch:
            yield batch
        del batch  # not held while the next batch is read
        if left is not None and left <= 0:
            return


def _score_batch(
    batch: Sequence[AgentTrace],
    matches: _Matches | None,
    facts: TraceFacts,
    progress: Progress | None,
    sink: Callable[[CaseResult], None],
    run: _Run,
    keeper: TraceKeeper | None,
) -> None:
    """Score one batch in this process (the judge prefetches its pairs first)."""
    jobs = _jobs(batch, matches, facts)
    _prefetch(run.scorers, [(trace, case) for _, each in jobs for trace, case, _ in each])
    for trace, trace_jobs in jobs:
        results = [run.score(trace, case) for _, case, _ in trace_jobs]
        for (_, _, rules), result in zip(trace_jobs, results, strict=True):
            if progress:
                progress(result)
            _keep(result, rules, matches, sink)
        if keeper is not None:
            keeper.take(trace.trace_id, trace if keeper.wants(trace.trace_id, results) else None)


def _keep(
    result: CaseResult,
    rules: list[tuple[int, str]],
    matches: _Matches | None,
    sink: Callable[[CaseResult], None],
) -> None:
    """A result to the sink (no dataset), else parked for the (case, rule) pairs it counts for."""
    if matches is None:
        sink(result)
        return
    place = matches.parked.park(result)
    for case, rule in rules:
        matches.record(case, rule, place, result.trace_id or "")


def _kept(
    prepared: Iterable[AgentTrace | Prepared | None],
    on_notes: Callable[[Sequence[Any]], None] | None,
) -> Iterator[AgentTrace | None]:
    for trace, notes in map(_unpack, prepared):
        if notes and on_notes:
            on_notes(notes)
        yield trace


class _Scored(NamedTuple):
    """What a worker sends back of one item: the notes of preparing it and, unless it was
    skipped (``trace_id`` None), its trace's facts, candidate cases and results."""

    trace_id: str | None
    notes: Sequence[Any]
    version: str | None = None
    models: list[str] = []
    jobs: list[list[tuple[int, str]]] = []
    """Per result, the (case index, rule) pairs it may count for."""
    results: list[CaseResult] = []
    trace: AgentTrace | None = None
    """The trace itself, when the keeper wants it."""
    turns: list[int] = []
    """The multi-turn cases the trace is one turn of; then ``held`` is the trace."""
    held: AgentTrace | None = None


def _score(
    trace: AgentTrace,
    notes: Sequence[Any],
    matches: _Matches | None,
    run: _Run,
    keeper: TraceKeeper | None,
) -> _Scored:
    """One trace scored against every case it may belong to (in a worker process)."""
    jobs = _trace_jobs(trace, matches)  # the parent records the trace's id and facts
    results = [run.score(trace, case) for _, case, _ in jobs]
    wanted = keeper is not None and keeper.wants(trace.trace_id, results)
    return _Scored(
        trace.trace_id,
        notes,
        *_facts_of(trace),
        [rules for _, _, rules in jobs],
        results,
        trace if wanted else None,
        turns := _turns(trace, matches),
        trace if turns else None,
    )


def _take(
    scored: _Scored,
    matches: _Matches | None,
    facts: TraceFacts,
    progress: Progress | None,
    sink: Callable[[CaseResult], None],
    keeper: TraceKeeper | None,
) -> None:
    """A worker's trace into the run: its facts, its id, each result, the keeper told (as
    :func:`_score_batch`)."""
    facts.note(scored.version, scored.models)
    if matches is not None:
        matches.trace_ids.append(scored.trace_id or "")
        if scored.held is not None:
            matches.hold(scored.held, scored.turns)
    for rules, result in zip(scored.jobs, scored.results, strict=True):
        if progress:
            progress(result)
        _keep(result, rules, matches, sink)
    if keeper is not None:
        keeper.take(scored.trace_id or "", scored.trace)


class _Parked:
    """Case results pickled to a temporary file until the matching precedence is known;
    :meth:`park` gives the place to :meth:`get` one back from."""

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="tracegrade-results-")  # noqa: SIM115 (__exit__)

    def park(self, result: CaseResult | AgentTrace) -> int:
        self._file.seek(0, os.SEEK_END)
        place = self._file.tell()
        pickle.dump(result, self._file, protocol=pickle.HIGHEST_PROTOCOL)
        return place

    def get(self, place: int) -> CaseResult:
        self._file.seek(place)
        result: CaseResult = pickle.load(self._file)
        return result

    def get_trace(self, place: int) -> AgentTrace:
        self._file.seek(place)
        trace: AgentTrace = pickle.load(self._file)
        return trace

    def __enter__(self) -> _Parked:
        return self

    def __exit__(self, *_: object) -> None:
        self._file.close()


_Job = tuple[AgentTrace, Case | None, list[tuple[int, str]]]
"""A trace, a case to score it against, and the (case index, rule) pairs it may count for."""


def _jobs(
    batch: Sequence[AgentTrace], matches: _Matches | None, facts: TraceFacts
) -> list[tuple[AgentTrace, list[_Job]]]:
    """Every trace with its jobs (:func:`_trace_jobs`), the trace counted in ``facts`` and
    its id recorded for the matching."""
    jobs = []
    for trace in batch:
        facts.add(trace)
        if matches is not None:
            matches.trace_ids.append(trace.trace_id)
            matches.hold(trace, _turns(trace, matches))
        jobs.append((trace, _trace_jobs(trace, matches)))
    return jobs


def _trace_jobs(trace: AgentTrace, matches: _Matches | None) -> list[_Job]:
    """``trace`` with each case it may belong to and the (case index, rule) pairs of each
    (no dataset: one job without a case). A case the trace is only a turn of is no job
    (:func:`_turns`). Records nothing."""
    if matches is None:
        return [(trace, None, [])]
    found = matches.candidates(trace)
    return [
        (trace, matches.cases[case], [(n, r) for n, r in found if n == case])
        for case in dict.fromkeys(n for n, r in found if r != "turn")
    ]


def _turns(trace: AgentTrace, matches: _Matches | None) -> list[int]:
    """The multi-turn cases ``trace`` is one turn of (held, not scored)."""
    if matches is None:
        return []
    return [n for n, rule in matches.candidates(trace) if rule == "turn"]


def _facts_of(trace: AgentTrace) -> tuple[str | None, list[str]]:
    """The trace's agent version (``service.version``, a resource attribute) and models."""
    version = trace.resource_attributes.get("service.version")
    return (str(version) if version else None), [c.model for c in trace.llm_calls if c.model]
