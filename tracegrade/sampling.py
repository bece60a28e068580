"""Deterministic sampling by trace id: the same trace is in or out in every process, on every
machine and on every rerun (``score --sample``, ``score --follow --sample``,
``dataset build --sample``).

A trace id maps to a bucket in [0, 1) (the first 8 bytes of its SHA-256, as a fraction of
2**64); a fraction ``f`` keeps the traces whose bucket is below ``f``, and a count ``n`` keeps
the ``n`` lowest buckets, so a count always picks a subset of what a larger fraction picks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def bucket(trace_id: str) -> float:
    """The trace id's position in [0, 1) (see the module docstring)."""
    return int.from_bytes(hashlib.sha256(trace_id.encode()).digest()[:8], "big") / 2**64


def sampled(trace_id: str, fraction: float) -> bool:
    """True when ``trace_id`` is in a ``fraction`` (0-1] sample."""
    return bucket(trace_id) < fraction


def lowest(ids: Iterable[str], count: int) -> set[str]:
    """The ``count`` ids with the lowest buckets (all of them when there are fewer)."""
    return set(sorted(set(ids), key=lambda i: (bucket(i), i))[:count])
