"""``import --from SOURCE`` (and ``score``/``dataset build --from``): pull traces from a trace
backend into the store.

:func:`pull` asks the backend's client (:mod:`tracegrade.sources`) for the traces a query
matches, a page at a time; the traces already in the store are not fetched again, the others
are fetched, converted to OTLP and written as any import writes (secrets redacted, each span
once). Without ``since`` (and without trace ids), a pull resumes where the last pull of the same
backend, URL, project and search ended (:mod:`tracegrade.store.pulls`); the end moves only once
a pull has finished, so an interrupted pull is simply asked again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from tracegrade.pipeline.reading import parse_since
from tracegrade.sources import PullQuery, Source, open_source
from tracegrade.sources.base import Found
from tracegrade.store import pulls
from tracegrade.store.traces import Store


@dataclass(frozen=True)
class PullOptions:
    """What a pull takes (as the command-line options name them): the backend (a key of
    :data:`tracegrade.sources.SOURCES`), its ``url`` (else its environment variables), the
    ``project`` and ``search`` in the backend's terms, the time range (``since``/``until``:
    ``30m``, ``12h``, ``7d`` or an ISO date; no ``since``: resume), trace ids, at most
    ``limit`` traces, the store ``db``."""

    source: str
    db: str | None = None
    url: str | None = None
    project: str | None = None
    search: str | None = None
    since: str | None = None
    until: str | None = None
    trace_ids: Sequence[str] = ()
    limit: int | None = None
    page_size: int = 100


@dataclass
class Pulled:
    """What a pull did: the traces found, those stored now (``new``) and those the store held
    already (``known``), spans added, where it resumed from (Unix ns; None: not resumed), the
    backend (its URL without credentials) and the store."""

    source: str
    location: str
    store: str
    new: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    spans: int = 0
    resumed_from: int | None = None
    requests: int = 0
    """HTTP requests sent to the backend, retries included."""

    @property
    def trace_ids(self) -> list[str]:
        """Every trace the pull found, stored now or before, in the order found."""
        return [*self.known, *self.new]


Progress = Callable[[Pulled], None]
"""Told after each page of traces (the CLI prints a running count on long pulls)."""


def pull_key(options: PullOptions, source: Source) -> str:
    """What identifies a stream of pulls for resuming (no credential is part of it)."""
    return " ".join(
        [source.name, source.settings.describe(), options.project or "", options.search or ""]
    )


def pull(
    options: PullOptions,
    *,
    progress: Progress | None = None,
    source: Source | None = None,
) -> Pulled:
    """Pull the matching traces into the store (module docstring); ``source`` replaces the
    client :func:`~tracegrade.sources.open_source` would make (a test's).

    Raises:
        ConfigError: a bad option (unknown source, time, URL, missing credential).
        SourceError: the backend refused or failed; what was stored before stays stored.
        StoreError: the store cannot be opened or written.
    """
    source = source or open_source(options.source, options.url)
    try:
        with Store(options.db) as store:
            return _pull(options, source, store, progress)
    finally:
        source.close()


def _pull(options: PullOptions, source: Source, store: Store, progress: Progress | None) -> Pulled:
    key = pull_key(options, source)
    query = _query(options, store, key)
    result = Pulled(source.name, source.settings.describe(), store.location)
    if options.since is None and not options.trace_ids:
        result.resumed_from = query.since_unix_nano
    newest = 0
    for page in source.find(query):
        page = _within_limit(page, options.limit, len(result.trace_ids))
        if not page:
            break
        newest = max([newest, *(f.start_unix_nano for f in page)])
        _store_page(page, source, store, result)
        result.requests = getattr(getattr(source, "client", None), "requests", 0)
        if progress is not None:
            progress(result)
        if options.limit is not None and len(result.trace_ids) >= options.limit:
            break
    if not options.trace_ids and newest:
        pulls.record_pull(store, key, newest, len(result.new))
    return result


def _query(options: PullOptions, store: Store, key: str) -> PullQuery:
    since = parse_since(options.since)
    if since is None and not options.trace_ids:
        last = pulls.last_pull(store, key)
        since = last.until_unix_nano if last else None
    until = parse_since(options.until) if options.until else None
    return PullQuery(
        since_unix_nano=since,
        until_unix_nano=until,
        project=options.project,
        search=options.search,
        trace_ids=tuple(options.trace_ids),
        limit=options.limit,
        page_size=min(options.page_size, options.limit or options.page_size),
    )


def _within_limit(page: list[Found], limit: int | None, taken: int) -> list[Found]:
    return page if limit is None else page[: max(limit - taken, 0)]


def _store_page(page: list[Found], source: Source, store: Store, result: Pulled) -> None:
    """Fetch and store the traces of ``page`` the store does not hold yet."""
    ids = list(dict.fromkeys(f.trace_id for f in page))
    stored = set(store.trace_ids(trace_ids=ids))
    result.known += [t for t in ids if t in stored]
    fresh = [f for f in page if f.trace_id not in stored]
    if not fresh:
        return
    requests = source.fetch(fresh)
    if requests:
        result.spans += store.write(requests)[0]
    written = set(store.trace_ids(trace_ids=[f.trace_id for f in fresh]))
    result.new += [f.trace_id for f in fresh if f.trace_id in written]
