"""The receiver's memory bound (``--max-memory-mib``): bytes of requests held at once.

Every request is charged before the work that needs the memory, and refused when the charge
does not fit (HTTP 429 + Retry-After, gRPC RESOURCE_EXHAUSTED + RetryInfo), so peak memory
stays near the bound whatever the load:

- its body, while it is read (OTLP/HTTP, chunk by chunk: a slow sender holds only what it
  sent);
- its decoding and storing, from admission until it is answered: :func:`decode_cost`, an
  upper estimate from the body's size and its zero bytes. A protobuf message decodes to about
  1.4x its size plus ~60-180 bytes per submessage, and every *empty* submessage (the cheap way
  to make a small body decode to a huge one) has a zero length byte. A body whose cost alone
  exceeds the bound is refused as too large (it could never fit).

- on gRPC, a call reading its message holds ``--max-request-mib`` of the bound (the size is
  not known before the message is in), then its real size.

Known limit: a body made of millions of tiny *non-empty* submessages (5 bytes each) still
decodes to ~15x its size.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading

DEFAULT_MAX_MEMORY_BYTES = 384 * 2**20
PROTOBUF_BYTES_PER_BYTE = 3
"""Decoded message plus prepared rows, per byte of a protobuf body (measured ~1.4 + 1, and
allocator slack)."""
JSON_BYTES_PER_BYTE = 10
"""Python objects of a parsed OTLP/JSON body plus its protobuf form, per byte."""
BYTES_PER_ZERO = 96
"""Charged per zero byte of a body (each empty submessage has one; see the module docstring)."""


def decode_cost(body: bytes, encoding: str) -> int:
    """Upper estimate of the bytes needed to decode, validate and prepare ``body`` (see the
    module docstring); linear in its size, one pass."""
    if encoding == "json":
        return len(body) * JSON_BYTES_PER_BYTE + body.count(b"{}") * BYTES_PER_ZERO
    return len(body) * PROTOBUF_BYTES_PER_BYTE + body.count(0) * BYTES_PER_ZERO


class MemoryBudget:
    """A thread-safe byte budget: :meth:`reserve` what a request will hold, :meth:`release` it
    when done. ``peak_bytes`` is the most ever reserved at once."""

    def __init__(self, limit_bytes: int = DEFAULT_MAX_MEMORY_BYTES):
        self.limit_bytes = limit_bytes
        self.used_bytes = self.peak_bytes = 0
        self.refused = 0
        self._lock = threading.Lock()

    def reserve(self, size: int) -> bool:
        """Reserve ``size`` bytes; False (and nothing reserved) when they do not fit."""
        with self._lock:
            if self.used_bytes + size > self.limit_bytes:
                self.refused += 1
                return False
            self.used_bytes += size
            self.peak_bytes = max(self.peak_bytes, self.used_bytes)
            return True

    def release(self, size: int) -> None:
        """Give back ``size`` bytes reserved earlier."""
        with self._lock:
            self.used_bytes -= size


_M_MMAP_THRESHOLD = -3
LARGE_ALLOCATION_BYTES = 2**20


def return_large_allocations_to_the_os() -> bool:
    """Make glibc serve allocations of :data:`LARGE_ALLOCATION_BYTES` and more by ``mmap``, so
    request bodies and decoded messages go back to the system when freed. (glibc's default
    raises this threshold after each large free, up to 32 MiB, after which megabyte bodies
    fragment the heap: under 160 clients of 4-15 MiB requests, peak RSS fell from ~1 GB to
    ~0.6 GB with it.) For a process that is the receiver only (``tracegrade collect``);
    returns False where there is no glibc."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        mallopt = getattr(libc, "mallopt", None)
    except OSError:
        return False
    return bool(mallopt and mallopt(_M_MMAP_THRESHOLD, LARGE_ALLOCATION_BYTES))
