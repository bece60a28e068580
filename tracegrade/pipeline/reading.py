"""The one way to read traces: files (any supported format) or the store, whole or in
batches, normalised, as the commands, the dashboard and the Python API read them; and which
of them a command looks at (time window, deterministic sampling).

Every command that reads traces (``inspect``, ``lint``, ``score``, ``export``, ``dataset
build``) comes here: :func:`iter_from_files` decodes files directly (no import step; a
``traces.*`` file brings its ``logs.*`` sibling), :func:`iter_from_store` reads what
``import`` or the receiver stored. Both yield normalised traces in batches of ``batch_size``
and hold only the current batch (see :mod:`tracegrade.otlp.stream` and
:mod:`tracegrade.store.scan`), so memory stays flat in the number of traces;
:func:`from_files` and :func:`from_store` collect them into one list; :func:`load` and
:func:`load_batches` choose files or the store as a command's options say;
:func:`traces_by_id` reads stored traces by id. :func:`parse_since`, :func:`select` and
:func:`select_batches` choose the traces a command looks at.
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracegrade._util.unix_time import unix_nano_of
from tracegrade.dataset import mapping
from tracegrade.errors import ConfigError, InputError
from tracegrade.normalize import normalize_trace
from tracegrade.normalize.conventions import add_map_files
from tracegrade.normalize.explain import Explanation, explain_trace
from tracegrade.otlp.files import Payloads, ReadOptions
from tracegrade.otlp.stream import Deferred, LateError, decode_deferred, iter_traces
from tracegrade.sampling import sampled
from tracegrade.scoring.parallel import ordered_map
from tracegrade.spans import TraceData
from tracegrade.store.database import display, is_postgres
from tracegrade.store.scan import trace_id_batches
from tracegrade.store.traces import Store, default_path
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


_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: str, option: str) -> float:
    """Seconds from ``90m`` / ``12h`` / ``30d`` / ``4w``; ``option`` names it in errors.

    Raises:
        ConfigError: another form, or zero.
    """
    match = _RELATIVE.match(value.strip())
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{option} {value!r}: use a duration such as 12h, 30d or 4w")
    return float(match.group(1)) * _UNITS_S[match.group(2)]


def parse_since(value: str | None, now_s: float | None = None) -> int | None:
    """Unix nanoseconds from ``30m`` / ``12h`` / ``7d`` (ago) or an ISO 8601 date or time
    (UTC when no offset is given).

    Raises:
        ConfigError: neither form.
    """
    if value is None:
        return None
    match = _RELATIVE.match(value.strip())
    if match:
        now_s = time.time() if now_s is None else now_s
        return int((now_s - float(match.group(1)) * _UNITS_S[match.group(2)]) * 1e9)
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise ConfigError(
            f"--since {value!r}: use 30m, 12h, 7d or an ISO date such as 2026-11-01T09:00"
        ) from exc
    return unix_nano_of(moment)


def select(
    traces: Sequence[AgentTrace],
    *,
    since_unix_nano: int | None,
    sample: float | None,
    limit: int | None,
) -> list[AgentTrace]:
    """Traces started at or after ``since``, kept by ``sample``, at most ``limit``."""
    chosen = [t for t in traces if since_unix_nano is None or t.start_unix_nano >= since_unix_nano]
    if sample is not None:
        chosen = [t for t in chosen if sampled(t.trace_id, sample)]
    return chosen[:limit] if limit is not None else chosen


def keeps(trace: AgentTrace, *, since_unix_nano: int | None, sample: float | None) -> bool:
    """Whether :func:`select` keeps this trace (but for ``limit``)."""
    if since_unix_nano is not None and trace.start_unix_nano < since_unix_nano:
        return False
    return sample is None or sampled(trace.trace_id, sample)


def select_batches(
    batches: Iterable[Sequence[AgentTrace]],
    *,
    since_unix_nano: int | None,
    sample: float | None,
    limit: int | None,
) -> Iterator[list[AgentTrace]]:
    """:func:`select` over a stream of batches: the same traces, batch by batch; reading
    stops once ``limit`` traces are kept."""
    left = limit
    for batch in batches:
        chosen = select(batch, since_unix_nano=since_unix_nano, sample=sample, limit=left)
        kept = len(chosen)
        if chosen:
            yield chosen
        del batch, chosen  # not held while the next batch is read
        if left is not None:
            left -= kept
            if left <= 0:
                return


ErrorSink = Callable[[Sequence[InputError]], None]
"""Told of input errors as they are found (the CLI prints them on stderr)."""


def _ignore(errors: Sequence[InputError]) -> None:
    del errors


_FILTER_OPTIONS = {"since_unix_nano": "--since", "limit": "--limit", "trace_ids": "--trace-id"}


def load(files: Sequence[str], db: str | None, messages_key: str, **store_filters: Any) -> Loaded:
    """Traces from ``files`` or, when none are given, from the store (``store_filters`` as
    :func:`from_store`).

    Raises:
        ConfigError: reading the store, the SQLite file does not exist (it is not created),
            or the store holds no trace (the message names the store and the filters).
    """
    if files:
        return from_files(files, ReadOptions(messages_key=messages_key))
    location = default_path(db)
    if not is_postgres(location) and not Path(location).exists():
        raise ConfigError(
            f"no trace store at {display(location)}: import traces (tracegrade import FILE) or "
            "receive them (tracegrade collect) first, give trace files, or pass --db"
        )
    with Store(db) as store:
        loaded = from_store(store, **store_filters)
    if not loaded.traces:
        filters = [_FILTER_OPTIONS.get(k, k) for k, v in store_filters.items() if v]
        raise ConfigError(
            f"no traces in the trace store {display(location)}"
            + (f" (check {', '.join(filters)})" if filters else "")
        )
    return loaded


def load_batches(
    files: Sequence[str],
    db: str | None,
    messages_key: str,
    errors: list[InputError] | None = None,
    workers: int = 1,
    *,
    raw: bool = False,
    late: LateErrors | None = None,
    on_errors: ErrorSink = _ignore,
    **store_filters: Any,
) -> Iterator[list[Any]]:
    """:func:`load`, streamed: batches of traces (see
    :func:`iter_from_files`), the input errors given to
    ``on_errors`` and added to ``errors`` when the first batch is read
    (the files are indexed then: every error is known before scoring); ``workers`` processes
    normalise each batch; ``raw``: the decoded traces, not normalised (``TraceData``: the
    caller normalises them), with ``late`` some of a file's lines left for the caller to decode
    (see :func:`iter_raw_from_files`). The caller checks that
    some trace came (:func:`no_traces_error` says why none did).

    Raises:
        ConfigError: as :func:`load`, for a SQLite store that does not exist (at once).
    """
    if files:
        errors = [] if errors is None else errors
        options = ReadOptions(messages_key=messages_key)
        batches: Iterator[list[Any]] = (
            iter_raw_from_files(files, options, errors=errors, late=late)
            if raw
            else iter_from_files(files, options, errors=errors, workers=workers)
        )
        return _reporting(batches, errors, on_errors)
    location = default_path(db)
    if not is_postgres(location) and not Path(location).exists():
        raise ConfigError(
            f"no trace store at {display(location)}: import traces (tracegrade import FILE) or "
            "receive them (tracegrade collect) first, give trace files, or pass --db"
        )
    return _stored_batches(db, raw, {**store_filters, "workers": workers})


def _reporting(
    batches: Iterator[list[Any]], errors: list[InputError], on_errors: ErrorSink
) -> Iterator[list[Any]]:
    first = next(batches, None)
    on_errors(errors)
    reported = len(errors)
    if first is not None:
        yield first
        yield from batches
    on_errors(errors[reported:])  # found by the read pass (a line corrupt mid-way)


def _stored_batches(
    db: str | None, raw: bool, store_filters: dict[str, Any]
) -> Iterator[list[Any]]:
    with Store(db) as store:
        if raw:
            store_filters.pop("workers")
            yield from iter_raw_from_store(store, **store_filters)
        else:
            yield from iter_from_store(store, **store_filters)


def no_traces_error(files: Sequence[str], db: str | None, **store_filters: Any) -> ConfigError:
    """Why :func:`load_batches` gave no trace (the store and filters, as :func:`load`)."""
    if files:
        return ConfigError("no traces to score")
    filters = [_FILTER_OPTIONS.get(k, k) for k, v in store_filters.items() if v]
    return ConfigError(
        f"no traces in the trace store {display(default_path(db))}"
        + (f" (check {', '.join(filters)})" if filters else "")
    )


def load_mapping(path: str | None, case_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """The ``--mapping`` file (see :func:`tracegrade.mapping.load_mapping`); {} without one.

    Raises:
        ConfigError: a bad mapping file (the message names it).
    """
    return {} if path is None else mapping.load_mapping(path, case_ids)


def traces_by_id(store: Store, trace_ids: Sequence[str]) -> dict[str, AgentTrace]:
    """The stored traces ``trace_ids`` (those with spans), normalised, by trace id: the one
    way the dashboard, the follower and the comparisons read traces by id."""
    return {t.trace_id: normalize_trace(t) for t in store.load(list(trace_ids)) if t.spans}


Normalized = dict[str, tuple[TraceData, AgentTrace]]
"""Stored traces by id, each with its normalised trace."""


def load_normalized(store: Store, trace_ids: Sequence[str]) -> Normalized:
    """The stored traces among ``trace_ids`` (those with spans), normalised."""
    return {t.trace_id: (t, normalize_trace(t)) for t in store.load(trace_ids) if t.spans}


def add_conventions(paths: Sequence[str]) -> None:
    """Read traces with these convention map files too (``tracegrade --conventions``), before
    the built-in maps; the files are checked now.

    Raises:
        InputError: a file cannot be read or holds an invalid map (file and field named).
    """
    add_map_files(paths)


def explained_batches(
    files: Sequence[str], db: str | None, messages_key: str, **options: Any
) -> Iterator[list[Explanation]]:
    """:func:`load_batches` as explanations (``inspect --explain``): each trace normalised
    with the source of every derived field (:func:`tracegrade.normalize.explain.explain_trace`)."""
    for batch in load_batches(files, db, messages_key, raw=True, **options):
        yield [explain_trace(trace) for trace in batch if trace.spans]
