"""Message-history strings parsed through the cache give exactly what a fresh parse gives."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from tracegrade.normalize.histories import HistoryCache
from tracegrade.normalize.messages import _parse_items, parse_messages

TAU = (
    Path(__file__).resolve().parents[2]
    / "datasets"
    / "tau-bench"
    / "gpt-4o-airline-even-tasks.json"
)


def _fresh(text: str) -> list | None:
    try:
        items = json.loads(text)
    except json.JSONDecodeError:
        return None
    return _parse_items(items, 0) if isinstance(items, list) else None


def _growing_histories(separators: tuple[str, str]) -> list[str]:
    """The first tau-bench conversation's growing prefixes, as an SDK replays them."""
    messages = json.loads(TAU.read_text())[0]["traj"]
    return [json.dumps(messages[:n], separators=separators) for n in range(1, len(messages) + 1)]


def test_replayed_prefixes_parse_like_fresh_strings() -> None:
    for separators in ((",", ":"), (", ", ": ")):
        cache = HistoryCache(_parse_items)
        for text in _growing_histories(separators):
            assert cache.parse(text) == _fresh(text)
        assert cache.parse(text) == _fresh(text)  # an exact repeat


def test_prefix_reuse_keeps_absolute_positions_and_skips_non_messages() -> None:
    cache = HistoryCache(_parse_items)
    first = '[{"role": "user", "content": "hi"}, 3]'
    second = first[:-1] + ', {"role": "assistant", "content": "hello"}]'
    cache.parse(first)
    parsed = cache.parse(second)
    assert parsed == _fresh(second)
    assert [m.position for m in parsed] == [0, 2]


def test_invalid_or_non_array_strings_are_left_to_the_general_path() -> None:
    cache = HistoryCache(_parse_items)
    cache.parse('[{"role": "user", "content": "hi"}]')
    assert cache.parse('[{"role": "user", "content": "hi"}, {"role": ') is None
    assert cache.parse("[]") == []
    assert cache.parse('[], {"role": "user", "content": "x"}]') is None  # "[]" is no prefix
    assert cache.parse('{"messages": []}') is None
    assert parse_messages('{"messages": [{"role": "user", "content": "x"}]}')[0].text == "x"
    assert parse_messages('[{"role": "user", "content": "hi"}, {"role": ') is None


def test_threads_keep_their_own_entries() -> None:
    cache = HistoryCache(_parse_items)
    histories = _growing_histories((",", ":"))
    results: list[bool] = []

    def work() -> None:
        results.append(all(cache.parse(text) == _fresh(text) for text in histories))

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [True] * 4
