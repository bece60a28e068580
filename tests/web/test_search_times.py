"""A time given to a trace search (the Traces page's ``since``/``until``, the commands'
``--since``) is converted to Unix nanoseconds exactly: through a float it was off by up to a
few hundred nanoseconds, so ``since`` a trace's own start, to the microsecond, missed the
trace about one time in fourteen (tests/web/test_dashboard.py failed on it)."""

from __future__ import annotations

import datetime as dt

import pytest

from tracegrade.errors import StoreError
from tracegrade.pipeline.reading import parse_since
from tracegrade.web.traces import parse_query

# 2026-11-29T04:34:16.140891 UTC, counted by hand: days since 1970 * 86,400 + the time of day.
SECONDS = (dt.date(2026, 11, 29) - dt.date(1970, 1, 1)).days * 86_400 + 4 * 3600 + 34 * 60 + 16
EXACT = SECONDS * 1_000_000_000 + 140_891_000


def test_the_float_conversion_this_replaces_was_off_here() -> None:
    moment = dt.datetime(2026, 11, 29, 4, 34, 16, 140891, tzinfo=dt.UTC)
    assert int(moment.timestamp() * 1e9) != EXACT  # 136 ns late: the old result


@pytest.mark.parametrize("text", ["2026-11-29T04:34:16.140891", "2026-11-29T04:34:16.140891Z"])
def test_the_traces_page_reads_a_microsecond_time_exactly(text: str) -> None:
    query = parse_query({"since": text, "until": text})
    assert query.since_unix_nano == EXACT and query.until_unix_nano == EXACT


def test_the_commands_read_since_exactly() -> None:
    assert parse_since("2026-11-29T04:34:16.140891") == EXACT
    assert parse_since("2026-11-29T05:34:16.140891+01:00") == EXACT


def test_times_out_of_range_are_still_refused() -> None:
    for text in ("9999-12-31", "0001-01-01"):
        with pytest.raises(StoreError, match="out of range"):
            parse_query({"since": text})
