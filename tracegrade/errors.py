"""Exceptions raised by tracegrade, and the process exit codes.

Hierarchy::

    TracegradeError                 base of everything tracegrade raises on purpose
    ├── InputError                  a file or payload cannot be read (names file and line)
    │   ├── OtlpDecodeError         an OTLP protobuf or OTLP/JSON payload is malformed
    │   └── TranscriptError         a chat transcript does not have the expected shape
    ├── ConfigError                 bad configuration: option, env var, config file
    ├── DatasetError                a golden dataset is invalid (names file, case and field)
    └── StoreError                  the trace store cannot be opened or has a newer schema

Exceptions are for misuse and bad input only. A scorer that cannot run returns a score
saying why; it never raises into a run.
"""

from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """Process exit codes of the ``tracegrade`` command (see DESIGN.md)."""

    OK = 0
    """Passed: at or above threshold, no regression."""
    FAILED = 1
    """Below threshold, or a regression against the baseline."""
    USAGE = 2
    """Usage, configuration or input error, or no case matched a trace."""


class TracegradeError(Exception):
    """Base class of every error tracegrade raises on purpose."""

    exit_code: ExitCode = ExitCode.USAGE


class InputError(TracegradeError):
    """An input file or payload could not be read.

    ``source`` names the file (or ``"<payload>"``), ``line`` the 1-based line where that
    applies; both appear in the message.
    """

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None):
        self.source = source
        self.line = line
        self.detail = message
        where = source or ""
        if line is not None:
            where = f"{where}:{line}" if where else f"line {line}"
        super().__init__(f"{where}: {message}" if where else message)


class OtlpDecodeError(InputError):
    """An OTLP payload (protobuf or OTLP/JSON) is malformed."""


class TranscriptError(InputError):
    """A chat transcript record does not have the expected shape."""


class ConfigError(TracegradeError):
    """A configuration value (option, environment variable, config file) is invalid."""


class DatasetError(TracegradeError):
    """A golden dataset is invalid; the message names file, case and field."""


class StoreError(TracegradeError):
    """The trace store cannot be opened, or was written by a newer tracegrade."""
