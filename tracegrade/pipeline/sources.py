"""Where traces come from: files (any supported format) or the store, as normalised traces.

One entry point for every command that reads traces (``inspect``, ``lint``, ``score``,
``export``, ``dataset build``): :func:`iter_from_files` decodes files directly (no import step;
a ``traces.*`` file brings its ``logs.*`` sibling), :func:`iter_from_store` reads what
``import`` or the receiver stored. Both yield normalised traces in batches of ``batch_size``
and hold only the current batch (see :mod:`tracegrade.otlp.stream` and
:mod:`tracegrade.store.scan`), so memory stays flat in the number of traces;
:func:`from_files` and :func:`from_store` collect them into one list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracegrade.errors import InputError
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.files import Payloads, ReadOptions
from tracegrade.otlp.stream import Deferred, LateError, decode_deferred, iter_traces
from tracegrade.scoring.parallel import ordered_map
from tracegrade.spans import TraceData
from tracegrade.store.scan import trace_id_batches
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace


@dataclass
class Loaded:
    """Normalised traces plus the input errors met while reading them."""

    traces: list[AgentTrace] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


DEFAULT_OPTIONS = ReadOptions()
DEFAULT_BATCH = 256
"""Traces per batch: large enough to amortise a store query, small enough to stay flat."""


def iter_from_files(
    paths: Iterable[str | Path],
    options: ReadOptions = DEFAULT_OPTIONS,
    *,
    batch_size: int = DEFAULT_BATCH,
    errors: list[InputError] | None = None,
    workers: int = 1,
) -> Iterator[list[AgentTrace]]:
    """Normalised traces of trace files (see :mod:`tracegrade.otlp.files` for the formats),
    in first-seen order, ``batch_size`` at a time. The input errors met (each naming file
    and line) are appended to ``errors`` before the first batch is yielded. ``workers``:
    processes that normalise each batch (:mod:`tracegrade.scoring.parallel`; same result).

    Raises:
        InputError: a path does not exist (at once, not on iteration).
    """
    batches = iter_raw_from_files(paths, options, batch_size=batch_size, errors=errors)
    return _normalised(batches, workers)


def iter_raw_from_files(
    paths: Iterable[str | Path],
    options: ReadOptions = DEFAULT_OPTIONS,
    *,
    batch_size: int = DEFAULT_BATCH,
    errors: list[InputError] | None = None,
    late: LateErrors | None = None,
) -> Iterator[list[TraceData]]:
    """:func:`iter_from_files` before normalisation: the decoded traces (those with spans),
    for a caller that normalises them elsewhere (``score --workers``: in the workers).

    With ``late``, the span lines of a single trace in canonical form are not decoded: their
    trace comes as a :class:`~tracegrade.otlp.stream.Deferred` that :func:`decoded` finishes
    (in the worker; from a plain file unchanged between the passes, the lines are not even
    read here: the worker reads them), and the errors the read pass meets once the index
    pass is done go to ``late`` (with those :func:`decoded` finds), not to ``errors``.

    Raises:
        InputError: a path does not exist (at once, not on iteration).
    """
    sink = Payloads()
    traces = iter_traces(paths, options, sink, defer=late is not None)
    return _batches(_reported(traces, sink, errors, late), batch_size)


class LateErrors:
    """The input errors of a read with deferred lines (see :func:`iter_raw_from_files`) met
    after its index pass: the read pass's, and those :func:`decoded` gives (:meth:`add`)."""

    def __init__(self) -> None:
        self.found: list[LateError] = []
        self.read_pass: list[InputError] | None = None
        self.start = 0

    def add(self, found: Iterable[LateError]) -> None:
        """Errors :func:`decoded` gave."""
        self.found.extend(found)

    def errors(self) -> list[InputError]:
        """Every late error in the order one process meets them (the read pass's in place
        of the deferred lines'); none unless the read reached its end (as without workers,
        where only the end of the read adds them)."""
        if self.read_pass is None:
            return []
        keyed = [((self.start + n, 1, 0), e) for n, e in enumerate(self.read_pass)]
        keyed += [((f.slot, 0, f.seq), f.error) for f in self.found]
        return [error for _, error in sorted(keyed, key=lambda pair: pair[0])]


def decoded(trace: TraceData) -> tuple[TraceData, list[LateError]]:
    """A trace of :func:`iter_raw_from_files` with its deferred lines read and decoded (see
    :func:`~tracegrade.otlp.stream.decode_deferred`), and their input errors for
    :meth:`LateErrors.add`.

    Raises:
        InputError: as :func:`~tracegrade.otlp.stream.decode_deferred` (e.g. the file
            changed since it was indexed).
    """
    return decode_deferred(trace)


def _reported(
    traces: Iterator[TraceData],
    sink: Payloads,
    errors: list[InputError] | None,
    late: LateErrors | None = None,
) -> Iterator[TraceData]:
    first = next(traces, None)  # the index pass, which finds the input errors, runs here
    reported = len(sink.errors)
    if errors is not None:
        errors.extend(sink.errors)
    if first is not None:
        yield first
        yield from traces
    if late is not None:
        late.read_pass, late.start = sink.errors[reported:], reported
    elif errors is not None:  # a canonical-looking line that did not decode is met when read
        errors.extend(sink.errors[reported:])


def _normalised(batches: Iterator[list[TraceData]], workers: int) -> Iterator[list[AgentTrace]]:
    for batch in batches:
        raw = _with_spans(batch)

        def normalise(index: int, raw: list[TraceData] = raw) -> AgentTrace:
            return normalize_trace(raw[index])

        yield ordered_map(normalise, len(raw), workers)
        del batch, raw, normalise  # not held while the next batch is read


def _with_spans(batch: list[TraceData]) -> list[TraceData]:
    """The traces normalisation keeps (it skips those with log records only)."""
    return [t for t in batch if t.spans or isinstance(t, Deferred)]


def _batches(items: Iterator[TraceData], size: int) -> Iterator[list[TraceData]]:
    batch: list[TraceData] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def iter_from_store(
    store: Store,
    *,
    since_unix_nano: int | None = None,
    limit: int | None = None,
    trace_ids: Sequence[str] = (),
    batch_size: int = DEFAULT_BATCH,
    workers: int = 1,
) -> Iterator[list[AgentTrace]]:
    """Normalised stored traces, newest first (filters as :meth:`Store.trace_ids`),
    ``batch_size`` at a time, the ids read through a cursor (server-side on PostgreSQL);
    ``workers`` as :func:`iter_from_files`."""
    batches = iter_raw_from_store(
        store,
        since_unix_nano=since_unix_nano,
        limit=limit,
        trace_ids=trace_ids,
        batch_size=batch_size,
    )
    return _normalised(batches, workers)


def iter_raw_from_store(
    store: Store,
    *,
    since_unix_nano: int | None = None,
    limit: int | None = None,
    trace_ids: Sequence[str] = (),
    batch_size: int = DEFAULT_BATCH,
) -> Iterator[list[TraceData]]:
    """:func:`iter_from_store` before normalisation (as :func:`iter_raw_from_files`)."""
    batches = trace_id_batches(
        store,
        since_unix_nano=since_unix_nano,
        limit=limit,
        trace_ids=trace_ids,
        batch_size=batch_size,
    )
    return (_with_spans(store.load(ids)) for ids in batches)


def from_files(paths: Iterable[str | Path], options: ReadOptions = DEFAULT_OPTIONS) -> Loaded:
    """Decode and normalise trace files into one list (see :func:`iter_from_files`).

    Raises:
        InputError: a path does not exist.
    """
    errors: list[InputError] = []
    batches = iter_from_files(paths, options, errors=errors)
    return Loaded([t for batch in batches for t in batch], errors)


def from_store(
    store: Store,
    *,
    since_unix_nano: int | None = None,
    limit: int | None = None,
    trace_ids: Sequence[str] = (),
) -> Loaded:
    """Normalise stored traces into one list, newest first (see :func:`iter_from_store`)."""
    batches = iter_from_store(
        store, since_unix_nano=since_unix_nano, limit=limit, trace_ids=trace_ids
    )
    return Loaded([t for batch in batches for t in batch])
