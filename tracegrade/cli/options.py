"""Options shared by several commands, and the one way commands load traces."""

from __future__ import annotations

import dataclasses
import functools
import getpass
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

import click
from click.core import ParameterSource

from tracegrade import environment
from tracegrade.collector.feedback_limits import PER_CLIENT_PER_MIN as FEEDBACK_PER_CLIENT_PER_MIN
from tracegrade.config import CONFIG_ENV
from tracegrade.errors import ExitCode, InputError, StoreError
from tracegrade.store.database import is_postgres
from tracegrade.store.feedback import DEFAULT_ATTRIBUTE as DEFAULT_FEEDBACK_ATTRIBUTE
from tracegrade.store.feedback import MAX_PER_TRACE as MAX_FEEDBACK_PER_TRACE
from tracegrade.store.traces import DB_ENV, default_path

F = Callable[..., Any]
T = TypeVar("T")


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


def require_store(db: str | None) -> str | None:
    """``db`` when the store it names (``--db``, else ``$TRACEGRADE_DB``, else the default
    location) exists: a command that only reads the store never creates one (a PostgreSQL URL
    is taken as existing; connecting says otherwise).

    Raises:
        StoreError: "no store at PATH" (exit 2) when the SQLite file does not exist.
    """
    location = default_path(db)
    if isinstance(location, Path) and not location.exists():
        raise StoreError(
            f"no store at {location}: this command only reads one; `tracegrade collect`, "
            "`import`, `score` and `run` create it (or give --db the store's path)"
        )
    return db


def _existing_store(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    return require_store(value)


@overload
def db_option(function: F, *, existing: bool = False) -> F: ...
@overload
def db_option(function: None = None, *, existing: bool = False) -> Callable[[F], F]: ...
def db_option(function: F | None = None, *, existing: bool = False) -> F | Callable[[F], F]:
    """``--db PATH|URL``: the trace store, a SQLite file or a ``postgresql://`` URL (default
    ``$TRACEGRADE_DB`` or ``.tracegrade/tracegrade.db``); a path given on the command line
    must be in an existing directory. ``existing=True`` (commands that only read the store)
    requires the store itself to exist (:func:`require_store`); used as ``@db_option`` or
    ``@db_option(existing=True)``."""

    def decorate(function: F) -> F:
        return click.option(
            "--db",
            "db",
            default=None,
            envvar=DB_ENV,
            show_envvar=True,
            metavar="PATH|URL",
            callback=_existing_store if existing else _existing_directory,
            help="Trace store: a SQLite file or a postgresql:// URL "
            "(default .tracegrade/tracegrade.db).",
        )(function)

    return decorate if function is None else decorate(function)


reading_db_option = db_option(existing=True)
"""``--db`` of a command that only reads the store: it must exist (:func:`require_store`)."""


_DATASET_FILE = click.Path(exists=True, dir_okay=False)


def dataset_ref(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The callback of a ``DATASET`` argument or ``--dataset`` option: a file that exists, or
    ``store:NAME``, a dataset kept in the store (the dashboard's case editor writes those;
    :mod:`tracegrade.pipeline.datasets`)."""
    if value is None or value.startswith("store:"):
        if value == "store:":
            raise click.BadParameter("name the stored dataset: store:NAME", ctx, param)
        return value
    return str(_DATASET_FILE.convert(value, param, ctx))


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


def options_of(cls: type[T], values: Mapping[str, Any], **renamed: str) -> T:
    """An options dataclass of a pipeline use case from a command's parameters: each
    parameter named as a field (or renamed: ``parameter="field"``) is passed, others ignored."""
    groups = {"judge", "gate", "output"}  # option groups: built by option_groups, not here
    fields = {f.name for f in dataclasses.fields(cls)} - groups  # type: ignore[arg-type]
    given = {renamed.get(k, k): v for k, v in values.items()}
    return cls(**{k: v for k, v in given.items() if k in fields})


def option_groups(params: Mapping[str, Any]) -> dict[str, Any]:
    """The option groups ``score`` and ``run`` share, from a command's parameters: the judge
    (``--judge/--no-judge``, ``--judge-model``, ...), the gate (``--threshold``,
    ``--baseline``, ...) and the outputs (``--json``, ``--junit``, ``--no-save``,
    ``--export-otlp``)."""
    from tracegrade.pipeline.gate import GateOptions, OutputOptions
    from tracegrade.pipeline.judging import JudgeOptions  # the pipeline: only for these two

    judge = JudgeOptions(  # by name: run's own --repeat and --concurrency are not the judge's
        mode=params.get("judge_mode"),
        model=params.get("judge_model"),
        concurrency=params.get("judge_concurrency", 4),
        repeat=params.get("judge_repeat", 1),
    )
    output = options_of(OutputOptions, {**params, "save": not params.get("no_save", False)})
    return {"judge": judge, "gate": options_of(GateOptions, params), "output": output}


reviewer_option = click.option(
    "--reviewer",
    envvar=environment.TRACEGRADE_REVIEWER,
    show_envvar=True,
    default=getpass.getuser,
    help="Who reviews (default: the login name).",
)
"""``--reviewer NAME`` of ``tracegrade review``."""


def parse_pairs(items: Sequence[str], option: str) -> dict[str, str]:
    """``KEY=VALUE`` strings (of ``option``) as a mapping.

    Raises:
        click.BadParameter: an item without ``=`` or without a key.
    """
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise click.BadParameter(f"{item!r}: use KEY=VALUE", param_hint=option)
        out[key.strip()] = value.strip()
    return out


def warn(warnings: Sequence[str]) -> None:
    """Print warnings (``warning: ...``) to stderr."""
    for text in warnings:
        click.echo(f"warning: {text}", err=True)


def report_errors(errors: Sequence[InputError]) -> None:
    """Print input errors (``file:line: message``) to stderr."""
    for error in errors:
        click.echo(f"error: {error}", err=True)


class ErrorReport:
    """An ``on_errors`` sink that prints each input error once, however often it is given
    (errors met while reading are printed then; the command's final call prints the rest)."""

    def __init__(self) -> None:
        self.printed: set[int] = set()

    def __call__(self, errors: Sequence[InputError]) -> None:
        report_errors([e for e in errors if id(e) not in self.printed])
        self.printed.update(id(e) for e in errors)


def emit(
    items: Sequence[Any],
    as_json: bool,
    render: Callable[[Sequence[Any]], None],
    errors: Sequence[InputError],
    *,
    reported: bool = False,
) -> None:
    """Print ``items`` as JSON lines (their ``to_dict()``) or with ``render``, then the input
    errors (unless they were ``reported`` as they were met); exit 2 when there were any."""
    if as_json:
        for item in items:
            click.echo(json.dumps(item.to_dict(), ensure_ascii=False))
    else:
        render(items)
    if not reported:
        report_errors(errors)
    if errors:
        sys.exit(int(ExitCode.USAGE))


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


feedback_attribute_option = click.option(
    "--feedback-attribute",
    envvar=environment.TRACEGRADE_FEEDBACK_ATTRIBUTE,
    show_envvar=True,
    default=DEFAULT_FEEDBACK_ATTRIBUTE,
    show_default=True,
    help="Span attribute read as end-user feedback ('' reads none; gen_ai.evaluation.result "
    "records and POST /v1/feedback are always read).",
)
"""``--feedback-attribute NAME`` (:mod:`tracegrade.store.feedback`)."""


def receiver_feedback_options(function: Callable[..., Any]) -> Callable[..., Any]:
    """``--feedback-attribute``, ``--feedback-per-trace`` and ``--feedback-rate`` of a receiver
    (:mod:`tracegrade.collector.feedback_limits`), passed to ``function`` as one ``feedback``
    dict of :class:`~tracegrade.collector.receiver.ReceiverConfig` fields."""

    @functools.wraps(function)
    def with_feedback(
        *args: Any, feedback_attribute: str, feedback_per_trace: int, feedback_rate: int, **kw: Any
    ) -> Any:
        feedback = {
            "feedback_attribute": feedback_attribute or None,
            "feedback_per_trace": feedback_per_trace,
            "feedback_rate": feedback_rate,
        }
        return function(*args, feedback=feedback, **kw)

    per_trace = click.option(
        "--feedback-per-trace",
        type=click.IntRange(1),
        default=MAX_FEEDBACK_PER_TRACE,
        show_default=True,
        help="Feedback records kept per trace (the first); POST /v1/feedback answers 429 beyond.",
    )
    rate = click.option(
        "--feedback-rate",
        type=click.IntRange(1),
        default=FEEDBACK_PER_CLIENT_PER_MIN,
        show_default=True,
        help="POST /v1/feedback requests a client (address) may send a minute; 429 beyond.",
    )
    return stacked([feedback_attribute_option, per_trace, rate])(with_feedback)


judge_options = stacked(
    [
        click.option(
            "--judge-model",
            envvar=environment.TRACEGRADE_JUDGE_MODEL,
            show_envvar=True,
            help="Judge model (default gpt-4o; a case's judge.model wins). Endpoint and key: "
            "TRACEGRADE_JUDGE_BASE_URL / TRACEGRADE_JUDGE_API_KEY, else OPENAI_BASE_URL / "
            "OPENAI_API_KEY.",
        ),
        click.option(
            "--judge-concurrency",
            type=click.IntRange(min=1),
            default=4,
            show_default=True,
            help="Judge calls in flight at once.",
        ),
        click.option(
            "--judge-repeat",
            type=click.IntRange(min=1),
            default=1,
            show_default=True,
            help="Verdicts per case; the score is their median.",
        ),
    ]
)
"""``--judge-model``, ``--judge-concurrency``, ``--judge-repeat``."""

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
        click.option(
            "--export-otlp",
            metavar="ENDPOINT",
            envvar=environment.TRACEGRADE_EXPORT_OTLP,
            help="Send each result as gen_ai.evaluation.result log records, and the run's (or "
            "--follow's windows') figures as metrics, to this OTLP endpoint, e.g. "
            "http://collector:4318 (OTEL_EXPORTER_OTLP_* settings apply).",
        ),
    ]
)
"""``--json FILE`` (the run document), ``--junit FILE``, ``--verbose`` and ``--export-otlp
ENDPOINT`` of ``score``/``run``."""
