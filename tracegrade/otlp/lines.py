"""One request per line (OTLP/JSON lines, as the Collector's file exporter writes them), as
:mod:`tracegrade.otlp.stream` reads a file: a line in the exporters' canonical form has its
trace ids read from its bytes, without decoding it (:func:`predict`); any line can be decoded
into its requests (:func:`decoded`). Lines are numbered from 1; the first line's JSON value
tells whether a file is line-oriented at all (:func:`head`).

A line left undecoded for a worker process is a :class:`Line`: its bytes, or where they are
in a file that did not change (:class:`At`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import IO, Any, NamedTuple

import orjson

from tracegrade.errors import OtlpDecodeError
from tracegrade.otlp import jsonfast
from tracegrade.otlp.codec import logs_from_request, spans_from_request
from tracegrade.otlp.files import Payloads, ReadOptions, classify_json, read_json_value
from tracegrade.spans import LogRecord, Span

__all__ = [
    "DECODED",
    "At",
    "Identity",
    "Line",
    "Unit",
    "chain",
    "decoded",
    "flush",
    "head",
    "ids_of",
    "loads",
    "predict",
    "single_trace",
]


class Unit(NamedTuple):
    """One request of a file: its spans (``is_logs`` False) or log records (True)."""

    is_logs: bool
    items: list[Span] | list[LogRecord]
    ids: list[str] | None = None
    """Index pass: the trace ids read from the raw line (``items`` then empty)."""
    deviated: bool = False
    """Read pass: the line's trace ids differ from those the index read from its bytes."""
    raw: Line | None = None
    """Read pass with ``defer``: the undecoded line of one trace (``items`` then empty)."""


Identity = tuple[int, int, int, int]
"""A plain file's device, inode, size (bytes) and modification time (ns)."""


class At(NamedTuple):
    """Where a line is in a plain file the read pass found unchanged since the index pass:
    the worker reads it there (``os.pread``), if the file is still that file (it may have
    grown: a Collector appends) and the line still looks like its trace's span line."""

    path: str
    offset: int
    length: int
    """Bytes, the newline included."""
    inode: tuple[int, int]
    """The file's device and inode at the index pass (a file rotated since is not read)."""


class Line(NamedTuple):
    """A canonical span line of one trace, left undecoded by the read pass: its bytes, or
    where they are."""

    trace_id: str
    line: bytes | At
    line_no: int
    source: str
    options: ReadOptions
    slot: int
    """How many input errors the read pass had met when it reached this line."""
    seq: int
    """The line's place among the deferred lines, in read order."""


DECODED = -1
"""The fingerprint of a line the index decoded (``hash`` never returns -1)."""


_CANONICAL = re.compile(rb'\{"resource(Spans|Logs)":\[\{')
_TRACE_ID = re.compile(rb'"traceId":"([0-9a-f]{32}|)"')
_TRACE_ID_KEY = re.compile(rb'"traceId"(:"[0-9a-f]{32}"|:"")?')
"""Every ``traceId`` key, with its value when canonical (else ``b""``)."""


def predict(line: bytes) -> tuple[bool, list[str]] | None:
    """(is_logs, the trace ids :func:`ids_of` keeps) of a request line in the exporters'
    canonical form, read from its bytes without decoding it; None for any other line.

    Canonical: ``{"resourceSpans":[{`` (or ``resourceLogs``) first, ``]}`` and a newline last,
    every ``traceId`` key holding lower-case hex (or nothing), and no links to other traces
    (looked for only when the line names several: a link's ``traceId`` is not a span's).
    In JSON an unescaped ``"traceId":"`` is always a key, never inside a string.
    """
    match = _CANONICAL.match(line)
    if match is None or line[-1:] != b"\n":
        return None
    if not line.endswith(b"]}\n") and line.rstrip()[-2:] != b"]}":  # rstrip copies the line
        return None
    keys = _TRACE_ID_KEY.findall(line)  # the line's one full scan, when it names one trace
    if not keys or not all(keys):
        return None
    if len(set(keys) - {b':""'}) > 1 and _links(line):
        return None
    is_logs = match[1] == b"Logs"
    ids = {key: key[2:-1].decode() for key in dict.fromkeys(keys)}  # mostly one
    return is_logs, [ids[key] for key in keys if len(key) > 3 or not is_logs]


def _links(line: bytes) -> bool:
    """Whether the line has a span link (``"links"`` not holding ``[]``)."""
    return b'"links"' in line and line.count(b'"links"') != line.count(b'"links":[]')


def single_trace(line: bytes, expected: int) -> str | None:
    """The trace id of a predicted span line whose spans all have it, else None. The index
    checked the line's form; its fingerprint shows the ids are still those it read."""
    if line[:18] != b'{"resourceSpans":[':
        return None
    ids = [i.decode() for i in _TRACE_ID.findall(line)]  # what predict keeps of a span line
    if hash(tuple(ids)) != expected:
        return None
    distinct = set(ids)
    distinct.discard("")
    return distinct.pop() if len(distinct) == 1 else None


def ids_of(is_logs: bool, items: list[Span] | list[LogRecord]) -> list[str]:
    """The trace ids the index keeps of a request's items: every span's ('' if none), and
    the log records' that have one."""
    if is_logs:
        return [record.trace_id for record in items if record.trace_id]
    return [span.trace_id or "" for span in items]


def head(handle: IO[bytes]) -> tuple[list[bytes], Any]:
    """The lines up to the second non-blank one, and the first's JSON value when the file is
    line-oriented JSON (a JSON object or array on its first line, more lines after); else
    None, and the file is read whole."""
    lines: list[bytes] = []
    non_blank = []
    for raw in handle:
        lines.append(raw)
        if raw.strip():
            non_blank.append(raw)
            if len(non_blank) == 2:
                break
    if len(non_blank) < 2 or non_blank[0].lstrip()[:1] not in (b"{", b"["):
        return lines, None
    try:
        return lines, loads(non_blank[0])
    except ValueError:
        return lines, None


def chain(head: list[bytes], handle: IO[bytes]) -> Iterator[bytes]:
    """The lines of a file :func:`head` started reading."""
    yield from head
    yield from handle


def loads(line: bytes) -> Any:
    """``json.loads`` semantics, at ``orjson`` speed where the two agree.

    Raises:
        json.JSONDecodeError: not JSON, or nested past the parsers' depth (orjson's 1,024
            levels; ``json`` would raise ``RecursionError`` near Python's limit).
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        try:
            return json.loads(line)
        except RecursionError:
            raise json.JSONDecodeError("nested too deeply to read", "", 0) from None


def decoded(
    line: bytes, line_no: int, first: Any, source: str, options: ReadOptions, sink: Payloads
) -> Iterator[Unit]:
    """The requests of one line (the first one's value is ``first``), decoded."""
    if not line.strip():
        return
    if line_no == 1:
        obj = first
    else:
        try:
            obj = loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            sink.errors.append(OtlpDecodeError(f"invalid JSON: {exc}", source=source, line=line_no))
            return
    try:
        units = list(_json_units(obj, source, line_no, options, sink))
    except RecursionError:
        why = "nested too deeply to read"
        sink.errors.append(OtlpDecodeError(why, source=source, line=line_no))
        return
    yield from units


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
        yield from flush(into, sink)
        return
    sink.formats[source] = "otlp-json"
    yield unit


def flush(into: Payloads, sink: Payloads) -> Iterator[Unit]:
    """The requests ``into`` holds (a file or line read by :mod:`tracegrade.otlp.files`);
    its errors and formats added to ``sink``."""
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
