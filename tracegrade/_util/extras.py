"""Optional dependencies (pyproject's extras): what a feature needs beyond the base install,
and the one error that names the ``pip install`` line when it is missing.

The base install scores, runs, collects and compares; these libraries are behind extras:

- ``[stats]``: numpy, scipy, statsmodels: the paired Wilcoxon tests of a comparison
  (:mod:`tracegrade.compare.runs`) and Cohen's kappa with its interval (``agreement``,
  ``judge-check``);
- ``[charts]``: matplotlib: ``history --png``;
- ``[postgres]``: psycopg: a ``postgresql://`` store;
- ``[ui]``: Jinja2, argon2-cffi, python-multipart: the dashboard (``ui``, ``users``);
- ``[all]``: every one of them.
"""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType

from tracegrade.errors import TracegradeError

EXTRA_OF: dict[str, str] = {
    "numpy": "stats",
    "scipy": "stats",
    "statsmodels": "stats",
    "matplotlib": "charts",
    "psycopg": "postgres",
    "psycopg_binary": "postgres",
    "jinja2": "ui",
    "argon2": "ui",
    "multipart": "ui",
    "python_multipart": "ui",
}
"""Top-level module -> the extra that installs it."""


class MissingExtraError(TracegradeError):
    """A feature needs an optional dependency that is not installed (exit code 2); the
    message names the extra and its ``pip install`` line."""

    def __init__(self, module: str, extra: str, purpose: str | None = None) -> None:
        self.module, self.extra = module, extra
        what = f"{purpose} needs" if purpose else "this needs"
        super().__init__(
            f"{what} the [{extra}] extra ({module} is not installed): "
            f"pip install 'tracegrade[{extra}]'"
        )


def import_extra(module: str, purpose: str) -> ModuleType:
    """Import ``module`` (a dotted name whose top-level package is in :data:`EXTRA_OF`).

    Raises:
        MissingExtraError: the module's extra is not installed.
    """
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, purpose)
        if error is None:
            raise
        raise error from exc


def missing_extra(exc: ModuleNotFoundError, purpose: str | None = None) -> MissingExtraError | None:
    """The :class:`MissingExtraError` for a failed import of an extra's module, None when the
    missing module belongs to no extra (a real bug, to be raised as it is)."""
    top = (exc.name or "").split(".")[0]
    extra = EXTRA_OF.get(top)
    return None if extra is None else MissingExtraError(top, extra, purpose)


def extra_error(exc: ModuleNotFoundError, purpose: str) -> Exception:
    """What to raise for ``exc``, a failed import of an extra's library at the top of a module:
    the :class:`MissingExtraError` naming its extra, else ``exc`` itself. For::

        try:
            import jinja2
        except ModuleNotFoundError as exc:
            raise extra_error(exc, "the dashboard") from exc
    """
    return missing_extra(exc, purpose) or exc


def available(module: str) -> bool:
    """Whether ``module`` can be imported (its extra is installed), without importing it."""
    return importlib.util.find_spec(module) is not None
