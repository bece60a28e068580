"""The receiver's memory bound: the budget's arithmetic and what a body is charged."""

from __future__ import annotations

import sys
import time

import pytest

from tracegrade.collector.memory import (
    BYTES_PER_ITEM,
    BYTES_PER_SMALL_LENGTH,
    BYTES_PER_ZERO,
    JSON_BYTES_PER_BYTE,
    JSON_BYTES_PER_OBJECT,
    PROTOBUF_BYTES_PER_BYTE,
    SPIKE_SHARE,
    MemoryBudget,
    ResidentGuard,
    admission_footprint,
    decode_cost,
    request_share,
    resident_bytes,
    return_large_allocations_to_the_os,
    store_working_bytes,
)


def test_the_budget_refuses_what_does_not_fit_and_keeps_its_peak():
    budget = MemoryBudget(100)
    assert budget.reserve(60) and not budget.reserve(41) and budget.reserve(40)
    budget.release(60)
    assert budget.used_bytes == 40 and budget.peak_bytes == 100 and budget.refused == 1


def test_empty_submessages_are_charged_by_their_zero_length_bytes():
    plain, empties = b"\x0a\x10" + b"a" * 16, b"\x12\x00" * 10
    assert decode_cost(plain, "protobuf") == len(plain) * PROTOBUF_BYTES_PER_BYTE
    assert decode_cost(empties, "protobuf") == 20 * PROTOBUF_BYTES_PER_BYTE + 10 * BYTES_PER_ZERO


def test_submessages_of_a_few_bytes_are_charged_by_their_small_length_bytes():
    """Attributes of a 1-byte key (5 bytes each: decoded ~13x) are charged by their length
    bytes of 1-8; a body with few such bytes by its size."""
    tiny = b"\x4a\x03\x0a\x01A" * 1000
    assert decode_cost(tiny, "protobuf") == len(tiny) + 2000 * BYTES_PER_SMALL_LENGTH
    assert decode_cost(tiny, "protobuf") > 13 * len(tiny)
    sparse = (b"\x0a\x03abc" + b"\x12\x40" + b"z" * 64) * 100  # 1 small byte in 71
    assert decode_cost(sparse, "protobuf") == len(sparse) * PROTOBUF_BYTES_PER_BYTE


def test_tiny_entries_are_charged_by_their_count_and_json_by_its_objects():
    """A protobuf body's entries (counted by the service, compact.count_items) are charged
    BYTES_PER_ITEM each where that beats the per-byte estimate; an OTLP/JSON body its
    objects, whatever their size."""
    body = b"\x12\x0d\x0a\x0b" + b"A" * 11
    assert decode_cost(body, "protobuf", 0) == len(body) * PROTOBUF_BYTES_PER_BYTE
    assert decode_cost(body, "protobuf", 10) == len(body) + 10 * BYTES_PER_ITEM
    tiny = b'{"key":"a"},' * 1000
    assert decode_cost(tiny, "json") == len(tiny) * JSON_BYTES_PER_BYTE + 1000 * (
        JSON_BYTES_PER_OBJECT
    )
    assert decode_cost(tiny, "json") > 30 * len(tiny)  # as it decodes (34x, measured)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_allocations_are_returned_to_the_os_on_glibc():
    assert return_large_allocations_to_the_os()


class Resident:
    """A scripted resident set (bytes) and a count of trims, for :class:`ResidentGuard`."""

    def __init__(self, now: int):
        self.now, self.trims = now, 0

    def __call__(self) -> int:
        return self.now

    def trim(self) -> None:
        self.trims += 1
        self.now -= 50


def guarded(limit: int, resident: Resident) -> MemoryBudget:
    guard = ResidentGuard(limit, resident=resident, trim=resident.trim)
    guard.SAMPLE_EVERY_S = 0.0
    return MemoryBudget(1_000, guard)


def wait_for(condition) -> None:
    deadline = time.monotonic() + 5
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)


def test_the_resident_guard_refuses_what_would_pass_the_real_memory_while_work_is_in_flight():
    resident = Resident(150)
    budget = guarded(200, resident)
    assert budget.reserve(10)  # nothing in flight: admitted whatever the resident set
    assert budget.reserve(40)  # 150 + 40 <= 200
    assert not budget.reserve(60)  # 150 + 60 > 200, although the charges (50 + 60) fit
    assert budget.refused == budget.refused_resident == 1 and budget.used_bytes == 50


def test_with_nothing_in_flight_the_guard_never_locks_the_receiver_out():
    resident = Resident(10_000)  # far above the limit, e.g. memory the allocator kept
    budget = guarded(200, resident)
    assert budget.reserve(100)
    budget.release(100)
    assert budget.reserve(100) and budget.refused_resident == 0


def test_a_refusal_hands_freed_memory_back_then_reads_the_resident_set_again():
    resident = Resident(180)
    budget = guarded(200, resident)
    assert budget.reserve(1)
    assert not budget.reserve(40)  # 180 + 40 > 200: a trim starts (in its own thread)
    wait_for(lambda: resident.trims == 1)
    wait_for(lambda: budget.guard is not None and budget.guard._trimming.acquire(blocking=False))
    assert budget.reserve(40)  # 130 + 40 fits once the trim gave 50 back
    assert not budget.reserve(100) and resident.trims == 1  # at most one trim per interval


def test_the_guard_is_off_where_the_resident_set_cannot_be_read():
    guard = ResidentGuard(1, resident=lambda: None, trim=lambda: None)
    assert guard.fits(10**12)


def test_from_now_allows_the_bound_less_the_spike_share_above_todays_footprint():
    guard = ResidentGuard.from_now(100 * 2**20)
    now = resident_bytes()
    assert guard is not None and now is not None
    assert guard.limit_bytes == pytest.approx(now + 100 * 2**20 * (1 - SPIKE_SHARE), abs=2**24)


def test_a_requests_later_reservations_are_charged_but_not_guarded():
    resident = Resident(10_000)
    budget = guarded(200, resident)
    assert budget.reserve(10)  # the first request, admitted with nothing in flight
    assert budget.reserve(20, admit=False)  # its next chunk: never cut off half-way
    assert not budget.reserve(5)  # another request's admission, while one is in flight
    assert not budget.reserve(990, admit=False)  # the charges still bound everything
    assert budget.used_bytes == 30 and budget.refused_resident == 1


def test_admission_checks_the_requests_whole_footprint_against_the_resident_memory():
    resident = Resident(100)
    budget = guarded(200, resident)
    assert budget.reserve(1)
    assert admission_footprint(25) == 25 * (2 + PROTOBUF_BYTES_PER_BYTE)
    assert not budget.reserve(25, footprint=admission_footprint(25))  # 100 + 125 > 200
    assert budget.reserve(25)  # its first bytes alone would have fitted: 100 + 25


def test_requests_share_the_bound_with_the_stores_working_memory_and_the_spike_share():
    """Embedded, requests may reserve the whole bound (at least two requests); bounding a
    whole process (``collect``), the spike share and the store's working memory (its page
    cache and copies of a row) are kept out of what requests may reserve."""
    mib = 2**20
    assert request_share(384 * mib, 16 * mib, False) == (384 * mib, 384 * mib)
    assert request_share(8 * mib, 16 * mib, False) == (32 * mib, 32 * mib)
    working = store_working_bytes(16 * mib)
    assert working == 64 * mib
    bound, share = request_share(384 * mib, 16 * mib, True)
    assert bound == 384 * mib and share == int(384 * mib * (1 - SPIKE_SHARE)) - working
    bound, share = request_share(8 * mib, 16 * mib, True)  # raised: two requests still fit
    assert share >= 32 * mib and bound * (1 - SPIKE_SHARE) - working <= share + 1
