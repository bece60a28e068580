"""Which traces a command looks at: time window and deterministic sampling."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterable, Iterator, Sequence

from tracegrade.errors import ConfigError
from tracegrade.sampling import sampled
from tracegrade.trace import AgentTrace

_RELATIVE = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def parse_duration(value: str, option: str) -> float:
    """Seconds from ``90m`` / ``12h`` / ``30d`` / ``4w``; ``option`` names it in errors.

    Raises:
        ConfigError: another form, or zero.
    """
    match = _RELATIVE.match(value.strip())
    if not match or float(match.group(1)) <= 0:
        raise ConfigError(f"{option} {value!r}: use a duration such as 12h, 30d or 4w")
    return float(match.group(1)) * _UNITS_S[match.group(2)]


def parse_since(value: str | None, now_s: float | None = None) -> int | None:
    """Unix nanoseconds from ``30m`` / ``12h`` / ``7d`` (ago) or an ISO 8601 date or time
    (UTC when no offset is given).

    Raises:
        ConfigError: neither form.
    """
    if value is None:
        return None
    match = _RELATIVE.match(value.strip())
    if match:
        now_s = time.time() if now_s is None else now_s
        return int((now_s - float(match.group(1)) * _UNITS_S[match.group(2)]) * 1e9)
    try:
        moment = dt.datetime.fromisoformat(value.strip())
    except ValueError as exc:
        raise ConfigError(
            f"--since {value!r}: use 30m, 12h, 7d or an ISO date such as 2026-11-01T09:00"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    return int(moment.timestamp() * 1e9)


def select(
    traces: Sequence[AgentTrace],
    *,
    since_unix_nano: int | None,
    sample: float | None,
    limit: int | None,
) -> list[AgentTrace]:
    """Traces started at or after ``since``, kept by ``sample``, at most ``limit``."""
    chosen = [t for t in traces if since_unix_nano is None or t.start_unix_nano >= since_unix_nano]
    if sample is not None:
        chosen = [t for t in chosen if sampled(t.trace_id, sample)]
    return chosen[:limit] if limit is not None else chosen


def keeps(trace: AgentTrace, *, since_unix_nano: int | None, sample: float | None) -> bool:
    """Whether :func:`select` keeps this trace (but for ``limit``)."""
    if since_unix_nano is not None and trace.start_unix_nano < since_unix_nano:
        return False
    return sample is None or sampled(trace.trace_id, sample)


def select_batches(
    batches: Iterable[Sequence[AgentTrace]],
    *,
    since_unix_nano: int | None,
    sample: float | None,
    limit: int | None,
) -> Iterator[list[AgentTrace]]:
    """:func:`select` over a stream of batches: the same traces, batch by batch; reading
    stops once ``limit`` traces are kept."""
    left = limit
    for batch in batches:
        chosen = select(batch, since_unix_nano=since_unix_nano, sample=sample, limit=left)
        kept = len(chosen)
        if chosen:
            yield chosen
        del batch, chosen  # not held while the next batch is read
        if left is not None:
            left -= kept
            if left <= 0:
                return
