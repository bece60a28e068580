"""Message-history strings parsed once: each LLM call of a conversation replays the history.

A chat span's ``gen_ai.input.messages`` is the previous call's history plus a few new
messages, recorded as a JSON array string. :class:`HistoryCache` remembers the last few
parsed array strings (per thread) so that a string seen before costs a dictionary look-up and
a string extending a remembered one (``"[a,b]"`` -> ``"[a,b,c]"``) parses only its new items.

Why reusing the prefix is exact: if ``old`` is a valid JSON array with at least one item and
``new`` starts with ``old[:-1]`` followed by ``,``, the parser's state after ``old[:-1]`` is
"inside the top-level array, after an item" in both strings, so ``new``'s items are ``old``'s
items followed by the items of ``"[" + new[len(old):]`` (and ``new`` is valid JSON exactly when
that tail array is).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, TypeVar

from tracegrade.spans import json_loads

T = TypeVar("T")

_Entry = tuple[int, list[Any], str | None, int]
_SIZE = 8
"""Array strings remembered per thread: a trace's input and output histories interleave."""


class HistoryCache:
    """Parsed JSON array strings: ``string -> (item count, parsed results, string[:-1], its
    length)`` (no ``string[:-1]`` for an empty array or a string not ending in ``]``).

    ``parse_items(items, start)`` turns decoded JSON items (positions ``start...``) into the
    cached results (any list); the results are shared between calls, so callers must not mutate
    them (each call returns a new list holding the shared objects).
    """

    def __init__(self, parse_items: Callable[[list[Any], int], list[T]]) -> None:
        self._parse_items = parse_items
        self._local = threading.local()

    def _entries(self) -> dict[str, _Entry]:
        entries: dict[str, _Entry] | None = getattr(self._local, "entries", None)
        if entries is None:
            entries = self._local.entries = {}
        return entries

    def parse(self, text: str) -> list[Any] | None:
        """The parsed results of the JSON array string ``text``, or ``None`` when ``text`` is
        not a JSON array (the caller falls back to its general path)."""
        entries = self._entries()
        hit = entries.get(text)
        if hit is not None:
            return list(hit[1])
        base = self._longest_prefix(entries, text)
        try:
            if base is None:
                items = json_loads(text)
                if not isinstance(items, list):
                    return None
                count, results = len(items), self._parse_items(items, 0)
            else:
                tail = json_loads("[" + text[len(base) :])
                old_count, old_results = entries[base][:2]
                count = old_count + len(tail)
                results = old_results + self._parse_items(tail, old_count)
        except json.JSONDecodeError:
            return None
        if len(entries) >= _SIZE:
            del entries[next(iter(entries))]
        head = text[:-1] if count and text.endswith("]") else None
        entries[text] = (count, results, head, -1 if head is None else len(head))
        return list(results)

    @staticmethod
    def _longest_prefix(entries: dict[str, _Entry], text: str) -> str | None:
        """The longest remembered string whose ``head`` (all but its ``]``) starts ``text``,
        followed there by ``,``."""
        best: str | None = None
        best_size = -1
        size = len(text)
        for old, (_, _, head, head_size) in entries.items():
            if (
                best_size < head_size < size and text[head_size] == "," and text.startswith(head)  # type: ignore[arg-type]
            ):
                best, best_size = old, head_size
        return best
