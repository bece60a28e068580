"""Trace files as a stream of whole traces, in memory bounded by the traces open at once.

:func:`tracegrade.otlp.files.read_paths` holds every request of every file; a store export of
a million traces does not fit. :func:`iter_traces` reads the same files twice instead:

1. **index**: every request (one line of a Collector JSON file, or each request of a file that
   is read whole) is decoded and only the trace ids it holds are kept: for each trace, the
   last span request and the last log request that mention it, and the traces' first-seen
   order. Input errors and detected formats are recorded in this pass.
2. **assemble**: two cursors re-read the span requests and the log requests (a ``traces.*``
   file and its ``logs.*`` sibling in step); each trace is yielded, in first-seen order, as
   soon as both cursors passed its last request, and forgotten.

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
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, cast

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

__all__ = ["iter_traces"]

Unit = tuple[bool, list[Span] | list[LogRecord]]
"""One request's decoded items: (True, log records) or (False, spans)."""


def iter_traces(
    paths: Iterable[str | Path], options: ReadOptions | None = None, sink: Payloads | None = None
) -> Iterator[TraceData]:
    """Each trace of the files (spans and log records, as read), in first-seen order.

    Input errors and formats are added to ``sink`` (errors name file and line) before the
    first trace is yielded.

    Raises:
        InputError: a path does not exist (at once, not on iteration).
    """
    options = options or ReadOptions()
    files = expand_paths(paths, sibling_logs=options.sibling_logs)
    return _assemble(files, options, sink if sink is not None else Payloads())


@dataclass
class _Index:
    order: list[str] = field(default_factory=list)
    last_span: dict[str, int] = field(default_factory=dict)
    last_log: dict[str, int] = field(default_factory=dict)
    span_files: set[int] = field(default_factory=set)
    log_files: set[int] = field(default_factory=set)


def _index(files: list[Path], options: ReadOptions, sink: Payloads) -> _Index:
    index, counts = _Index(), [0, 0]
    for number, path in enumerate(files):
        for is_logs, items in _file_units(path, options, sink):
            position = counts[is_logs]
            counts[is_logs] += 1
            if is_logs:
                index.log_files.add(number)
                for record in items:
                    if record.trace_id:
                        index.last_log[record.trace_id] = position
                continue
            index.span_files.add(number)
            for span in items:
                trace_id = span.trace_id or ""
                if trace_id not in index.last_span:
                    index.order.append(trace_id)
                index.last_span[trace_id] = position
    return index


def _assemble(files: list[Path], options: ReadOptions, sink: Payloads) -> Iterator[TraceData]:
    index = _index(files, options, sink)
    pending: dict[str, TraceData] = {}
    spans = _Cursor(files, options, False, index.span_files, pending, index.last_span)
    logs = _Cursor(files, options, True, index.log_files, pending, index.last_span)
    for trace_id in index.order:
        spans.read_through(index.last_span[trace_id])
        logs.read_through(index.last_log.get(trace_id, -1))
        trace = pending.pop(trace_id, None)
        if trace is not None and trace.spans:  # None only if a file changed between passes
            yield trace


class _Cursor:
    """Reads one kind of request (spans or log records) in order, into ``pending``."""

    def __init__(
        self,
        files: list[Path],
        options: ReadOptions,
        is_logs: bool,
        only: set[int],
        pending: dict[str, TraceData],
        wanted: dict[str, int],
    ):
        self.units = (
            items
            for number, path in enumerate(files)
            if number in only
            for kind, items in _file_units(path, options, Payloads())
            if kind == is_logs
        )
        self.position, self.is_logs, self.pending, self.wanted = 0, is_logs, pending, wanted

    def read_through(self, last: int) -> None:
        """Read requests up to and including number ``last`` of this kind."""
        while self.position <= last:
            for item in next(self.units, ()):  # () only if a file shrank between passes
                trace_id = item.trace_id
                if trace_id and trace_id in self.wanted:
                    trace = self.pending.setdefault(trace_id, TraceData(trace_id))
                    (trace.logs if self.is_logs else trace.spans).append(item)  # type: ignore[arg-type]
            self.position += 1


# --- one file -------------------------------------------------------------------------------


def _open(path: Path) -> IO[bytes]:
    with path.open("rb") as probe:
        gzipped = probe.read(2) == GZIP_MAGIC
    return cast(IO[bytes], gzip.open(path, "rb")) if gzipped else path.open("rb")


def _file_units(path: Path, options: ReadOptions, sink: Payloads) -> Iterator[Unit]:
    """The requests of one file, decoded, in file order; problems go to ``sink.errors``."""
    source = str(path)
    try:
        with _open(path) as handle:
            head, first = _head(handle)
            if first is None:
                yield from _whole(b"".join(head) + handle.read(), source, options, sink)
                return
            yield from _lines(head, first, handle, source, options, sink)
    except (OSError, EOFError) as exc:
        sink.errors.append(InputError(f"cannot read file: {exc}", source=source))


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
        yield False, spans_from_request(trace_request)
    for logs_request in into.logs:
        yield True, logs_from_request(logs_request)


def _lines(
    head: list[bytes],
    first: Any,
    handle: IO[bytes],
    source: str,
    options: ReadOptions,
    sink: Payloads,
) -> Iterator[Unit]:
    """Line-oriented JSON: one request (or transcript) per line, numbered from 1."""
    parsed_first = False
    for line_no, line in enumerate(_chain(head, handle), start=1):
        if not line.strip():
            continue
        if not parsed_first:
            obj, parsed_first = first, True
        else:
            try:
                obj = _loads(line)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                sink.errors.append(
                    OtlpDecodeError(f"invalid JSON: {exc}", source=source, line=line_no)
                )
                continue
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
            unit: Unit = (False, jsonfast.spans_from_json(obj))
        elif kind == "otlp-logs":
            unit = (True, jsonfast.logs_from_json(obj))
        else:
            raise jsonfast.Unsupported
    except jsonfast.Unsupported:
        into = Payloads()
        read_json_value(obj, source, line, options, into)
        yield from _flush(into, sink)
        return
    sink.formats[source] = "otlp-json"
    yield unit
