"""Walks over replayed message histories that resume where an earlier walk of a prefix ended.

Each LLM call of a conversation receives the previous call's history plus a few new messages,
and :class:`~.histories.HistoryCache` makes the replayed messages the very same
:class:`~.messages.Message` objects. A walk over every history (pairing tool results, reading
user turns) therefore repeats the work of the previous walk: quadratic in the conversation's
length. :class:`Resumable` remembers the state at the end of recent walks, so a history that
extends a remembered one starts from that state and walks only its new messages.

Why this is exact: the prefix test is list equality (identical objects, else equal messages),
and a walk whose state after each message depends only on the messages seen so far reaches
the same state after the prefix as the earlier walk did.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

S = TypeVar("S")

_REMEMBERED = 8
"""Walks remembered: histories of interleaved agents (or input and output) alternate."""


class Resumable(Generic[S]):
    """States at the end of recent walks, keyed by the walked history (a message list).

    ``copy(state)`` returns a state the next walk may change without touching the remembered
    one.
    """

    def __init__(self, copy: Callable[[S], S]) -> None:
        self._copy = copy
        self._walks: list[tuple[Sequence[object], S]] = []

    def resume(self, history: Sequence[object]) -> tuple[int, S] | None:
        """``(messages already walked, a copy of the state after them)`` for the longest
        remembered history that ``history`` starts with, or ``None``."""
        best: tuple[Sequence[object], S] | None = None
        size = len(history)
        for walk in self._walks:
            done = len(walk[0])
            if 0 < done <= size and (best is None or done > len(best[0])):
                head = history[:done] if done < size else history
                if head == walk[0]:
                    best = walk
        return None if best is None else (len(best[0]), self._copy(best[1]))

    def remember(self, history: Sequence[object], state: S) -> None:
        """Record ``state`` as the state after walking all of ``history`` (kept as given: the
        caller must not change it afterwards)."""
        if len(self._walks) >= _REMEMBERED:
            del self._walks[0]
        self._walks.append((history, state))
