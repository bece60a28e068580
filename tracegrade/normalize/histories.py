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

_Entry = tuple[str, int, list[Any], str | None, int]
"""``(string, item count, parsed results, string[:-1], its length)``."""
_SIZE = 8
"""Array strings remembered per thread: a trace's input and output histories interleave."""


class HistoryCache:
    """Parsed JSON array strings, the most recent last: ``(string, item count, parsed results,
    string[:-1], its length)`` (no ``string[:-1]`` for an empty array or a string not ending
    in ``]``). Strings are matched by length and content, never hashed: a history is tens of
    kilobytes, and hashing it cost as much as parsing its new messages.

    ``parse_items(items, start)`` turns decoded JSON items (positions ``start...``) into the
    cached results (any list); the results are shared between calls, so callers must not mutate
    them (each call returns a new list holding the shared objects).
    """

    def __init__(self, parse_items: Callable[[list[Any], int], list[T]]) -> None:
        self._parse_items = parse_items
        self._local = threading.local()

    def _entries(self) -> list[_Entry]:
        entries: list[_Entry] | None = getattr(self._local, "entries", None)
        if entries is None:
            entries = self._local.entries = []
        return entries

    def parse(self, text: str) -> list[Any] | None:
        """The parsed results of the JSON array string ``text``, or ``None`` when ``text`` is
        not a JSON array (the caller falls back to its general path)."""
        entries = self._entries()
        size = len(text)
        for old, _, results, _, _ in reversed(entries):
            if len(old) == size and old == text:
                return list(results)
        base = self._prefix(entries, text, size)
        try:
            if base is None:
                items = json_loads(text)
                if not isinstance(items, list):
                    return None
                count, results = len(items), self._parse_items(items, 0)
            else:
                old_text, old_count, old_results = base[:3]
                tail = json_loads("[" + text[len(old_text) :])
                count = old_count + len(tail)
                results = old_results + self._parse_items(tail, old_count)
        except json.JSONDecodeError:
            return None
        if len(entries) >= _SIZE:
            del entries[0]
        head = text[:-1] if count and text.endswith("]") else None
        entries.append((text, count, results, head, -1 if head is None else len(head)))
        return list(results)

    @staticmethod
    def _prefix(entries: list[_Entry], text: str, size: int) -> _Entry | None:
        """The most recent remembered string whose ``head`` (all but its ``]``) starts
        ``text``, followed there by ``,`` (any such prefix gives the same results; the most
        recent is, in a conversation, the longest)."""
        for entry in reversed(entries):
            head, head_size = entry[3], entry[4]
            if 0 < head_size < size and text[head_size] == "," and text.startswith(head):  # type: ignore[arg-type]
                return entry
        return None
