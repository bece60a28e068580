"""The garbage collector tuned for a long pass over many traces (scoring a file, a dataset or a
queue of stored traces).

Why: reading and normalising a trace allocates tens of thousands of small objects (decoded
attributes, messages, parts), almost none of them in reference cycles. CPython's default
thresholds (700 allocations for a young collection, and a full collection every 100 young ones)
then spend ~15% of ``score``'s CPU time traversing objects that reference counting frees anyway,
and every full collection walks the whole import-time heap (pydantic schemas, compiled
convention maps, click commands) again. The same remedy as mypy's (``gc.set_threshold`` in its
build) and Instagram's (``gc.freeze`` before forking workers):

- :func:`gc.freeze` moves what exists when the pass starts (modules, models, configuration) to a
  permanent generation no collection walks; forked scoring workers inherit it without touching
  its pages (no copy-on-write from collector bookkeeping);
- young collections run every :data:`YOUNG_THRESHOLD` allocations instead of 700, so cycles are
  still collected, in fewer, larger passes.

Both are restored when the outermost pass ends (passes may nest, and run in threads).
Measured with ``benchmarks/score_scale.py --traces 2000``.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

YOUNG_THRESHOLD = 100_000
"""Allocations (less deallocations) between young collections during a pass (CPython: 700)."""


class _Passes:
    """The passes running now, and the thresholds the first found."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.depth = 0
        self.thresholds: tuple[int, int, int] = gc.get_threshold()


_PASSES = _Passes()


@contextmanager
def scoring_heap() -> Iterator[None]:
    """Tune the collector for the block (module docstring); the outermost block of nested or
    concurrent ones restores the thresholds it found and unfreezes what it froze."""
    with _PASSES.lock:
        if _PASSES.depth == 0:
            _PASSES.thresholds = gc.get_threshold()
            gc.freeze()
            young, *older = _PASSES.thresholds
            gc.set_threshold(max(young, YOUNG_THRESHOLD), *older)
        _PASSES.depth += 1
    try:
        yield
    finally:
        with _PASSES.lock:
            _PASSES.depth -= 1
            if _PASSES.depth == 0:
                gc.set_threshold(*_PASSES.thresholds)
                gc.unfreeze()
