"""Unix nanoseconds of a :class:`datetime.datetime`, exactly.

``int(moment.timestamp() * 1e9)`` goes through a float: a 2026 time in seconds with its
microseconds has 16 significant digits, one more than a float holds, so the result can be a
few hundred nanoseconds off either way, and a search ``since`` a trace's own start (to the
microsecond) missed that trace whenever the error rounded up.
"""

from __future__ import annotations

import datetime as dt

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_MICROSECOND = dt.timedelta(microseconds=1)


def unix_nano_of(moment: dt.datetime) -> int:
    """Unix nanoseconds (int) of ``moment``, exact to its microsecond; a naive ``moment`` is
    taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return (moment - EPOCH) // _MICROSECOND * 1000
