"""The receiver's memory bound (``--max-memory-mib``): bytes of requests held at once.

Every request is charged before the work that needs the memory, and refused when the charge
does not fit (HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED + RetryInfo), so peak memory
stays near the bound whatever the load:

- its body, while it is read (OTLP/HTTP, chunk by chunk: a slow sender holds only what it
  sent);
- its decoding and storing, from admission until it is answered: :func:`decode_cost`, an
  upper estimate from the body's size, its zero bytes and its entries (OTLP/JSON: its size
  and its objects). A protobuf message
  decodes to about 1.4x its size plus ~60-190 bytes per submessage; every *empty* submessage
  (the cheap way to make a small body decode to a huge one) has a zero length byte, every
  submessage of a few bytes a length byte of 1-8, and the resources, scopes and spans (log
  records, metrics) are counted from the bytes (:func:`~.compact.count_items`), so a body of
  millions of tiny ones is charged for them.
  A body whose cost alone exceeds the bound is refused as too large (it could never fit).

- on gRPC, a call reading its message holds ``--max-request-mib`` of the bound (the size is
  not known before the message is in), then its real size.

Known limit: submessages of 10-20 bytes (attributes of a 9-byte key, say) are charged by
size alone, 3x, and decode to up to ~5x.

The charges are estimates, and freed memory does not always leave the process (allocator
arenas, Python's object pools, gRPC's buffers). So ``tracegrade collect``, a process that is
the receiver only, bounds the whole process (:func:`request_share`): requests reserve the
bound less :data:`SPIKE_SHARE` and the store's working memory, and its real resident memory
is watched too (:class:`ResidentGuard`, the idea of the OpenTelemetry Collector's
``memory_limiter``): while anything is in flight, a request is refused when the process's
resident set plus its expected footprint would pass its start-up footprint plus the bound
less the spike share, and freed allocator memory is handed back to the system
(``malloc_trim``). With nothing in flight a request is always admitted, so the guard never
locks the receiver out. Under 160 clients of 4-15 MiB requests the peak resident set
(``VmHWM``) is 420-425 MiB on OTLP/HTTP and 412-430 MiB on gRPC against a start-up footprint
plus bound of 447 MiB (0.67-0.78 GB and 0.54-0.57 GB with the guard alone, ~0.8-0.9 GB
before it), and no client gives up (README, "Receiving OTLP").
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import os
import threading
import time
from collections.abc import Callable

from tracegrade.store.database import PAGE_CACHE_BYTES

DEFAULT_MAX_MEMORY_BYTES = 384 * 2**20
PROTOBUF_BYTES_PER_BYTE = 3
"""Decoded message plus prepared rows, per byte of a protobuf body (measured ~1.4 + 1, and
allocator slack)."""
JSON_BYTES_PER_BYTE = 4
JSON_BYTES_PER_OBJECT = 384
"""A parsed OTLP/JSON body (Python objects, then its protobuf form) holds about 3.3 bytes per
byte plus ~370 per JSON object (each ``{``), measured: ordinary spans (47 bytes an object)
came to 11x their size, 15 MB of ``{"key":"a"}`` attributes to 34x."""
BYTES_PER_ITEM = 320
"""Charged per resource, scope and span (log record, metric) of a protobuf body when that is
more than :data:`PROTOBUF_BYTES_PER_BYTE`: each decodes to a message of its own (~190 bytes
for a span, measured) plus what validating and preparing it hold."""
BYTES_PER_SMALL_LENGTH = 48
"""Charged per byte of value 1-8 where that beats the per-byte estimate: every submessage of a
few bytes has such a length byte (15 MB of 5-byte attributes in one span decode to ~200 MB,
13x), while ordinary spans hold ~4% of them (charged 2.9x: no more than before)."""
_ABOVE_SMALL_LENGTH = bytes(range(9, 256))
BYTES_PER_ZERO = 96
"""Charged per zero byte of a body (each empty submessage has one; see the module docstring)."""
SPIKE_SHARE = 0.25
"""Share of the bound kept free for allocations still to come from requests already
admitted and for allocator slack (the OpenTelemetry Collector's ``memory_limiter`` keeps
20% by default; with 20% here the true peak passed the bound by up to 5 MiB in two of three
runs under 160 clients of 4-15 MiB requests, with 25% it stayed 17-35 MiB under in five)."""


def store_working_bytes(max_request_bytes: int) -> int:
    """What the writer holds while it commits, beyond the requests' own charges: its SQLite
    page cache (:data:`~tracegrade.store.database.PAGE_CACHE_BYTES`) and the copies of the
    row it inserts (a blob is copied when bound and again into its record: twice the largest
    request). The receiver sets this much of the bound aside for its store."""
    return PAGE_CACHE_BYTES + 2 * max_request_bytes


def request_share(
    max_memory_bytes: int, max_request_bytes: int, whole_process: bool
) -> tuple[int, int]:
    """(bound, what requests may reserve of it) for ``--max-memory-mib`` and
    ``--max-request-mib`` in bytes. Requests may reserve the whole bound (at least two
    requests), unless the bound is on the ``whole_process`` (``tracegrade collect``): then
    :data:`SPIKE_SHARE` of it is kept for allocator slack and the store's working memory
    (:func:`store_working_bytes`) is set aside, so that when requests hold their share the
    resident set stays within the start-up footprint plus the bound (measured under 160
    clients of 4-15 MiB requests: README, "Receiving OTLP")."""
    if not whole_process:
        bound = max(max_memory_bytes, 2 * max_request_bytes)
        return bound, bound
    working = store_working_bytes(max_request_bytes)
    least = math.ceil((2 * max_request_bytes + working) / (1 - SPIKE_SHARE))
    bound = max(max_memory_bytes, least)
    return bound, int(bound * (1 - SPIKE_SHARE)) - working


def admission_footprint(body_bytes: int) -> int:
    """What a protobuf request of ``body_bytes`` comes to hold once admitted: its body, a copy
    while it is read or joined, and its decoding (:data:`PROTOBUF_BYTES_PER_BYTE`). The
    resident guard checks this at admission, when only the first bytes are charged."""
    return body_bytes * (2 + PROTOBUF_BYTES_PER_BYTE)


def decode_cost(body: bytes, encoding: str, items: int = 0) -> int:
    """Upper estimate of the bytes needed to decode, validate and prepare ``body`` (see the
    module docstring); linear in its size, one pass. ``items``: the protobuf body's entries
    (:func:`~.compact.count_items`), charged :data:`BYTES_PER_ITEM` each where that is more
    than the per-byte estimate (tiny entries)."""
    if encoding == "json":
        return len(body) * JSON_BYTES_PER_BYTE + body.count(b"{") * JSON_BYTES_PER_OBJECT
    low = body.translate(None, _ABOVE_SMALL_LENGTH)  # its bytes 0-8: one pass, kept few
    zeros = low.count(0)
    by_size = max(
        len(body) * PROTOBUF_BYTES_PER_BYTE,
        len(body) + items * BYTES_PER_ITEM,
        len(body) + (len(low) - zeros) * BYTES_PER_SMALL_LENGTH,
    )
    return by_size + zeros * BYTES_PER_ZERO


class MemoryBudget:
    """A thread-safe byte budget: :meth:`reserve` what a request will hold, :meth:`release` it
    when done. ``peak_bytes`` is the most ever reserved at once. With a ``guard``
    (:class:`ResidentGuard`), a request's first reservation (``admit``) made while anything
    is in flight must also fit the process's real resident memory (the request's later
    reservations are charged only, so a request once admitted is never cut off half-way);
    ``refused_resident`` counts those refusals."""

    def __init__(
        self, limit_bytes: int = DEFAULT_MAX_MEMORY_BYTES, guard: ResidentGuard | None = None
    ):
        self.limit_bytes = limit_bytes
        self.guard = guard
        self.used_bytes = self.peak_bytes = 0
        self.refused = self.refused_resident = 0
        self._lock = threading.Lock()

    def reserve(self, size: int, admit: bool = True, footprint: int | None = None) -> bool:
        """Reserve ``size`` bytes; False (and nothing reserved) when they do not fit.
        ``admit``: this is a request's first reservation (see the class docstring);
        ``footprint``: what the request will come to hold in all (:func:`admission_footprint`),
        checked against the resident memory instead of ``size``."""
        with self._lock:
            if self.used_bytes + size > self.limit_bytes:
                self.refused += 1
                return False
            guard = self.guard if admit and self.used_bytes else None
            if guard is not None and not guard.fits(size if footprint is None else footprint):
                self.refused += 1
                self.refused_resident += 1
                return False
            self.used_bytes += size
            self.peak_bytes = max(self.peak_bytes, self.used_bytes)
            return True

    def release(self, size: int) -> None:
        """Give back ``size`` bytes reserved earlier."""
        with self._lock:
            self.used_bytes -= size


def resident_bytes() -> int | None:
    """This process's resident set size in bytes (``/proc/self/statm``), or None where there
    is no procfs."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE_BYTES
    except (OSError, ValueError, IndexError):
        return None


_PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


class ResidentGuard:
    """The process's real resident memory against ``limit_bytes`` (its start-up footprint
    plus the bound; see the module docstring). The resident set is read at most every
    :data:`SAMPLE_EVERY_S`; when a reservation does not fit, freed allocator memory is
    returned to the system (``malloc_trim``, at most every :data:`TRIM_EVERY_S`, in a
    thread of its own) so that what was freed stops counting."""

    SAMPLE_EVERY_S = 0.01
    TRIM_EVERY_S = 0.5

    def __init__(
        self,
        limit_bytes: int,
        resident: Callable[[], int | None] = resident_bytes,
        trim: Callable[[], object] | None = None,
    ):
        self.limit_bytes = limit_bytes
        self._resident, self._trim = resident, trim if trim is not None else _malloc_trim
        self._sampled_at = self._trimmed_at = -1e9
        self._sample: int | None = None
        self._trimming = threading.Lock()

    @classmethod
    def from_now(cls, bound_bytes: int) -> ResidentGuard | None:
        """A guard for this process: its resident memory now plus ``bound_bytes``, less
        :data:`SPIKE_SHARE` of it for what admitted requests allocate before the next check
        (as ``memory_limiter``'s ``spike_limit_mib``); None where the resident set cannot be
        read."""
        now = resident_bytes()
        return None if now is None else cls(now + int(bound_bytes * (1 - SPIKE_SHARE)))

    def fits(self, size: int) -> bool:
        """True when the resident set plus ``size`` bytes stays within the limit (or the
        resident set cannot be read); otherwise starts a trim and returns False."""
        now = time.monotonic()
        if now - self._sampled_at >= self.SAMPLE_EVERY_S:
            self._sample, self._sampled_at = self._resident(), now
        if self._sample is None or self._sample + size <= self.limit_bytes:
            return True
        if now - self._trimmed_at >= self.TRIM_EVERY_S and self._trimming.acquire(blocking=False):
            self._trimmed_at = now
            threading.Thread(target=self._trim_then_resample, daemon=True).start()
        return False

    def _trim_then_resample(self) -> None:
        try:
            self._trim()
            self._sampled_at = -1e9  # the next check reads the resident set again
        finally:
            self._trimming.release()


def _malloc_trim() -> bool:
    """glibc's ``malloc_trim(0)``: give free heap pages of every arena back to the system
    (ctypes releases the GIL meanwhile). False where there is no glibc."""
    trim = getattr(_libc(), "malloc_trim", None)
    return bool(trim and trim(0))


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


_M_MMAP_THRESHOLD = -3
LARGE_ALLOCATION_BYTES = 2**20


def return_large_allocations_to_the_os() -> bool:
    """Make glibc serve allocations of :data:`LARGE_ALLOCATION_BYTES` and more by ``mmap``, so
    request bodies and decoded messages go back to the system when freed. (glibc's default
    raises this threshold after each large free, up to 32 MiB, after which megabyte bodies
    fragment the heap: under 160 clients of 4-15 MiB requests, peak RSS fell from ~1 GB to
    ~0.6 GB with it.) For a process that is the receiver only (``tracegrade collect``);
    returns False where there is no glibc."""
    mallopt = getattr(_libc(), "mallopt", None)
    return bool(mallopt and mallopt(_M_MMAP_THRESHOLD, LARGE_ALLOCATION_BYTES))
