"""Trace files as a stream of whole traces, in memory bounded by the traces open at once.

:func:`tracegrade.otlp.files.read_paths` holds every request of every file; a store export of
a million traces does not fit. :func:`iter_traces` reads the same files twice instead:

1. **index**: only the trace ids of every request (one line of a Collector JSON file, or
   each request of a file that is read whole) are kept: for each trace, the last span request
   and the last log request that mention it, and the traces' first-seen order. A line in the
   exporters' canonical form is not decoded: its trace ids are read from its bytes with one
   regular expression (:func:`~tracegrade.otlp.lines.predict`) and a fingerprint of them
   kept (8 bytes a line; in a plain file also where the line starts and, for a span line of
   one trace, that trace: 24 bytes); any other line is decoded. Input errors and detected
   formats are recorded in this pass.
2. **assemble**: two cursors re-read the span requests and the log requests (a ``traces.*``
   file and its ``logs.*`` sibling in step); each trace is yielded, in first-seen order, as
   soon as both cursors passed its last request, and forgotten. A line the index did not
   decode is checked against its fingerprint: if its trace ids differ (it was not what it
   looked like), its error is reported then and its items kept whole. With ``defer``, a
   span line of one trace is left for a worker to decode and, in a plain file that did not
   change, to read (see :func:`iter_traces`).

The result equals ``group_by_trace(payloads.spans(), payloads.log_records())`` of
:func:`~tracegrade.otlp.files.read_paths` (traces with log records but no spans are left out,
as normalisation skips them). Memory: the index (a few ints per trace), one request, and the
traces whose requests interleave with later ones (none when each trace is written whole, as
exporters write a finished trace's batch). Files that are not line-oriented (protobuf, one JSON
document, any-agent traces) are read whole, as before.

Lines are read and decoded by :mod:`tracegrade.otlp.lines`.
"""

from __future__ import annotations

import functools
import io
import itertools
import os
import stat
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from tracegrade.errors import InputError
from tracegrade.otlp.files import (
    BoundedGzip,
    BoundedZstd,
    Payloads,
    ReadOptions,
    ZstdRecords,
    compression_of,
    expand_paths,
    read_bytes,
)
from tracegrade.otlp.lines import (
    DECODED,
    At,
    Identity,
    Line,
    Unit,
    chain,
    decoded,
    flush,
    head,
    ids_of,
    predict,
    single_trace,
)
from tracegrade.otlp.redaction import Redactor
from tracegrade.spans import Span, TraceData

__all__ = ["Deferred", "LateError", "decode_deferred", "iter_traces"]


class LateError(NamedTuple):
    """An input error :func:`decode_deferred` met, and where the read pass would have put it:
    after the first ``slot`` errors of its sink, deferred lines' errors in ``seq`` order."""

    slot: int
    seq: int
    error: InputError


@dataclass
class Deferred(TraceData):
    """A trace (of :func:`iter_traces` with ``defer``) some of whose span lines are not decoded
    yet: ``parts`` holds, in read order, lists of spans and undecoded lines; ``spans`` is the
    last list. :func:`decode_deferred` gives the trace itself."""

    parts: list[list[Span] | Line] = field(default_factory=list)


_NOTHING = Unit(False, [])
_SEQ = itertools.count()


def iter_traces(
    paths: Iterable[str | Path],
    options: ReadOptions | None = None,
    sink: Payloads | None = None,
    *,
    defer: bool = False,
) -> Iterator[TraceData]:
    """Each trace of the files (spans and log records, as read), in first-seen order.

    Input errors and formats are added to ``sink`` (errors name file and line) before the
    first trace is yielded, but for a line that looks canonical (see :func:`predict`) and then
    fails to decode: its error is added when the read pass reaches it.

    ``defer``: a canonical span line of a single trace is not decoded here; its trace comes
    as a :class:`Deferred` for :func:`decode_deferred` to finish (in a worker process: the
    decoding is most of the read pass), which also gives the line's input errors. In a plain
    file unchanged since the index pass (same size and modification time), such a line is
    not even read here: the index noted where it is, and :func:`decode_deferred` reads it.

    Raises:
        InputError: a path does not exist (at once, not on iteration).
    """
    options = options or ReadOptions()
    files = expand_paths(paths, sibling_logs=options.sibling_logs)
    return _assemble(files, options, sink if sink is not None else Payloads(), defer)


def decode_deferred(trace: TraceData) -> tuple[TraceData, list[LateError]]:
    """The trace of a :class:`Deferred` (its lines decoded: the spans the read pass would have
    given it, in the same order), and the input errors of those lines; any other trace as it is.

    Raises:
        InputError: a deferred line decoded to spans of another trace (a key written with
            escapes, which the index does not see): read it with one process; or its file
            changed since the index pass, or cannot be read any more.
    """
    if not isinstance(trace, Deferred):
        return trace, []
    spans: list[Span] = []
    late: list[LateError] = []
    for part in trace.parts:
        if isinstance(part, list):
            spans.extend(part)
            continue
        quiet = Payloads()
        line = _line_bytes(part)
        for unit in decoded(line, part.line_no, None, part.source, part.options, quiet):
            if not unit.is_logs:
                spans.extend(_own(part, unit.items))  # type: ignore[arg-type]
        late.extend(LateError(part.slot, part.seq, error) for error in quiet.errors)
    return _redactor().trace(TraceData(trace.trace_id, spans, trace.logs)), late


def _line_bytes(part: Line) -> bytes:
    """The deferred line's bytes: read where the index found them, if not read already.

    Raises:
        InputError: the file changed since the index pass (another file now, shorter, or
            the line is not its trace's span line any more), or cannot be read.
    """
    at = part.line
    if isinstance(at, bytes):
        return at
    try:
        descriptor = os.open(at.path, os.O_RDONLY)
        try:
            device, inode, size, _ = _identity(os.fstat(descriptor))
            same = (device, inode) == at.inode and size >= at.offset + at.length
            line = os.pread(descriptor, at.length, at.offset) if same else b""
        finally:
            os.close(descriptor)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc}", source=part.source, line=part.line_no) from exc
    if len(line) != at.length or not _names(line, part.trace_id):
        raise InputError(
            "the file changed while it was read: read it again",
            source=part.source,
            line=part.line_no,
        )
    return line


def _names(line: bytes, trace_id: str) -> bool:
    """Whether ``line`` still looks like the span line of ``trace_id`` the index found there:
    its first and last bytes, and that trace's id (its spans are checked once decoded, by
    :func:`_own`; a full check of its ids would scan the line once more)."""
    key = b'"traceId":"%s"' % trace_id.encode()
    return line.startswith(b'{"resourceSpans":[{') and line.endswith(b"\n") and key in line


def _own(part: Line, items: list[Span]) -> list[Span]:
    """The spans of the line's trace (the others have none: their trace id is empty)."""
    if any(span.trace_id and span.trace_id != part.trace_id for span in items):
        raise InputError(
            "spans of other traces than the line's trace id says: the file changed while it "
            "was read (read it again), or the line is not what it looks like (--workers 1)",
            source=part.source,
            line=part.line_no,
        )
    return [span for span in items if span.trace_id]


@dataclass
class _FileIndex:
    """What the index pass keeps of a file read line by line (8 bytes a line; 24 in a
    plain file)."""

    prints: array[int] = field(default_factory=lambda: array("q"))
    """Per line: ``hash`` of the trace ids read from its bytes, or ``DECODED``."""
    identity: Identity | None = None
    """A plain file's, as the index pass opened it (None: gzip, not a regular file, or no
    ``os.pread``)."""
    starts: array[int] = field(default_factory=lambda: array("q"))
    """A plain file's: each line's byte offset, then where the last one ends."""
    owners: array[int] = field(default_factory=lambda: array("q"))
    """A plain file's: per line, the number (see :class:`_Index`) of the one trace of a
    canonical span line, else -1."""

    def unchanged(self, identity: Identity) -> bool:
        """Whether the read pass may take the lines where the index found them: a plain
        file with the same identity, indexed to its end."""
        done = len(self.starts) == len(self.prints) + 1
        return self.identity is not None and identity == self.identity and done


@dataclass
class _Index:
    order: list[str] = field(default_factory=list)
    """The span traces in first-seen order; a trace's number is its place here."""
    numbers: dict[str, int] = field(default_factory=dict)
    last_span: array[int] = field(default_factory=lambda: array("q"))
    """Per trace number, the last span request that mentions it."""
    last_log: dict[str, int] = field(default_factory=dict)
    span_files: set[int] = field(default_factory=set)
    log_files: set[int] = field(default_factory=set)
    files: list[_FileIndex] = field(default_factory=list)

    def add_spans(self, position: int, ids: list[str]) -> None:
        """Span request number ``position`` mentions traces ``ids``."""
        for trace_id in dict.fromkeys(ids):  # one a line, mostly, named by each span
            number = self.numbers.setdefault(trace_id, len(self.order))
            if number == len(self.order):
                self.order.append(trace_id)
                self.last_span.append(position)
            else:
                self.last_span[number] = position

    def owner(self, ids: list[str]) -> int:
        """The number of the one trace of ``ids`` (a span request's), else -1."""
        distinct = set(ids)
        distinct.discard("")
        return self.numbers[distinct.pop()] if len(distinct) == 1 else -1


def _index(files: list[Path], options: ReadOptions, sink: Payloads) -> _Index:
    index, counts = _Index(), [0, 0]
    for number, path in enumerate(files):
        index.files.append(file := _FileIndex())
        for is_logs, items, ids, *_ in _file_units(path, options, sink, file, False):
            position = counts[is_logs]
            counts[is_logs] += 1
            if is_logs:
                index.log_files.add(number)
                for trace_id in ids_of(is_logs, items) if ids is None else ids:
                    index.last_log[trace_id] = position
                continue
            index.span_files.add(number)
            index.add_spans(position, ids_of(is_logs, items) if ids is None else ids)
            if ids is not None and file.identity is not None:  # a canonical line, just indexed
                file.owners[-1] = index.owner(ids)
    return index


def _assemble(
    files: list[Path], options: ReadOptions, sink: Payloads, defer: bool
) -> Iterator[TraceData]:
    index = _index(files, options, sink)
    pending: dict[str, TraceData] = {}
    spans = _Cursor(files, options, False, index, pending, sink, defer)
    logs = _Cursor(files, options, True, index, pending, sink)
    for number, trace_id in enumerate(index.order):
        spans.read_through(index.last_span[number])
        logs.read_through(index.last_log.get(trace_id, -1))
        trace = pending.pop(trace_id, None)
        if trace is not None and _has_spans(trace):  # None if a file changed between passes
            yield _redacted(trace)
    # only if a line deviated
    yield from (_redacted(t) for t in pending.values() if _has_spans(t))


def _redacted(trace: TraceData) -> TraceData:
    """A trace with its secrets redacted (:meth:`Redactor.trace`, the shipped rules); a
    :class:`Deferred` one is redacted once :func:`decode_deferred` has decoded it."""
    return trace if isinstance(trace, Deferred) else _redactor().trace(trace)


@functools.lru_cache(maxsize=1)
def _redactor() -> Redactor:
    return Redactor()


def _has_spans(trace: TraceData) -> bool:
    """Whether the trace has spans (a deferred one has its lines')."""
    return bool(trace.spans) or isinstance(trace, Deferred)


class _Cursor:
    """Reads one kind of request (spans or log records) in order, into ``pending``."""

    def __init__(
        self,
        files: list[Path],
        options: ReadOptions,
        is_logs: bool,
        index: _Index,
        pending: dict[str, TraceData],
        sink: Payloads,
        defer: bool = False,
    ):
        only = index.log_files if is_logs else index.span_files
        order = index.order if defer else None
        self.units = (
            unit
            for number, path in enumerate(files)
            if number in only
            for unit in _file_units(path, options, sink, index.files[number], True, order)
            if unit.is_logs == is_logs
        )
        self.position, self.is_logs, self.pending = 0, is_logs, pending
        self.wanted = index.numbers

    def read_through(self, last: int) -> None:
        """Read requests up to and including number ``last`` of this kind.

        A request whose trace ids differ from the index's (a file changed, or a canonical
        looking line did not decode as one) is kept whole, its traces yielded last if late."""
        while self.position <= last:
            unit = next(self.units, _NOTHING)  # nothing only if a file shrank between passes
            if unit.raw is not None:
                self._defer(unit.raw)
            for item in unit.items:
                trace_id = item.trace_id
                if trace_id and (trace_id in self.wanted or unit.deviated):
                    trace = self.pending.setdefault(trace_id, TraceData(trace_id))
                    (trace.logs if self.is_logs else trace.spans).append(item)  # type: ignore[arg-type]
            self.position += 1

    def _defer(self, line: Line) -> None:
        """The line's trace becomes (stays) a :class:`Deferred`; spans read later go after it."""
        trace = self.pending.get(line.trace_id)
        if not isinstance(trace, Deferred):
            old = trace or TraceData(line.trace_id)
            trace = Deferred(line.trace_id, [], old.logs, [old.spans] if old.spans else [])
            self.pending[line.trace_id] = trace
        trace.spans = []
        trace.parts += [line, trace.spans]


# --- one file -------------------------------------------------------------------------------


_BUFFER = 1 << 20
"""Read buffer, bytes: a line of a Collector file is often 100 KB; with the default 8 KB
buffer, iterating lines costs 4x more."""

_CAN_PREAD = hasattr(os, "pread")
"""Whether a worker can read a line where it is (not on Windows, which has no fork either)."""


def _open(path: Path) -> tuple[IO[bytes], Identity | None]:
    """The file's bytes (decompressed if gzip or zstd) and, for a plain regular file (where
    ``os.pread`` exists), its identity."""
    with path.open("rb") as probe:
        kind = compression_of(probe.read(8))
    if kind == "gzip":
        return io.BufferedReader(BoundedGzip(path), _BUFFER), None
    if kind is not None:
        reader = ZstdRecords if kind == "zstd-records" else BoundedZstd
        return io.BufferedReader(reader(path.open("rb"), path.stat().st_size), _BUFFER), None
    handle = path.open("rb", buffering=_BUFFER)
    status = os.fstat(handle.fileno())
    plain = _CAN_PREAD and stat.S_ISREG(status.st_mode)
    return handle, _identity(status) if plain else None


def _identity(status: os.stat_result) -> Identity:
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _file_units(
    path: Path,
    options: ReadOptions,
    sink: Payloads,
    file: _FileIndex,
    reading: bool,
    order: list[str] | None = None,
) -> Iterator[Unit]:
    """The requests of one file, in file order; problems go to ``sink.errors``.

    Index pass (``reading`` False): a canonical line is not decoded, only its trace ids read
    (:func:`predict`), and each line's fingerprint noted in ``file``. Read pass: every
    request decoded, checked against ``file``; only the lines that the index did not decode
    report their errors (again). With ``order`` (the index's), a canonical span line of one
    trace is deferred (see :func:`iter_traces`)."""
    source = str(path)
    quiet = Payloads() if reading else sink  # the index reported these errors
    try:
        handle, identity = _open(path)
        with handle:
            started, first = head(handle)
            if first is None:
                yield from _whole(b"".join(started) + handle.read(), source, options, quiet)
                return
            lines = enumerate(chain(started, handle), start=1)
            if not reading:
                file.identity = identity
                yield from _index_lines(lines, first, source, options, sink, file)
            elif order is not None and identity is not None and file.unchanged(identity):
                yield from _read_at(handle, first, source, options, sink, file, order, identity)
            else:
                defer = order is not None
                yield from _read_lines(lines, first, source, options, sink, file.prints, defer)
    except (OSError, EOFError) as exc:
        quiet.errors.append(InputError(f"cannot read file: {exc}", source=source))


def _whole(data: bytes, source: str, options: ReadOptions, sink: Payloads) -> Iterator[Unit]:
    into = Payloads()
    read_bytes(data, source, options, into)
    yield from flush(into, sink)


# --- line-oriented JSON: the passes over a file's lines (see tracegrade.otlp.lines) ----------


def _index_lines(
    lines: Iterator[tuple[int, bytes]],
    first: Any,
    source: str,
    options: ReadOptions,
    sink: Payloads,
    file: _FileIndex,
) -> Iterator[Unit]:
    """Index pass: the trace ids of canonical lines (their fingerprints into ``file``, one
    per line; in a plain file where each line starts, its owner -1), every other line
    decoded."""
    offset, plain = 0, file.identity is not None
    for line_no, line in lines:
        if plain:
            file.starts.append(offset)
            file.owners.append(-1)
            offset += len(line)
        predicted = predict(line) if line_no > 1 else None
        if predicted is None:
            file.prints.append(DECODED)
            yield from decoded(line, line_no, first, source, options, sink)
            continue
        is_logs, ids = predicted
        file.prints.append(hash(tuple(ids)))
        sink.formats[source] = "otlp-json"
        yield Unit(is_logs, [], ids)
    if plain:
        file.starts.append(offset)  # the end: the file was indexed whole


def _read_lines(
    lines: Iterator[tuple[int, bytes]],
    first: Any,
    source: str,
    options: ReadOptions,
    sink: Payloads,
    prints: array[int],
    defer: bool = False,
) -> Iterator[Unit]:
    """Read pass: every line decoded; a line the index only predicted is checked against its
    fingerprint and its errors (reported late) go to ``sink``. ``defer``: a predicted span
    line of one trace is not decoded (see :func:`iter_traces`)."""
    quiet = Payloads()
    for line_no, line in lines:
        expected = prints[line_no - 1] if line_no <= len(prints) else DECODED
        trace_id = single_trace(line, expected) if defer and expected != DECODED else None
        if trace_id is None:
            yield from _read_line(line, line_no, first, source, options, sink, expected, quiet)
        else:
            yield _deferred(trace_id, line, line_no, source, options, sink)


def _read_at(
    handle: IO[bytes],
    first: Any,
    source: str,
    options: ReadOptions,
    sink: Payloads,
    file: _FileIndex,
    order: list[str],
    identity: Identity,
) -> Iterator[Unit]:
    """Read pass of a plain file unchanged since the index pass (``handle``, ``identity``):
    a canonical span line of one trace is not read here (its trace is deferred with where
    the line is); any other line is read where it starts and taken as :func:`_read_lines`
    takes it."""
    path, quiet, starts = os.path.abspath(source), Payloads(), file.starts
    for number, expected in enumerate(file.prints):
        start, end = starts[number], starts[number + 1]
        if (owner := file.owners[number]) >= 0:
            at = At(path, start, end - start, identity[:2])
            yield _deferred(order[owner], at, number + 1, source, options, sink)
            continue
        handle.seek(start)
        line = handle.read(end - start)
        yield from _read_line(line, number + 1, first, source, options, sink, expected, quiet)


def _deferred(
    trace_id: str,
    line: bytes | At,
    line_no: int,
    source: str,
    options: ReadOptions,
    sink: Payloads,
) -> Unit:
    """The unit of a deferred line: its trace id, bytes (or where they are) and place."""
    slot = len(sink.errors)
    return Unit(False, [], raw=Line(trace_id, line, line_no, source, options, slot, next(_SEQ)))


def _read_line(
    line: bytes,
    line_no: int,
    first: Any,
    source: str,
    options: ReadOptions,
    sink: Payloads,
    expected: int,
    quiet: Payloads,
) -> Iterator[Unit]:
    """The requests of a line the read pass decodes. The index decoded it (``expected``
    is ``DECODED``): its errors go to ``quiet``; else to ``sink``, and its request is
    checked against its fingerprint."""
    if expected == DECODED:
        yield from decoded(line, line_no, first, source, options, quiet)
        return
    is_logs = line[:17] == b'{"resourceLogs":['
    items: list[Any] = []
    for unit in decoded(line, line_no, first, source, options, sink):
        if unit.is_logs == is_logs:
            items.extend(unit.items)
    yield Unit(is_logs, items, None, hash(tuple(ids_of(is_logs, items))) != expected)
