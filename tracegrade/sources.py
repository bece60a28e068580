"""Where traces come from: files (any supported format) or the store, as normalised traces.

One entry point for every command that reads traces (``inspect``, ``lint``, ``score``):
:func:`from_files` decodes files directly (no import step; a ``traces.*`` file brings its
``logs.*`` sibling), :func:`from_store` reads what ``import`` or the receiver stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from tracegrade.errors import InputError
from tracegrade.normalize import normalize_all, normalize_trace
from tracegrade.otlp.files import ReadOptions, read_paths
from tracegrade.store.traces import Store
from tracegrade.trace import AgentTrace


@dataclass
class Loaded:
    """Normalised traces plus the input errors met while reading them."""

    traces: list[AgentTrace] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)


def from_files(paths: Iterable[str | Path], options: ReadOptions = ReadOptions()) -> Loaded:
    """Decode and normalise trace files (see :mod:`tracegrade.otlp.files`).

    Raises:
        InputError: a path does not exist.
    """
    payloads = read_paths(paths, options)
    return Loaded(normalize_all(payloads.spans(), payloads.log_records()), payloads.errors)


def from_store(
    store: Store,
    *,
    since_unix_nano: int | None = None,
    limit: int | None = None,
    trace_ids: Sequence[str] = (),
) -> Loaded:
    """Normalise stored traces, newest first (filters as :meth:`Store.trace_ids`)."""
    ids = store.trace_ids(since_unix_nano=since_unix_nano, limit=limit, trace_ids=trace_ids)
    return Loaded([normalize_trace(t) for t in store.load(ids) if t.spans])
