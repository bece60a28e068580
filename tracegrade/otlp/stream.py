"""Trace files as a stream of whole traces, in memory bounded by the traces open at once.

:func:`tracegrade.otlp.files.read_paths` holds every request of every file; a store export of
a million traces does not fit. :func:`iter_traces` reads the same files twice instead:

1. **index**: only the trace ids of every request (one line of a Collector JSON file, or
   each request of a file that is read whole) are kept: for each trace, the last span request
   and the last log request that mention it, and the traces' first-seen order. A line in the
   exporters' canonical form is not decoded: its trace ids are read from its bytes with one
   regular expression (:func:`_predict`) and a fingerprint of them kept (8 bytes a line);
   any other line is decoded. Input errors and detected formats are recorded in this pass.
2. **assemble**: two cursors re-read the span requests and the log requests (a ``traces.*``
   file and its ``logs.*`` sibling in step); each trace is yielded, in first-seen order, as
   soon as both cursors passed its last request, and forgotten. A line the index did not
   decode is checked against its fingerprint: if its trace ids differ (it was not what it
   looked like), its error is reported then and its items kept whole.

The result equals ``group_by_trace(payloads.spans(), payloads.log_records())`` of
:func:`~tracegrade.otlp.files.read_paths` (traces with log records but no spans are left out,
as normalisation skips them). Memory: the index (a few ints per trace), one request, and the
traces whose requests interleave with later ones (none when each trace is written whole, as
exporters write a finished trace's batch). Files that are not line-oriented (protobuf, one JSON
document, any-agent traces) are read whole, as before.

OTLP/JSON lines are decoded with ``orjson`` and :mod:`tracegrade.otlp.jsonfast`, falling
back to the ``json_format`` path for anything outside its canonical subset.
"""

from __future__ import annotations

import gzip
import io
import itertools
import json
import re
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import orjson

from tracegrade.errors import InputError, OtlpDecodeError
from tracegrade.otlp import jsonfast
from tracegrade.otlp.codec import logs_from_request, spans_from_request
from tracegrade.otlp.files import (
    GZIP_MAGIC,
    Payloads,
    ReadOptions,
    classify_json,
    expand_paths,
    read_bytes,
    read_json_value,
)
from tracegrade.spans import LogRecord, Span, TraceData

__all__ = ["Deferred", "LateError", "decode_deferred", "iter_traces"]


class Unit(NamedTuple):
    """One request of a file: its spans (``is_logs`` False) or log records (True)."""

    is_logs: bool
    items: list[Span] | list[LogRecord]
    ids: list[str] | None = None
    """Index pass: the trace ids read from the raw line (``items`` then empty)."""
    deviated: bool = False
    """Read pass: the line's trace ids differ from those the index read from its bytes."""
    raw: _Line | None = None
    """Read pass with ``defer``: the undecoded line of one trace (``items`` then empty)."""


class _Line(NamedTuple):
    """A canonical span line of one trace, left undecoded by the read pass."""

    trace_id: str
    line: bytes
    line_no: int
    source: str
    options: ReadOptions
    slot: int
    """How many input errors the read pass had met when it reached this line."""
    seq: int
    """The line's place among the deferred lines, in read order."""


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

    parts: list[list[Span] | _Line] = field(default_factory=list)


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
    first trace is yielded, but for a line that looks canonical (see :func:`_predict`) and then
    fails to decode: its error is added when the read pass reaches it.

    ``defer``: a canonical span line of a single trace is not decoded here; its trace comes
    as a :class:`Deferred` for :func:`decode_deferred` to finish (in a worker process: the
    decoding is most of the read pass), which also gives the line's input errors.

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
            escapes, which the index does not see): read it with one process.
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
        for unit in _decoded(part.line, part.line_no, None, part.source, part.options, quiet):
            if not unit.is_logs:
                spans.extend(_own(part, unit.items))  # type: ignore[arg-type]
        late.extend(LateError(part.slot, part.seq, error) for error in quiet.errors)
    return TraceData(trace.trace_id, spans, trace.logs), late


def _own(part: _Line, items: list[Span]) -> list[Span]:
    """The spans of the line's trace (the others have none: their trace id is empty)."""
    if any(span.trace_id and span.trace_id != part.trace_id for span in items):
        raise InputError(
            "spans of other traces than the line's trace id says; read it with --workers 1",
            source=part.source,
            line=part.line_no,
        )
    return [span for span in items if span.trace_id]


@dataclass
class _Index:
    order: list[str] = field(default_factory=list)
    last_span: dict[str, int] = field(default_factory=dict)
    last_log: dict[str, int] = field(default_factory=dict)
    span_files: set[int] = field(default_factory=set)
    log_files: set[int] = field(default_factory=set)
    prints: dict[int, array[int]] = field(default_factory=dict)
    """Per file, per line: ``hash`` of the trace ids read from its bytes, or ``_DECODED``."""


def _index(files: list[Path], options: ReadOptions, sink: Payloads) -> _Index:
    index, counts = _Index(), [0, 0]
    for number, path in enumerate(files):
        index.prints[number] = prints = array("q")
        for is_logs, items, ids, *_ in _file_units(path, options, sink, prints, False):
            position = counts[is_logs]
            counts[is_logs] += 1
            ids = _ids(is_logs, items) if ids is None else ids
            if is_logs:
                index.log_files.add(number)
                for trace_id in ids:
                    index.last_log[trace_id] = position
                continue
            index.span_files.add(number)
            for trace_id in ids:
                if trace_id not in index.last_span:
                    index.order.append(trace_id)
                index.last_span[trace_id] = position
    return index


def _ids(is_logs: bool, items: list[Span] | list[LogRecord]) -> list[str]:
    """The trace ids the index keeps of a request's items: every span's ('' if none), and
    the log records' that have one."""
    if is_logs:
        return [record.trace_id for record in items if record.trace_id]
    return [span.trace_id or "" for span in items]


def _assemble(
    files: list[Path], options: ReadOptions, sink: Payloads, defer: bool
) -> Iterator[TraceData]:
    index = _index(files, options, sink)
    pending: dict[str, TraceData] = {}
    spans = _Cursor(files, options, False, index, pending, sink, defer)
    logs = _Cursor(files, options, True, index, pending, sink)
    for trace_id in index.order:
        spans.read_through(index.last_span[trace_id])
        logs.read_through(index.last_log.get(trace_id, -1))
        trace = pending.pop(trace_id, None)
        if trace is not None and _has_spans(trace):  # None if a file changed between passes
            yield trace
    yield from (t for t in pending.values() if _has_spans(t))  # only if a line deviated


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
        self.units = (
            unit
            for number, path in enumerate(files)
            if number in only
            for unit in _file_units(path, options, sink, index.prints[number], True, defer)
            if unit.is_logs == is_logs
        )
        self.position, self.is_logs, self.pending = 0, is_logs, pending
        self.wanted = index.last_span

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

    def _defer(self, line: _Line) -> None:
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


def _open(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    if gzipped:
        return io.BufferedReader(cast(Any, gzip.GzipFile(path, "rb")), _BUFFER)
    return path.open("rb", buffering=_BUFFER)


def _file_units(
    path: Path,
    options: ReadOptions,
    sink: Payloads,
    prints: array[int],
    reading: bool,
    defer: bool = False,
) -> Iterator[Unit]:
    """The requests of one file, in file order; problems go to ``sink.errors``.

    Index pass (``reading`` False): a canonical line is not decoded, only its trace ids read
    (:func:`_predict`), and each line's fingerprint appended to ``prints``. Read pass: every
    request decoded, checked against ``prints``; only the lines that the index did not decode
    report their errors (again)."""
    source = str(path)
    quiet = Payloads() if reading else sink  # the index reported these errors
    try:
        with _open(path) as handle:
            head, first = _head(handle)
            if first is None:
                yield from _whole(b"".join(head) + handle.read(), source, options, quiet)
                return
            lines = enumerate(_chain(head, handle), start=1)
            if reading:
                yield from _read_lines(lines, first, source, options, sink, prints, defer)
            else:
                yield from _index_lines(lines, first, source, options, sink, prints)
    except (OSError, EOFError) as exc:
        quiet.errors.append(InputError(f"cannot read file: {exc}", source=source))


def _head(handle: IO[bytes]) -> tuple[list[bytes], Any]:
    """The lines up to the second non-blank one, and the first's JSON value when the file is
    line-oriented JSON (a JSON object or array on its first line, more lines after); else
    None, and the file is read whole."""
    head: list[bytes] = []
    non_blank = []
    for raw in handle:
        head.append(raw)
        if raw.strip():
            non_blank.append(raw)
            if len(non_blank) == 2:
                break
    if len(non_blank) < 2 or non_blank[0].lstrip()[:1] not in (b"{", b"["):
        return head, None
    try:
        return head, _loads(non_blank[0])
    except ValueError:
        return head, None


def _loads(line: bytes) -> Any:
    """``json.loads`` semantics, at ``orjson`` speed where the two agree."""
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return json.loads(line)


def _whole(data: bytes, source: str, options: ReadOptions, sink: Payloads) -> Iterator[Unit]:
    into = Payloads()
    read_bytes(data, source, options, into)
    yield from _flush(into, sink)


def _flush(into: Payloads, sink: Payloads) -> Iterator[Unit]:
    sink.errors.extend(into.errors)
    for key, kind in into.formats.items():  # as read_file: the first kind, unless OTLP
        if kind == "otlp-json":
            sink.formats[key] = kind
        else:
            sink.formats.setdefault(key, kind)
    for trace_request in into.traces:
        yield Unit(False, spans_from_request(trace_request))
    for logs_request in into.logs:
        yield Unit(True, logs_from_request(logs_request))


# --- line-oriented JSON: one request (or transcript) per line, numbered from 1 ---------------

_CANONICAL = re.compile(rb'\{"resource(Spans|Logs)":\[\{')
_TRACE_ID = re.compile(rb'"traceId":"([0-9a-f]{32}|)"')
_DECODED = -1
"""The fingerprint of a line the index decoded (``hash`` never returns -1)."""


def _predict(line: bytes) -> tuple[bool, list[str]] | None:
    """(is_logs, the trace ids :func:`_ids` keeps) of a request line in the exporters'
    canonical form, read from its bytes without decoding it; None for any other line.

    Canonical: ``{"resourceSpans":[{`` (or ``resourceLogs``) first, ``]}`` and a newline last,
    no links (they name other traces), and every ``traceId`` key holding lower-case hex (or
    nothing). In JSON an unescaped ``"traceId":"`` is always a key, never inside a string.
    """
    match = _CANONICAL.match(line)
    if match is None or line[-1:] != b"\n" or line.rstrip()[-2:] != b"]}":
        return None
    if b'"links"' in line and line.count(b'"links"') != line.count(b'"links":[]'):
        return None
    ids = _TRACE_ID.findall(line)
    if not ids or len(ids) != line.count(b'"traceId"'):
        return None
    is_logs = match[1] == b"Logs"
    return is_logs, [i.decode() for i in ids if i or not is_logs]


def _index_lines(
    lines: Iterator[tuple[int, bytes]],
    first: Any,
    source: str,
    options: ReadOptions,
    sink: Payloads,
    prints: array[int],
) -> Iterator[Unit]:
    """Index pass: the trace ids of canonical lines (their fingerprints into ``prints``, one
    per line), every other line decoded."""
    for line_no, line in lines:
        predicted = _predict(line) if line_no > 1 else None
        if predicted is None:
            prints.append(_DECODED)
            yield from _decoded(line, line_no, first, source, options, sink)
            continue
        is_logs, ids = predicted
        prints.append(hash(tuple(ids)))
        sink.formats[source] = "otlp-json"
        yield Unit(is_logs, [], ids)


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
        expected = prints[line_no - 1] if line_no <= len(prints) else _DECODED
        if expected == _DECODED:
            yield from _decoded(line, line_no, first, source, options, quiet)
            continue
        trace_id = _single_trace(line, expected) if defer else None
        if trace_id is not None:
            slot = len(sink.errors)
            yield Unit(
                False, [], raw=_Line(trace_id, line, line_no, source, options, slot, next(_SEQ))
            )
            continue
        is_logs = line[:17] == b'{"resourceLogs":['
        items: list[Any] = []
        for unit in _decoded(line, line_no, first, source, options, sink):
            if unit.is_logs == is_logs:
                items.extend(unit.items)
        yield Unit(is_logs, items, None, hash(tuple(_ids(is_logs, items))) != expected)


def _single_trace(line: bytes, expected: int) -> str | None:
    """The trace id of a predicted span line whose spans all have it, else None. The index
    checked the line's form; its fingerprint shows the ids are still those it read."""
    if line[:18] != b'{"resourceSpans":[':
        return None
    ids = [i.decode() for i in _TRACE_ID.findall(line)]  # what _predict keeps of a span line
    if hash(tuple(ids)) != expected:
        return None
    distinct = set(ids)
    distinct.discard("")
    return distinct.pop() if len(distinct) == 1 else None


def _decoded(
    line: bytes, line_no: int, first: Any, source: str, options: ReadOptions, sink: Payloads
) -> Iterator[Unit]:
    """The requests of one line (the first one's value is ``first``), decoded."""
    if not line.strip():
        return
    if line_no == 1:
        obj = first
    else:
        try:
            obj = _loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            sink.errors.append(OtlpDecodeError(f"invalid JSON: {exc}", source=source, line=line_no))
            return
    yield from _json_units(obj, source, line_no, options, sink)


def _chain(head: list[bytes], handle: IO[bytes]) -> Iterator[bytes]:
    yield from head
    yield from handle


def _json_units(
    obj: Any, source: str, line: int, options: ReadOptions, sink: Payloads
) -> Iterator[Unit]:
    kind = classify_json(obj, options.messages_key)
    try:
        if kind == "otlp-traces":
            unit = Unit(False, jsonfast.spans_from_json(obj))
        elif kind == "otlp-logs":
            unit = Unit(True, jsonfast.logs_from_json(obj))
        else:
            raise jsonfast.Unsupported
    except jsonfast.Unsupported:
        into = Payloads()
        read_json_value(obj, source, line, options, into)
        yield from _flush(into, sink)
        return
    sink.formats[source] = "otlp-json"
    yield unit
