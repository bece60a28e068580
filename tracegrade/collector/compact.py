"""Empty top-level entries dropped from an OTLP protobuf request before it is decoded.

An ``Export*ServiceRequest`` is a list of ``Resource*`` entries (field 1). An empty entry is
two bytes on the wire (``0a 00``) but a whole message once decoded (~64 bytes and a Python
object to walk), so 16 MB of them decoded to 6 GB and took minutes. They carry nothing, so
they are cut out here, from the bytes: runs of them are skipped by one regular-expression
match (C speed) and the other entries are stepped over by their length prefix without being
decoded, so the work is one step per non-empty entry (at most :data:`MAX_ENTRIES`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_EMPTY_RUN = re.compile(rb"(?:\x0a\x00)++")  # possessive: no backtracking state


MAX_ENTRIES = 100_000
"""Most non-empty top-level entries (resources) in one request: a real exporter sends one
per resource, a Collector batch a few thousand at most. Beyond, the request is refused before
decoding (tiny entries by the million decode to ~15x their size)."""


class TooManyEntries(ValueError):
    """The request holds more than :data:`MAX_ENTRIES` top-level entries."""


def drop_empty_entries(body: bytes) -> bytes:
    """``body`` without its empty top-level entries; ``body`` itself when it has none, or
    when it is malformed (the decoder then says why).

    Raises:
        TooManyEntries: more than :data:`MAX_ENTRIES` non-empty top-level entries.
    """
    view, kept = memoryview(body), []
    pos, end, start, entries = 0, len(body), 0, 0
    while pos < end:
        run = _EMPTY_RUN.match(body, pos)
        if run is not None:
            kept.append(view[start:pos])
            pos = start = run.end()
            continue
        field_end = _field_end(body, pos)
        if field_end is None:
            return body
        entries += 1
        if entries > MAX_ENTRIES:
            raise TooManyEntries(
                f"more than {MAX_ENTRIES} resource entries in one request; send smaller batches"
            )
        pos = field_end
    if start == 0:
        return body
    kept.append(view[start:end])
    return b"".join(kept)


def count_items(body: bytes, cap: int) -> int:
    """How many entries the three levels of an ``Export*ServiceRequest`` hold: its resources
    (field 1), their scopes (field 2 of each) and the scopes' spans, log records or metrics
    (field 2 of each), counted from the bytes without decoding them; the count stops once it
    passes ``cap``. What each entry holds is stepped over by its length prefix, so the work
    is one step per entry. Malformed bytes end the count early (the decoder then says why).
    Decoded, each entry costs a message of its own whatever its size: a 15 MB body of 3
    million 5-byte spans decodes to ~560 MB, and its validation took ~1 GB."""
    count = 0
    for resource in _entries(body, 0, len(body), 1):
        count += 1
        for scope in _entries(body, *resource, 2):
            count += 1 + _count(body, *scope, 2)
            if count > cap:
                return count
    return count


def _entries(body: bytes, pos: int, end: int, number: int) -> Iterator[tuple[int, int]]:
    """(start, end) of the contents of the length-delimited fields ``number`` in
    ``body[pos:end]``, one at a time; stops at anything malformed (see :func:`_fields_ok`)."""
    wanted = (number << 3) | 2
    while pos < end:
        tag, content = _varint(body, pos)
        field_end = _field_end(body, pos)
        if tag is None or field_end is None or field_end > end:
            return
        if tag == wanted:
            yield _varint(body, content)[1], field_end
        pos = field_end


def _count(body: bytes, pos: int, end: int, number: int) -> int:
    """How many fields ``number`` ``body[pos:end]`` holds (as :func:`_entries` finds them;
    a field running past ``end`` is counted, an overcount only malformed bytes get): the loop
    of a scope's items, so a field ``number`` with a length of up to three bytes (2 MiB) is
    stepped over inline and anything else by :func:`_field_end`."""
    wanted, count = (number << 3) | 2, 0
    while pos < end:
        if body[pos] == wanted and pos + 3 < end:
            a, b, c = body[pos + 1], body[pos + 2], body[pos + 3]
            if a < 0x80:
                pos, count = pos + 2 + a, count + 1
                continue
            if b < 0x80:
                pos, count = pos + 3 + (a & 0x7F) + (b << 7), count + 1
                continue
            if c < 0x80:
                pos, count = pos + 4 + (a & 0x7F) + ((b & 0x7F) << 7) + (c << 14), count + 1
                continue
        field_end = _field_end(body, pos)
        if field_end is None or field_end > end:
            return count
        count += body[pos] == wanted
        pos = field_end
    return count


def _field_end(body: bytes, pos: int) -> int | None:
    """Where the field starting at ``pos`` ends; None when it is malformed."""
    tag, pos = _varint(body, pos)
    if tag is None:
        return None
    wire_type = tag & 7
    if wire_type == 2:
        length, pos = _varint(body, pos)
        end = None if length is None else pos + length
    elif wire_type == 0:
        _, end = _varint(body, pos)
    else:
        end = pos + {1: 8, 5: 4}.get(wire_type, len(body) + 1)
    return end if end is not None and end <= len(body) else None


def _varint(body: bytes, pos: int) -> tuple[int | None, int]:
    value = shift = 0
    while pos < len(body) and shift < 64:
        byte = body[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    return None, pos


def scope_slices(body: bytes) -> list[list[memoryview]] | None:
    """The bytes of each ``ScopeSpans`` of an ``ExportTraceServiceRequest`` as received, per
    top-level entry in order (what decoding yields as ``resource_spans[i].scope_spans[j]``),
    so they can be stored without serialising them again; None when ``body`` is malformed.
    One step per resource and per field of it: not per span."""
    view, out = memoryview(body), []
    for start, end in _entries(body, 0, len(body), 1):
        out.append([view[s:e] for s, e in _entries(body, start, end, 2)])
    return out if _fields_ok(body, 0, len(body)) else None


def _fields_ok(body: bytes, pos: int, end: int) -> bool:
    while pos < end:
        field_end = _field_end(body, pos)
        if field_end is None or field_end > end:
            return False
        pos = field_end
    return True
