"""What every trace backend client shares: the query a pull answers, the traces found, and
the :class:`Source` protocol each backend module implements.

A pull has two steps, so that a trace already stored is never fetched again: :meth:`Source.find`
lists the traces a query matches (id and start time, a page at a time, oldest first where the
backend can sort), then :meth:`Source.fetch` reads the spans of the new ones and returns them as
OTLP trace requests (``ExportTraceServiceRequest``), the attributes as the backend's spans
carried them, so the normaliser reads them as any other trace.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tracegrade._util.unix_time import unix_nano_of
from tracegrade.errors import ConfigError
from tracegrade.otlp.codec import ExportTraceServiceRequest


@dataclass(frozen=True)
class PullQuery:
    """Which traces a pull asks for. Times are Unix nanoseconds (``since`` inclusive, ``until``
    exclusive; None: unbounded); ``project`` is the backend's grouping (a Phoenix project, an
    MLflow experiment id or name, a Jaeger or Tempo service; Langfuse's keys name the project);
    ``search`` a filter in the backend's own language (see each module); ``trace_ids`` skips
    the search; ``limit`` caps the traces found."""

    since_unix_nano: int | None = None
    until_unix_nano: int | None = None
    project: str | None = None
    search: str | None = None
    trace_ids: Sequence[str] = ()
    limit: int | None = None
    page_size: int = 100


@dataclass(frozen=True)
class Found:
    """A trace a search matched: its id as the backend names it (``backend_id``, e.g. MLflow's
    ``tr-…``), its OTLP trace id (32 hex digits) and its start (Unix ns; 0 when unknown)."""

    trace_id: str
    start_unix_nano: int = 0
    backend_id: str = ""

    @property
    def key(self) -> str:
        """The id :meth:`Source.fetch` takes."""
        return self.backend_id or self.trace_id


@dataclass
class Settings:
    """Where a backend is and how to reach it: its base URL and the HTTP headers carrying the
    credentials (read from the backend's own environment variables; never printed: see
    :meth:`describe`)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 30.0

    def describe(self) -> str:
        """The URL without any user information, for messages."""
        head, sep, tail = self.url.partition("://")
        return head + sep + tail.rpartition("@")[2] if sep else self.url


class Source(Protocol):
    """A trace backend's client (one per module of this package)."""

    name: str
    settings: Settings

    def find(self, query: PullQuery) -> Iterator[list[Found]]:
        """The traces ``query`` matches, a page at a time.

        Raises:
            SourceError: the backend refused or failed (after the retries of :mod:`.http`).
        """
        ...

    def fetch(self, found: Sequence[Found]) -> list[ExportTraceServiceRequest]:
        """The spans of these traces as OTLP trace requests.

        Raises:
            SourceError: as :meth:`find`.
        """
        ...

    def close(self) -> None:
        """Close the HTTP connections."""
        ...


def env(names: Sequence[str], environ: Mapping[str, str] | None = None) -> str | None:
    """The first of these environment variables that is set and not empty."""
    environ = os.environ if environ is None else environ
    for name in names:
        if environ.get(name):
            return environ[name]
    return None


def base_url(explicit: str | None, names: Sequence[str], default: str) -> str:
    """``explicit`` (``--url``), else the first of the variables ``names``, else ``default``;
    without a trailing slash.

    Raises:
        ConfigError: not an http(s) URL.
    """
    url = (explicit or env(names) or default).rstrip("/")
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{url!r} is not an http:// or https:// URL")
    return url


def iso(unix_nano: int) -> str:
    """RFC 3339 UTC time of Unix nanoseconds (microsecond precision, rounded down)."""
    seconds, nanos = divmod(unix_nano, 1_000_000_000)
    moment = dt.datetime.fromtimestamp(seconds, tz=dt.UTC)
    return moment.replace(microsecond=nanos // 1000).isoformat().replace("+00:00", "Z")


def unix_nano(value: str | int | float | None) -> int:
    """Unix nanoseconds of an ISO 8601 time (``Z`` or an offset; UTC when none), of a number
    string of nanoseconds, or 0 for None.

    Raises:
        ValueError: neither form.
    """
    if value is None or value == "":
        return 0
    if isinstance(value, (int, float)):
        return int(value)
    if value.isdigit():
        return int(value)
    text = value.strip().replace("Z", "+00:00")
    whole, dot, rest = text.partition(".")
    nanos = 0
    if dot:  # keep digits beyond microseconds, which datetime drops
        digits = rest[: len(rest) - len(rest.lstrip("0123456789"))]
        offset = rest[len(digits) :]
        nanos = int((digits + "000000000")[:9])
        text = whole + offset
    return unix_nano_of(dt.datetime.fromisoformat(text)) + nanos
