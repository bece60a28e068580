"""``dataset build``: golden cases from real conversations (files or the store), appended
to or written as a dataset file (:mod:`tracegrade.curate` derives the cases)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tracegrade.curate.build import (
    BuildOptions,
    BuildReport,
    build_dataset,
    parse_where,
    read_existing,
    write_dataset,
)
from tracegrade.curate.derive import DeriveOptions
from tracegrade.errors import ConfigError, InputError
from tracegrade.otlp.files import ReadOptions
from tracegrade.pipeline import reading
from tracegrade.pipeline.reading import ErrorSink, parse_since
from tracegrade.store.traces import Store, default_path
from tracegrade.store.verdicts import judge_verdicts


@dataclass(frozen=True)
class DatasetBuildOptions:
    """What ``dataset build`` takes (as its command-line options name them): where the
    conversations come from, which are taken (``since``, ``where`` ``KEY=VALUE``, trace ids,
    ``sample``: a fraction or a count), how expectations are derived, the file written
    (an existing ``out`` is extended with ``append``, replaced with ``force``, else refused)."""

    files: Sequence[str]
    db: str | None
    messages_key: str
    out: str
    since: str | None = None
    where: Sequence[str] = ()
    trace_ids: Sequence[str] = ()
    sample: str | None = None
    exact_args: Sequence[str] = ()
    all_args: bool = False
    ignore_tools: Sequence[str] = ()
    redact: Sequence[str] = ()
    append: bool = False
    headroom: float = 2.0
    similarity: float = 90.0
    force: bool = False
    simulated_user: bool = False
    """Each conversation as a case with a simulated user (:mod:`tracegrade.curate.simulated`)."""


@dataclass
class BuiltDataset:
    """What was built: the report, the dataset's existing cases (``--append``), the file
    written, the input errors met."""

    report: BuildReport
    existing: list[dict[str, Any]]
    path: Path
    input_errors: list[InputError]


def _sample(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if number <= 0 or (number >= 1 and not number.is_integer()):
        raise ConfigError(f"--sample {value!r}: a fraction in (0, 1) or a count of conversations")
    return number


def _load(files: Sequence[str], db: str | None, messages_key: str, since_ns: int | None) -> Any:
    """(loaded traces, judge verdicts from stored runs, where they came from)."""
    if files:
        loaded = reading.from_files(files, ReadOptions(messages_key=messages_key))
        return loaded, {}, ", ".join(files)
    with Store(db) as store:
        loaded = reading.from_store(store, since_unix_nano=since_ns)
        verdicts = judge_verdicts(store, [t.trace_id for t in loaded.traces])
    return loaded, verdicts, f"the store {default_path(db)}"


def _check_out(path: Path, append: bool, force: bool) -> None:
    """A reviewed dataset is never overwritten by accident (see :func:`build`)."""
    if append and force:
        raise ConfigError("--append extends the dataset and --force replaces it: give one")
    if path.is_dir():
        raise ConfigError(f"--out {path}: is a directory; give a dataset file (.yaml)")
    if path.exists() and not (append or force):
        raise ConfigError(
            f"--out {path} exists: --append adds the new cases to it (keeping its cases and "
            "skipping known ones), --force replaces it"
        )


def build(options: DatasetBuildOptions, on_errors: ErrorSink = lambda errors: None) -> BuiltDataset:
    """Build the cases and write (or extend) the dataset file.

    Raises:
        ConfigError: no case built; a bad option value; ``out`` exists and neither
            ``append`` nor ``force`` was given (checked before any trace is read).
        DatasetError: ``--append`` to a file that is not a dataset.
    """
    build_options = BuildOptions(
        derive=DeriveOptions(
            exact_args=options.exact_args,
            all_args=options.all_args,
            ignore_tools=options.ignore_tools,
            headroom=options.headroom,
            simulated_user=options.simulated_user,
        ),
        where=parse_where(options.where),
        trace_ids=options.trace_ids,
        sample=_sample(options.sample),
        redact=options.redact,
        similarity=options.similarity,
    )
    since_ns = parse_since(options.since)
    _check_out(Path(options.out), options.append, options.force)
    loaded, verdicts, origin = _load(options.files, options.db, options.messages_key, since_ns)
    on_errors(loaded.errors)
    traces = [t for t in loaded.traces if since_ns is None or t.start_unix_nano >= since_ns]
    path = Path(options.out)
    document, existing = read_existing(path) if options.append and path.exists() else (None, [])
    report = build_dataset(traces, build_options, existing, verdicts)
    if not report.cases and not existing:
        raise ConfigError(
            f"no case built from {report.conversations} conversation(s) in {origin} "
            f"({report.selected} selected; check --since/--where/--trace-id/--sample)"
        )
    write_dataset(path, report.cases, document, origin)
    return BuiltDataset(report, existing, path, loaded.errors)
