"""The one way to read traces: files or the store, whole or in batches, as the commands,
the dashboard and the Python API read them (:mod:`.sources` does the reading)."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

from tracegrade.dataset import mapping
from tracegrade.errors import ConfigError, InputError
from tracegrade.normalize import normalize_trace
from tracegrade.otlp.files import ReadOptions
from tracegrade.pipeline import sources
from tracegrade.store.database import display, is_postgres
from tracegrade.store.traces import Store, default_path
from tracegrade.trace import AgentTrace

ErrorSink = Callable[[Sequence[InputError]], None]
"""Told of input errors as they are found (the CLI prints them on stderr)."""


def _ignore(errors: Sequence[InputError]) -> None:
    del errors


_FILTER_OPTIONS = {"since_unix_nano": "--since", "limit": "--limit", "trace_ids": "--trace-id"}


def load(
    files: Sequence[str], db: str | None, messages_key: str, **store_filters: Any
) -> sources.Loaded:
    """Traces from ``files`` or, when none are given, from the store (``store_filters`` as
    :func:`tracegrade.pipeline.sources.from_store`).

    Raises:
        ConfigError: reading the store, the SQLite file does not exist (it is not created),
            or the store holds no trace (the message names the store and the filters).
    """
    if files:
        return sources.from_files(files, ReadOptions(messages_key=messages_key))
    location = default_path(db)
    if not is_postgres(location) and not Path(location).exists():
        raise ConfigError(
            f"no trace store at {display(location)}: import traces (tracegrade import FILE) or "
            "receive them (tracegrade collect) first, give trace files, or pass --db"
        )
    with Store(db) as store:
        loaded = sources.from_store(store, **store_filters)
    if not loaded.traces:
        filters = [_FILTER_OPTIONS.get(k, k) for k, v in store_filters.items() if v]
        raise ConfigError(
            f"no traces in the trace store {display(location)}"
            + (f" (check {', '.join(filters)})" if filters else "")
        )
    return loaded


def load_batches(
    files: Sequence[str],
    db: str | None,
    messages_key: str,
    errors: list[InputError] | None = None,
    workers: int = 1,
    *,
    raw: bool = False,
    late: sources.LateErrors | None = None,
    on_errors: ErrorSink = _ignore,
    **store_filters: Any,
) -> Iterator[list[Any]]:
    """:func:`load`, streamed: batches of traces (see
    :func:`tracegrade.pipeline.sources.iter_from_files`), the input errors given to
    ``on_errors`` and added to ``errors`` when the first batch is read
    (the files are indexed then: every error is known before scoring); ``workers`` processes
    normalise each batch; ``raw``: the decoded traces, not normalised (``TraceData``: the
    caller normalises them), with ``late`` some of a file's lines left for the caller to decode
    (see :func:`tracegrade.pipeline.sources.iter_raw_from_files`). The caller checks that
    some trace came (:func:`no_traces_error` says why none did).

    Raises:
        ConfigError: as :func:`load`, for a SQLite store that does not exist (at once).
    """
    if files:
        errors = [] if errors is None else errors
        options = ReadOptions(messages_key=messages_key)
        batches: Iterator[list[Any]] = (
            sources.iter_raw_from_files(files, options, errors=errors, late=late)
            if raw
            else sources.iter_from_files(files, options, errors=errors, workers=workers)
        )
        return _reporting(batches, errors, on_errors)
    location = default_path(db)
    if not is_postgres(location) and not Path(location).exists():
        raise ConfigError(
            f"no trace store at {display(location)}: import traces (tracegrade import FILE) or "
            "receive them (tracegrade collect) first, give trace files, or pass --db"
        )
    return _stored_batches(db, raw, {**store_filters, "workers": workers})


def _reporting(
    batches: Iterator[list[Any]], errors: list[InputError], on_errors: ErrorSink
) -> Iterator[list[Any]]:
    first = next(batches, None)
    on_errors(errors)
    reported = len(errors)
    if first is not None:
        yield first
        yield from batches
    on_errors(errors[reported:])  # found by the read pass (a line corrupt mid-way)


def _stored_batches(
    db: str | None, raw: bool, store_filters: dict[str, Any]
) -> Iterator[list[Any]]:
    with Store(db) as store:
        if raw:
            store_filters.pop("workers")
            yield from sources.iter_raw_from_store(store, **store_filters)
        else:
            yield from sources.iter_from_store(store, **store_filters)


def no_traces_error(files: Sequence[str], db: str | None, **store_filters: Any) -> ConfigError:
    """Why :func:`load_batches` gave no trace (the store and filters, as :func:`load`)."""
    if files:
        return ConfigError("no traces to score")
    filters = [_FILTER_OPTIONS.get(k, k) for k, v in store_filters.items() if v]
    return ConfigError(
        f"no traces in the trace store {display(default_path(db))}"
        + (f" (check {', '.join(filters)})" if filters else "")
    )


def load_mapping(path: str | None, case_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """The ``--mapping`` file (see :func:`tracegrade.mapping.load_mapping`); {} without one.

    Raises:
        ConfigError: a bad mapping file (the message names it).
    """
    return {} if path is None else mapping.load_mapping(path, case_ids)


def traces_by_id(store: Store, trace_ids: Sequence[str]) -> dict[str, AgentTrace]:
    """The stored traces ``trace_ids`` (those with spans), normalised, by trace id: the one
    way the dashboard, the follower and the comparisons read traces by id."""
    return {t.trace_id: normalize_trace(t) for t in store.load(list(trace_ids)) if t.spans}
