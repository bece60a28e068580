"""The console the commands print their reports to, and how wide it is.

In a terminal, rich lays the report out to the terminal's width. When the output is not a
terminal (a pipe, a file, a CI log), rich would fall back to 80 columns and wrap each case's
reasons over many lines (the main job's report is ~700 lines at 80 columns); such output is
laid out :data:`PIPE_WIDTH` columns wide instead (~230 lines). :envvar:`COLUMNS` sets the
width in both cases, as it does for most command-line tools.
"""

from __future__ import annotations

import os

from rich.console import Console

from tracegrade.environment import COLUMNS

PIPE_WIDTH = 160
"""Columns of a report written to something that is not a terminal, without ``COLUMNS``."""


def columns_set() -> bool:
    """True when :envvar:`COLUMNS` holds a width (digits), which rich then uses."""
    return os.environ.get(COLUMNS, "").strip().isdigit()


def console(*, stderr: bool = False) -> Console:
    """A console on stdout (or stderr): the terminal's width in a terminal, else
    :data:`PIPE_WIDTH` columns; :envvar:`COLUMNS` wins in both cases. Never soft-wraps
    (a long line is folded at the width, not left to the terminal)."""
    terminal = Console(stderr=stderr).is_terminal
    width = None if terminal or columns_set() else PIPE_WIDTH
    return Console(stderr=stderr, width=width, soft_wrap=False)
