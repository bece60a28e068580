"""Trace files: read any supported format into OTLP requests, and write Collector files.

Supported inputs (detected from the content, not the file name; gzip and zstd are detected
by their magic bytes, :func:`compression_of`):

- **OpenTelemetry Collector file exporter, JSON** (``format: json``): one OTLP/JSON
  ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest`` per line (``.jsonl``), or one
  request in a whole JSON document.
- **OTLP protobuf**: one binary request (``.binpb``/``.pb``), or a stream of requests each
  prefixed by a 4-byte big-endian length (the Collector's ``format: proto``) or by a varint
  length (protobuf's delimited format).
- **Chat transcripts**: a JSON list or JSONL of conversations in the OpenAI message format, the
  message list under ``messages_key`` (see :mod:`tracegrade.otlp.transcripts`).
- **any-agent traces**: a JSON document ``{"spans": [...]}`` as written by mozilla-ai/any-agent
  (see :mod:`tracegrade.otlp.anyagent`).

Compressed files: gzip (one or more members), and zstd as the Collector's file exporter writes
it (``compression: zstd``): each export a zstd frame after its 4-byte big-endian length, or,
with its native compression, one zstd stream of the uncompressed format. Both expand at most
:func:`gzip_limit` bytes (a decompression bomb is refused before it is held), and at most
:data:`MAX_OBJECTS_PER_MIB` JSON objects per decoded MiB and
:data:`OBJECTS_PER_COMPRESSED_BYTE` per byte of the file (:class:`ObjectBudget`; the work of
reading is per object, so a few KiB of ``{},`` repeated would otherwise take minutes).

Everything becomes OTLP requests (``ExportTraceServiceRequest``/``ExportLogsServiceRequest``),
so the store keeps one lossless form whatever the source. A bad line is reported as an
:class:`~tracegrade.errors.InputError` naming the file and line; the other lines still load.
"""

from __future__ import annotations

import gzip
import io
import json
import re
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, TextIO

import zstandard

from tracegrade.errors import InputError, OtlpDecodeError
from tracegrade.otlp import anyagent, transcripts
from tracegrade.otlp.codec import (
    ExportLogsServiceRequest,
    ExportTraceServiceRequest,
    logs_from_request,
    parse_logs_json,
    parse_logs_protobuf,
    parse_traces_json,
    parse_traces_protobuf,
    request_to_json,
    spans_from_request,
)
from tracegrade.spans import LogRecord, Span

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
TRACE_FILE_SUFFIXES = tuple(
    base + packed
    for base in (".jsonl", ".json", ".binpb", ".pb")
    for packed in ("", ".gz", ".zst", ".zstd")
)

Request = ExportTraceServiceRequest | ExportLogsServiceRequest


@dataclass
class Payloads:
    """OTLP requests read from one or more files, plus the per-line errors met on the way.

    ``formats`` maps each file read to the format detected (``otlp-json``, ``otlp-protobuf``,
    ``transcript``, ``any-agent``).
    """

    traces: list[ExportTraceServiceRequest] = field(default_factory=list)
    logs: list[ExportLogsServiceRequest] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    formats: dict[str, str] = field(default_factory=dict)

    def add(self, request: Request) -> None:
        """Append a trace or logs request to the matching list."""
        if isinstance(request, ExportLogsServiceRequest):
            self.logs.append(request)
        else:
            self.traces.append(request)

    def extend(self, other: Payloads) -> None:
        """Merge another :class:`Payloads` into this one."""
        self.traces.extend(other.traces)
        self.logs.extend(other.logs)
        self.errors.extend(other.errors)
        self.formats.update(other.formats)

    def spans(self) -> list[Span]:
        """Every span of every trace request, decoded."""
        return [span for request in self.traces for span in spans_from_request(request)]

    def log_records(self) -> list[LogRecord]:
        """Every log record of every logs request, decoded."""
        return [record for request in self.logs for record in logs_from_request(request)]


@dataclass(frozen=True)
class ReadOptions:
    """How to read files: ``messages_key`` names the transcript message list (default
    ``messages``); ``sibling_logs`` also reads ``logs.*`` beside a ``traces.*`` file."""

    messages_key: str = "messages"
    sibling_logs: bool = True


# --- reading --------------------------------------------------------------------------------


def read_paths(paths: Iterable[str | Path], options: ReadOptions = ReadOptions()) -> Payloads:
    """Read files and directories (their trace files, sorted) into one :class:`Payloads`.

    Raises:
        InputError: a path does not exist.
    """
    result = Payloads()
    for path in expand_paths(paths, sibling_logs=options.sibling_logs):
        result.extend(read_file(path, options))
    return result


def expand_paths(paths: Iterable[str | Path], *, sibling_logs: bool = True) -> list[Path]:
    """Files to read for ``paths``: directories expand to their trace files; a ``traces.*``
    file brings its ``logs.*`` sibling when one exists. Each file appears once.

    Raises:
        InputError: a path does not exist.
    """
    out: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            out.extend(
                p
                for p in sorted(path.iterdir())
                if p.is_file() and p.name.endswith(TRACE_FILE_SUFFIXES)
            )
        elif path.is_file():
            if (kind := golden_dataset_kind(path)) is not None:
                raise InputError(
                    f"{kind}, not a trace file: give it with --dataset (a trace file is OTLP, "
                    "a transcript or an any-agent trace)",
                    source=str(path),
                )
            out.append(path)
            if sibling_logs:
                out.extend(_sibling_logs(path))
        else:
            raise InputError("no such file or directory", source=str(path))
    unique: dict[Path, Path] = {}  # resolved -> first path given for it
    for path in out:
        unique.setdefault(path.resolve(), path)
    return list(unique.values())


_DATASET_HEAD_BYTES = 64 * 1024
_YAML_CASES = re.compile(rb"^cases:[ \t]*(?:#.*)?$", re.M)
_CASE_KEYS = ("input", "expected_tools", "expected_tool_calls", "must_contain", "expectedOutput")


def _is_case(obj: Any) -> bool:
    """A golden case's shape: no trace's keys, and an input (or user turns as text) or an
    expectation."""
    if not isinstance(obj, dict) or classify_json(obj) != "unknown":
        return False
    turns = obj.get("turns")
    return any(key in obj for key in _CASE_KEYS) or (
        isinstance(turns, list) and bool(turns) and all(isinstance(t, str) for t in turns)
    )


def golden_dataset_kind(path: Path) -> str | None:
    """What a golden dataset file given where a trace file belongs is ("a golden dataset
    (YAML)", "(JSON)", "(JSON lines)"), from its first 64 KiB; None for anything else (a
    trace file, or a file that is neither, whose lines then report their own errors). A
    dataset is YAML with a top-level ``cases:``, or JSON cases: an object with a ``cases``
    list, a list of cases, or a case per line (a case has an ``input``, user ``turns`` as text,
    expected tools or phrases, and none of a trace's keys)."""
    try:
        with path.open("rb") as handle:
            head = handle.read(_DATASET_HEAD_BYTES)
    except OSError:
        return None
    if compression_of(head[:8]) is not None or not is_text(head[:4096]):
        return None
    start = head.lstrip()[:1]
    if start not in (b"{", b"["):
        return "a golden dataset (YAML)" if _YAML_CASES.search(head) else None
    first_line = head.lstrip().split(b"\n", 1)[0]
    try:
        first = json.loads(first_line)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        first = None
    if first is not None and _is_case(first) and b"\n" in head.strip():
        return "a golden dataset (JSON lines)"
    try:
        document = json.loads(head) if len(head) < _DATASET_HEAD_BYTES else first
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        return None
    cases = document.get("cases") if isinstance(document, dict) else None
    if isinstance(cases, list) and cases and _is_case(cases[0]):  # not a run document's cases
        return "a golden dataset (JSON)"
    if isinstance(document, list) and document and all(_is_case(c) for c in document[:3]):
        return "a golden dataset (JSON)"
    return None


_TRACE_KINDS = {
    "otlp-traces": "an OTLP/JSON trace file",
    "otlp-logs": "an OTLP/JSON log file",
    "any-agent": "an any-agent trace file",
    "transcript": "a transcript file",
}


_OTLP_KEYS = {
    b"resourceSpans": "otlp-traces",
    b"resource_spans": "otlp-traces",
    b"resourceLogs": "otlp-logs",
    b"resource_logs": "otlp-logs",
}
_OTLP_OPENING = re.compile(rb'\{\s*"(resourceSpans|resource_spans|resourceLogs|resource_logs)"')


def trace_file_kind(data: bytes) -> str | None:
    """What a trace file given where a golden dataset belongs is ("an OTLP/JSON trace file",
    "a gzip-compressed file", "an OTLP protobuf file", ...), from its first bytes; None when it
    does not look like one (a dataset, or anything else)."""
    compression = compression_of(data[:8])
    if compression is not None:
        return f"a {compression.split('-')[0]}-compressed file"
    if data and not is_text(data[:4096]):
        return "an OTLP protobuf file"
    first_line = data.lstrip()[:_DATASET_HEAD_BYTES].split(b"\n", 1)[0]
    if first_line[:1] != b"{":
        return None
    try:
        first = json.loads(first_line)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):  # a long first line
        opening = _OTLP_OPENING.match(first_line)
        return None if opening is None else _TRACE_KINDS[_OTLP_KEYS[opening.group(1)]]
    return _TRACE_KINDS.get(classify_json(first))


def _sibling_logs(path: Path) -> list[Path]:
    if "traces" not in path.name:
        return []
    candidate = path.with_name(path.name.replace("traces", "logs", 1))
    return [candidate] if candidate.is_file() else []


def read_file(path: str | Path, options: ReadOptions = ReadOptions()) -> Payloads:
    """Read one file in any supported format (see the module docstring).

    Per-line problems are collected in ``Payloads.errors``; the rest of the file still loads.
    """
    path = Path(path)
    source = str(path)
    result = Payloads()
    try:
        data = path.read_bytes()
        kind = compression_of(data[:8])
        if kind == "gzip":
            data = gunzip(data)
        elif kind is not None:
            data = unzstd(data, records=kind == "zstd-records")
    except (OSError, EOFError) as exc:
        result.errors.append(InputError(f"cannot read file: {exc}", source=source))
        return result
    read_bytes(data, source, options, result)
    return result


MAX_GZIP_RATIO = 100
"""A gzip file may expand to this many times its size (past :data:`GZIP_FLOOR_BYTES`):
trace files compress 5-30x, a "zip bomb" ~1,000x (a 1 MiB file of 1 GB took ``import``
to 2.1 GB)."""
GZIP_FLOOR_BYTES = 64 * 2**20
"""Any gzip file may expand to this many bytes, whatever its ratio."""


class GzipBombError(OSError):
    """A gzip file expands past :func:`gzip_limit`; reported as an unreadable file."""


class ZstdBombError(OSError):
    """A zstd file expands past :func:`gzip_limit`; reported as an unreadable file."""


MAX_OBJECTS_PER_MIB = 65_536
"""Most JSON objects (counted as ``{`` bytes, an upper bound) a decompressed file may hold per
MiB it decodes to, averaged over what it has decoded so far (its first MiB counts as a whole
MiB). Real OTLP/JSON holds one per 44-90 bytes (12,000-24,000 per MiB); a file of empty
resources (``{},``) one per 3 bytes: 5 KiB of zstd decoded to 60 MiB of them took ``import``
105 s and 4.4 GB."""


class ObjectBombError(OSError):
    """A compressed file decodes to more than :data:`MAX_OBJECTS_PER_MIB` JSON objects per MiB;
    reported as an unreadable file."""


OBJECTS_PER_COMPRESSED_BYTE = 16
"""Most JSON objects a compressed file may decode to per byte of its own (past
:data:`OBJECT_FLOOR`): trace files hold 0.4-1.4 per byte even at zstd's level 19."""
OBJECT_FLOOR = 2**18
"""JSON objects any compressed file may decode to, whatever its size (reading them takes a
few seconds)."""


class ObjectBudget:
    """Counts the JSON objects (``{`` bytes) in the decoded chunks of a file of
    ``compressed_bytes`` and refuses past :data:`MAX_OBJECTS_PER_MIB` of what is decoded, or
    past :data:`OBJECTS_PER_COMPRESSED_BYTE` of the file (at least :data:`OBJECT_FLOOR`).
    ``kind`` (e.g. ``"zstd"``) names the compression in the error."""

    def __init__(self, kind: str, compressed_bytes: int):
        self.kind = kind
        self.total = max(OBJECT_FLOOR, OBJECTS_PER_COMPRESSED_BYTE * compressed_bytes)
        self.decoded = 0
        self.objects = 0

    def add(self, chunk: bytes | memoryview) -> None:
        """Count ``chunk``; raises :class:`ObjectBombError` past either bound."""
        self.decoded += len(chunk)
        self.objects += bytes(chunk).count(b"{")
        if self.objects > MAX_OBJECTS_PER_MIB * max(self.decoded, 2**20) // 2**20:
            raise self._refused(f"more than {MAX_OBJECTS_PER_MIB:,} JSON objects per MiB")
        if self.objects > self.total:
            raise self._refused(
                f"more than {self.total:,} JSON objects ({OBJECTS_PER_COMPRESSED_BYTE} per "
                "compressed byte)"
            )

    def _refused(self, bound: str) -> ObjectBombError:
        return ObjectBombError(
            f"{self.kind} data decodes to {bound} ({self.objects:,} in its first "
            f"{self.decoded:,} bytes; trace files hold about 20,000 per MiB, 1 per compressed "
            "byte): refused as an amplification attack"
        )


def gzip_limit(compressed_bytes: int) -> int:
    """Most bytes a gzip file of ``compressed_bytes`` may expand to (see
    :data:`MAX_GZIP_RATIO`)."""
    return max(GZIP_FLOOR_BYTES, MAX_GZIP_RATIO * compressed_bytes)


def _bomb(compressed_bytes: int, kind: str = "gzip") -> OSError:
    error = GzipBombError if kind == "gzip" else ZstdBombError
    return error(
        f"{kind} data expands past {gzip_limit(compressed_bytes):,} bytes ({MAX_GZIP_RATIO}x "
        "its size): refused as a decompression bomb; decompress it yourself to read it"
    )


def compression_of(head: bytes) -> Literal["gzip", "zstd", "zstd-records"] | None:
    """How a file starting with ``head`` (its first 8 bytes) is compressed: ``gzip``, ``zstd``
    (one stream), ``zstd-records`` (the Collector's file exporter: each export a zstd frame
    after its 4-byte length), or None."""
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    if head[4:8] == ZSTD_MAGIC:
        return "zstd-records"
    return None


def gunzip(data: bytes) -> bytes:
    """Decompress gzip ``data`` (one or more members), at most :func:`gzip_limit` bytes.

    Raises:
        GzipBombError: it expands past the limit (nothing past it is held).
        OSError, EOFError: corrupt or truncated (as ``gzip.decompress``).
    """
    limit = gzip_limit(len(data))
    with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
        out = stream.read(limit + 1)
    if len(out) > limit:
        raise _bomb(len(data))
    ObjectBudget("gzip", len(data)).add(out)
    return out


class BoundedGzip(io.RawIOBase):
    """A gzip file's decompressed bytes for streaming readers, refusing to expand past
    :func:`gzip_limit` of the file's size (:class:`GzipBombError`, an ``OSError``)."""

    def __init__(self, path: Path):
        self._compressed = path.stat().st_size
        self._limit = gzip_limit(self._compressed)
        self._stream = gzip.GzipFile(path, "rb")
        self._read = 0
        self._objects = ObjectBudget("gzip", self._compressed)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        size = self._stream.readinto(buffer)
        self._read += size
        if self._read > self._limit:
            raise _bomb(self._compressed)
        self._objects.add(memoryview(buffer)[:size])
        return size

    def close(self) -> None:
        self._stream.close()
        super().close()


_ZSTD_WINDOW = 2**27
"""Largest zstd window accepted (bytes): what libzstd allows by default, named."""


class BoundedZstd(io.RawIOBase):
    """The decompressed bytes of a zstd stream (every frame of it), refusing to expand past
    ``limit`` bytes, by default :func:`gzip_limit` of ``compressed_bytes`` (the file's size:
    :class:`ZstdBombError`, an ``OSError``), and past :data:`MAX_OBJECTS_PER_MIB` counted in
    ``objects`` (shared by the frames of one file; :class:`ObjectBombError`)."""

    def __init__(
        self,
        source: IO[bytes],
        compressed_bytes: int,
        limit: int | None = None,
        objects: ObjectBudget | None = None,
    ):
        self._source = source
        self._objects = ObjectBudget("zstd", compressed_bytes) if objects is None else objects
        self._compressed = compressed_bytes
        self._limit = gzip_limit(compressed_bytes) if limit is None else limit
        decompressor = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW)
        self._stream = decompressor.stream_reader(source, read_across_frames=True)
        self._read = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        try:
            size = int(self._stream.readinto(buffer))
        except zstandard.ZstdError as exc:
            raise OSError(f"corrupt zstd data: {exc}") from exc
        self._read += size
        if self._read > self._limit:
            raise _bomb(self._compressed, "zstd")
        self._objects.add(memoryview(buffer)[:size])
        return size

    def close(self) -> None:
        self._stream.close()
        self._source.close()
        super().close()


class ZstdRecords(io.RawIOBase):
    """The Collector file exporter's ``compression: zstd`` output read back uncompressed: each
    record (a 4-byte big-endian length, then a zstd frame of one export) becomes a line of
    OTLP/JSON, or a 4-byte-length-prefixed protobuf message (``format: proto``). Expands at
    most :func:`gzip_limit` of ``compressed_bytes`` in all (:class:`ZstdBombError`).

    Raises (when read):
        OSError: a truncated record or a corrupt frame; ZstdBombError.
    """

    def __init__(self, source: IO[bytes], compressed_bytes: int):
        self._source = source
        self._compressed = compressed_bytes
        self._budget = gzip_limit(compressed_bytes)
        self._objects = ObjectBudget("zstd", compressed_bytes)
        self._pending = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._pending:
            record = self._next_record()
            if record is None:
                return 0
            self._pending = memoryview(record)
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size

    def _next_record(self) -> bytes | None:
        head = self._source.read(4)
        if not head:
            return None
        length = struct.unpack(">I", head)[0] if len(head) == 4 else -1
        frame = self._source.read(max(length, 0))
        if length < 0 or len(frame) < length:
            raise OSError("truncated zstd record (the file ends inside one)")
        with BoundedZstd(
            io.BytesIO(frame), self._compressed, self._budget, self._objects
        ) as stream:
            data = stream.readall()
        self._budget -= len(data)
        if data.lstrip()[:1] in (b"{", b"["):
            return data.rstrip(b"\n") + b"\n"
        return struct.pack(">I", len(data)) + data

    def close(self) -> None:
        self._source.close()
        super().close()


def unzstd(data: bytes, *, records: bool = False) -> bytes:
    """Decompress zstd ``data``: one stream of frames, or with ``records`` the Collector's
    length-prefixed frames (:class:`ZstdRecords`); at most :func:`gzip_limit` bytes.

    Raises:
        ZstdBombError: it expands past the limit (nothing past it is held).
        OSError: corrupt or truncated.
    """
    kind = ZstdRecords if records else BoundedZstd
    with io.BufferedReader(kind(io.BytesIO(data), len(data))) as stream:
        return stream.read()


def read_bytes(data: bytes, source: str, options: ReadOptions, into: Payloads) -> None:
    """Detect the format of ``data`` (already decompressed) and add its requests to ``into``."""
    head = data.lstrip()[:1]
    if head in (b"{", b"["):
        _read_json_text(data, source, options, into)
    elif not data.strip():
        into.formats[source] = "empty"
    elif is_text(data):
        into.formats[source] = "text"
        _read_json_lines(data, source, options, into, max_errors=MAX_TEXT_ERRORS)
    else:
        into.formats[source] = "otlp-protobuf"
        _read_protobuf(data, source, into)


_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0e-\x1f\x7f]")
MAX_TEXT_ERRORS = 10
"""A text file that is not JSON reports its first this many bad lines, then one summary."""


def is_text(data: bytes) -> bool:
    """True when ``data`` is UTF-8 text without control characters (other than tab, newline,
    carriage return and form feed). OTLP protobuf never is: its span and trace ids are random
    bytes, and its field tags and lengths are control characters."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return _CONTROL.search(data) is None


def _read_json_text(data: bytes, source: str, options: ReadOptions, into: Payloads) -> None:
    try:
        document = json.loads(data)
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
        document = None
    if document is not None:
        _read_json_document(document, source, options, into)
        return
    _read_json_lines(data, source, options, into)


def _read_json_lines(
    data: bytes, source: str, options: ReadOptions, into: Payloads, max_errors: int | None = None
) -> None:
    """One JSON value per line; a line that is not JSON is an error naming it. With
    ``max_errors``, stop reporting after that many bad lines and count the rest."""
    bad = 0
    for line_no, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = _loads_line(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            bad += 1
            if max_errors is None or bad <= max_errors:
                reason = f"{'text line, not JSON' if max_errors else 'invalid JSON'}: {exc}"
                into.errors.append(OtlpDecodeError(reason, source=source, line=line_no))
            continue
        try:
            _read_json_object(obj, source, line_no, options, into)
        except RecursionError:
            why = "nested too deeply to read"
            into.errors.append(OtlpDecodeError(why, source=source, line=line_no))
    if max_errors is not None and bad > max_errors:
        into.errors.append(
            OtlpDecodeError(
                f"{bad - max_errors} more line(s) that are not JSON: this is a text file, not "
                "OTLP/JSON lines, a transcript or OTLP protobuf",
                source=source,
            )
        )


def _loads_line(line: bytes) -> Any:
    """One line's JSON value.

    Raises:
        json.JSONDecodeError: not JSON, or nested too deeply for the parser.
    """
    try:
        return json.loads(line)
    except RecursionError:
        raise json.JSONDecodeError("nested too deeply to read", "", 0) from None


def _read_json_document(document: Any, source: str, options: ReadOptions, into: Payloads) -> None:
    if isinstance(document, list):
        into.formats[source] = "transcript"
        for index, record in enumerate(document, start=1):
            _add_transcript(record, source, options, into, index=index, line=None)
    else:
        _read_json_object(document, source, None, options, into)


def _read_json_object(
    obj: Any, source: str, line: int | None, options: ReadOptions, into: Payloads
) -> None:
    kind = classify_json(obj, options.messages_key)
    into.formats.setdefault(source, kind)
    try:
        if kind == "otlp-traces":
            into.add(parse_traces_json(obj))
            into.formats[source] = "otlp-json"
        elif kind == "otlp-logs":
            into.add(parse_logs_json(obj))
            into.formats[source] = "otlp-json"
        elif kind == "any-agent":
            into.add(anyagent.to_request(obj, source=source))
        elif kind == "transcript":
            _add_transcript(obj, source, options, into, index=line or 1, line=line)
        else:
            raise InputError(
                "not an OTLP request (no resourceSpans/resourceLogs), an any-agent trace "
                f"(no spans) or a transcript (no {options.messages_key!r} list); "
                "pass --messages-key for transcripts that keep messages elsewhere"
            )
    except InputError as exc:
        into.errors.append(type(exc)(exc.detail, source=source, line=line))


def read_json_value(
    obj: Any, source: str, line: int | None, options: ReadOptions, into: Payloads
) -> None:
    """Add the requests of one loaded JSON value (a line, or a whole document when ``line``
    is None) to ``into``; a problem becomes an error naming ``source`` and ``line``."""
    if line is None:
        _read_json_document(obj, source, options, into)
    else:
        _read_json_object(obj, source, line, options, into)


def classify_json(obj: Any, messages_key: str = "messages") -> str:
    """The kind of one JSON object: ``otlp-traces``, ``otlp-logs``, ``any-agent``,
    ``transcript`` or ``unknown``."""
    if isinstance(obj, list):
        return "transcript"
    if not isinstance(obj, dict):
        return "unknown"
    if "resourceSpans" in obj or "resource_spans" in obj:
        return "otlp-traces"
    if "resourceLogs" in obj or "resource_logs" in obj:
        return "otlp-logs"
    if isinstance(obj.get("spans"), list) and not isinstance(obj.get(messages_key), list):
        return "any-agent"
    if isinstance(obj.get(messages_key), list):
        return "transcript"
    return "unknown"


def _add_transcript(
    record: Any, source: str, options: ReadOptions, into: Payloads, *, index: int, line: int | None
) -> None:
    """Convert one transcript record; an error names the line (JSONL) or the record number."""
    try:
        into.add(
            transcripts.to_request(
                record, messages_key=options.messages_key, source=source, index=index
            )
        )
    except InputError as exc:
        detail = exc.detail if line is not None else f"record {index}: {exc.detail}"
        into.errors.append(type(exc)(detail, source=source, line=line))


# --- protobuf files -------------------------------------------------------------------------


def split_protobuf_stream(data: bytes) -> list[bytes]:
    """Candidate framings of a protobuf file, as frames: 4-byte big-endian length prefixes
    (the Collector's ``format: proto``), then varint prefixes (protobuf's delimited format).
    A framing counts only if its lengths tile the file exactly; without one, the file is one
    message."""
    for splitter in (_split_fixed32, _split_varint):
        frames = splitter(data)
        if frames is not None:
            return frames
    return [data]


def _split_fixed32(data: bytes) -> list[bytes] | None:
    frames, pos = [], 0
    while pos < len(data):
        if pos + 4 > len(data):
            return None
        (size,) = struct.unpack(">I", data[pos : pos + 4])
        if size == 0 or pos + 4 + size > len(data):
            return None
        frames.append(data[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return frames or None


def _split_varint(data: bytes) -> list[bytes] | None:
    frames, pos = [], 0
    while pos < len(data):
        size, shift = 0, 0
        while True:
            if pos >= len(data) or shift > 35:
                return None
            byte = data[pos]
            pos += 1
            size |= (byte & 0x7F) << shift
            shift += 7
            if not byte & 0x80:
                break
        if size == 0 or pos + size > len(data):
            return None
        frames.append(data[pos : pos + size])
        pos += size
    return frames or None


def _read_protobuf(data: bytes, source: str, into: Payloads) -> None:
    """One message if the whole file parses as one with content; else the first framing
    whose every frame does; else the error of the single-message parse."""
    prefer_logs = "log" in Path(source).name.lower()
    try:
        into.add(_parse_protobuf_frame(data, prefer_logs))
        return
    except OtlpDecodeError as exc:
        single_error = exc
    for splitter in (_split_fixed32, _split_varint):
        frames = splitter(data)
        if not frames:
            continue
        try:
            requests = [_parse_protobuf_frame(frame, prefer_logs) for frame in frames]
        except OtlpDecodeError:
            continue
        for request in requests:
            into.add(request)
        return
    into.errors.append(OtlpDecodeError(single_error.detail, source=source))


def _has_spans(request: ExportTraceServiceRequest) -> bool:
    return any(
        len(s.span_id) == 8 and len(s.trace_id) == 16
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    )


def _has_log_records(request: ExportLogsServiceRequest) -> bool:
    return any(
        r.time_unix_nano or r.observed_time_unix_nano
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    )


def _parse_protobuf_frame(frame: bytes, prefer_logs: bool) -> Request:
    """Parse a frame as traces or logs. The two share field numbers, so a frame counts as
    traces when its spans carry valid ids, as logs when its records carry timestamps.

    Raises:
        OtlpDecodeError: the frame is not valid protobuf, or holds neither.
    """
    parsers: list[tuple[Callable[[bytes], Request], Callable[[Any], bool]]] = [
        (parse_logs_protobuf, _has_log_records),
        (parse_traces_protobuf, _has_spans),
    ]
    for parse, meaningful in parsers if prefer_logs else parsers[::-1]:
        try:
            request = parse(frame)
        except OtlpDecodeError:
            continue
        if meaningful(request):
            return request
    if not frame:
        raise OtlpDecodeError("empty protobuf message")
    parse_traces_protobuf(frame)  # raises the protocol's own error if the bytes are invalid
    raise OtlpDecodeError("protobuf message holds neither spans with valid ids nor log records")


# --- writing --------------------------------------------------------------------------------


def _open_text(path: Path, mode: Literal["at", "wt"]) -> TextIO:
    """``path`` opened for writing text (UTF-8), gzip-compressed when it ends in ``.gz``,
    zstd-compressed (one stream) when it ends in ``.zst``."""
    if path.suffix in (".zst", ".zstd"):
        text: TextIO = zstandard.open(path, mode, encoding="utf-8")
        return text
    if path.suffix == ".gz":
        return gzip.open(path, mode, encoding="utf-8")
    return open(path, mode, encoding="utf-8")


def write_jsonl(path: str | Path, requests: Sequence[Request], *, append: bool = False) -> int:
    """Write requests in the Collector file exporter JSON format: one OTLP/JSON request per
    line. A path ending in ``.gz`` is gzip-compressed, ``.zst`` zstd-compressed. Returns the
    number of lines written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with _open_text(path, "at" if append else "wt") as out:
        for request in requests:
            out.write(
                json.dumps(request_to_json(request), separators=(",", ":"), ensure_ascii=False)
            )
            out.write("\n")
    return len(requests)


def write_protobuf(path: str | Path, requests: Sequence[Request], *, append: bool = False) -> int:
    """Write (or ``append``) requests as the Collector's ``format: proto``: each message
    prefixed by its 4-byte big-endian length. Returns the number of messages written."""
    buffer = io.BytesIO()
    for request in requests:
        payload = request.SerializeToString()
        buffer.write(struct.pack(">I", len(payload)))
        buffer.write(payload)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with Path(path).open("ab" if append else "wb") as out:
        out.write(buffer.getvalue())
    return len(requests)
