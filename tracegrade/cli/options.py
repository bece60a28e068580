"""Options shared by several commands, and the one way commands load traces."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import yaml

from tracegrade import sources
from tracegrade.errors import ConfigError, ExitCode, InputError
from tracegrade.otlp.files import ReadOptions
from tracegrade.store.traces import DB_ENV, Store

F = Callable[..., Any]


def db_option(function: F) -> F:
    """``--db PATH|URL``: the trace store, a SQLite file or a ``postgresql://`` URL (default
    ``$TRACEGRADE_DB`` or ``.tracegrade/tracegrade.db``)."""
    return click.option(
        "--db",
        "db",
        default=None,
        envvar=DB_ENV,
        show_envvar=True,
        metavar="PATH|URL",
        help="Trace store: a SQLite file or a postgresql:// URL (default .tracegrade/tracegrade.db).",
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


def load(
    files: Sequence[str], db: str | None, messages_key: str, **store_filters: Any
) -> sources.Loaded:
    """Traces from ``files`` or, when none are given, from the store (``store_filters`` as
    :func:`tracegrade.sources.from_store`)."""
    if files:
        return sources.from_files(files, ReadOptions(messages_key=messages_key))
    with Store(db) as store:
        return sources.from_store(store, **store_filters)


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


def load_mapping(path: str | None) -> dict[str, list[str]]:
    """The ``--mapping`` file (YAML/JSON: case id -> trace id or ids); {} without one.

    Raises:
        ConfigError: the file cannot be read, is not YAML, or is not an object.
    """
    if path is None:
        return {}
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"--mapping {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"--mapping {path}: expected an object of case id -> trace id(s)")
    return {str(k): [v] if isinstance(v, str) else [str(i) for i in v] for k, v in data.items()}
