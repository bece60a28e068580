"""Options shared by several commands, and the one way commands load traces."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from tracegrade import sources
from tracegrade.config import CONFIG_ENV
from tracegrade.dataset import mapping
from tracegrade.errors import ConfigError, ExitCode, InputError
from tracegrade.otlp.files import ReadOptions
from tracegrade.store.database import display, is_postgres
from tracegrade.store.traces import DB_ENV, Store, default_path

F = Callable[..., Any]


def _existing_directory(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    """A ``--db`` path given on the command line must be in an existing directory: a typo
    must not create a new directory and an empty store (the default location and
    ``$TRACEGRADE_DB`` still create theirs)."""
    source = ctx.get_parameter_source(param.name or "db")
    if value is None or is_postgres(value) or source is not ParameterSource.COMMANDLINE:
        return value
    directory = Path(value.removeprefix("sqlite:///")).parent
    if not directory.is_dir():
        raise click.BadParameter(
            f"directory {str(directory)!r} does not exist (create it, or give a store path in "
            "an existing directory)",
            ctx,
            param,
        )
    return value


def db_option(function: F) -> F:
    """``--db PATH|URL``: the trace store, a SQLite file or a ``postgresql://`` URL (default
    ``$TRACEGRADE_DB`` or ``.tracegrade/tracegrade.db``); a path given on the command line
    must be in an existing directory."""
    return click.option(
        "--db",
        "db",
        default=None,
        envvar=DB_ENV,
        show_envvar=True,
        metavar="PATH|URL",
        callback=_existing_directory,
        help="Trace store: a SQLite file or a postgresql:// URL "
        "(default .tracegrade/tracegrade.db).",
    )(function)


def messages_key_option(function: F) -> F:
    """``--messages-key KEY``: where transcripts keep their message list."""
    return click.option(
        "--messages-key",
        default="messages",
        show_default=True,
        help="Key of the message list in chat transcripts (tau-bench: traj).",
    )(function)


def files_argument(function: F) -> F:
    """``FILE...``: trace files or directories."""
    return click.argument("files", nargs=-1, type=click.Path(exists=True))(function)


_FILTER_OPTIONS = {"since_unix_nano": "--since", "limit": "--limit", "trace_ids": "--trace-id"}


def load(
    files: Sequence[str], db: str | None, messages_key: str, **store_filters: Any
) -> sources.Loaded:
    """Traces from ``files`` or, when none are given, from the store (``store_filters`` as
    :func:`tracegrade.sources.from_store`).

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
    **store_filters: Any,
) -> Iterator[list[Any]]:
    """:func:`load`, streamed: batches of traces (see :func:`tracegrade.sources.iter_from_files`),
    the input errors printed (stderr) and added to ``errors`` when the first batch is read
    (the files are indexed then: every error is known before scoring); ``workers`` processes
    normalise each batch; ``raw``: the decoded traces, not normalised (``TraceData``: the
    caller normalises them), with ``late`` some of a file's lines left for the caller to decode
    (see :func:`tracegrade.sources.iter_raw_from_files`). The caller checks that
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
        return _reporting(batches, errors)
    location = default_path(db)
    if not is_postgres(location) and not Path(location).exists():
        raise ConfigError(
            f"no trace store at {display(location)}: import traces (tracegrade import FILE) or "
            "receive them (tracegrade collect) first, give trace files, or pass --db"
        )
    return _stored_batches(db, raw, {**store_filters, "workers": workers})


def _reporting(batches: Iterator[list[Any]], errors: list[InputError]) -> Iterator[list[Any]]:
    first = next(batches, None)
    report_errors(errors)
    reported = len(errors)
    if first is not None:
        yield first
        yield from batches
    report_errors(errors[reported:])  # found by the read pass (a line corrupt mid-way)


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


def report_errors(errors: Sequence[InputError]) -> None:
    """Print input errors (``file:line: message``) to stderr."""
    for error in errors:
        click.echo(f"error: {error}", err=True)


def emit(
    items: Sequence[Any],
    as_json: bool,
    render: Callable[[Sequence[Any]], None],
    errors: Sequence[InputError],
) -> None:
    """Print ``items`` as JSON lines (their ``to_dict()``) or with ``render``, then the input
    errors; exit 2 when there were any."""
    if as_json:
        for item in items:
            click.echo(json.dumps(item.to_dict(), ensure_ascii=False))
    else:
        render(items)
    report_errors(errors)
    if errors:
        sys.exit(int(ExitCode.USAGE))


def load_mapping(path: str | None, case_ids: Collection[str] | None = None) -> dict[str, list[str]]:
    """The ``--mapping`` file (see :func:`tracegrade.mapping.load_mapping`); {} without one.

    Raises:
        ConfigError: a bad mapping file (the message names it).
    """
    return {} if path is None else mapping.load_mapping(path, case_ids)


def stacked(options: Sequence[Callable[[F], F]]) -> Callable[[F], F]:
    """One decorator applying ``options`` in order (the first is listed first in --help)."""

    def decorate(function: F) -> F:
        for option in reversed(options):
            function = option(function)
        return function

    return decorate


def config_option(function: F, *, help: str = "Config file (default ./tracegrade.yaml).") -> F:
    """``--config FILE`` (parameter ``config_path``, default ``$TRACEGRADE_CONFIG``)."""
    return click.option(
        "--config",
        "config_path",
        type=click.Path(dir_okay=False),
        envvar=CONFIG_ENV,
        help=help,
    )(function)


mapping_option = click.option(
    "--mapping",
    type=click.Path(exists=True, dir_okay=False),
    help="YAML/JSON: case id -> trace id(s).",
)
"""``--mapping FILE``: case id -> trace id(s) (read with :func:`load_mapping`)."""

tier_options = stacked(
    [
        click.option("--smoke", "tier", flag_value="smoke", help="Only cases of tier smoke."),
        click.option("--full", "tier", flag_value="full", help="Every case (default)."),
    ]
)
"""``--smoke`` / ``--full``: the dataset tier (parameter ``tier``, None without either)."""

pass_options = stacked(
    [
        click.option(
            "--threshold",
            type=click.FloatRange(0, 1),
            default=None,
            help="Pass score per case (default 0.7).",
        ),
        click.option(
            "--min-pass-rate",
            type=click.FloatRange(0, 1),
            default=1.0,
            show_default=True,
            help="Fraction of cases that must pass for exit code 0.",
        ),
    ]
)
"""``--threshold`` (0-1, per case) and ``--min-pass-rate`` (0-1, of cases) of ``score``/``run``."""

scorer_option = click.option(
    "--scorer", "scorer_refs", multiple=True, help="Extra scorer module:name (repeatable)."
)
"""``--scorer module:name`` (repeatable; parameter ``scorer_refs``)."""

report_options = stacked(
    [
        click.option(
            "--json",
            "json_path",
            type=click.Path(dir_okay=False),
            help="Write the run document (JSON).",
        ),
        click.option(
            "--junit", "junit_path", type=click.Path(dir_okay=False), help="Write JUnit XML."
        ),
        click.option(
            "--verbose", "-v", is_flag=True, help="Every case with every scorer's value and reason."
        ),
    ]
)
"""``--json FILE`` (the run document), ``--junit FILE`` and ``--verbose`` of ``score``/``run``."""
