"""The receiver's memory bound: the budget's arithmetic and what a body is charged."""

from __future__ import annotations

import sys

import pytest

from tracegrade.collector.memory import (
    BYTES_PER_ZERO,
    PROTOBUF_BYTES_PER_BYTE,
    MemoryBudget,
    decode_cost,
    return_large_allocations_to_the_os,
)


def test_the_budget_refuses_what_does_not_fit_and_keeps_its_peak():
    budget = MemoryBudget(100)
    assert budget.reserve(60) and not budget.reserve(41) and budget.reserve(40)
    budget.release(60)
    assert budget.used_bytes == 40 and budget.peak_bytes == 100 and budget.refused == 1


def test_empty_submessages_are_charged_by_their_zero_length_bytes():
    plain, empties = b"\x0a\x01a" * 10, b"\x12\x00" * 10
    assert decode_cost(plain, "protobuf") == len(plain) * PROTOBUF_BYTES_PER_BYTE
    assert decode_cost(empties, "protobuf") == 20 * PROTOBUF_BYTES_PER_BYTE + 10 * BYTES_PER_ZERO


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc only")
def test_large_allocations_are_returned_to_the_os_on_glibc():
    assert return_large_allocations_to_the_os()
