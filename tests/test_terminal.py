"""Issue 27: the terminal report adapts to where it goes. In a terminal (a real pseudo-terminal
here) it fits the terminal's width; piped, as in a CI log, it is
:data:`~tracegrade.report.terminal.PIPE_WIDTH` columns wide instead of rich's fallback of 80; and
``COLUMNS`` sets the width in both cases."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from tracegrade.report import terminal

ROOT = Path(__file__).parents[1]
TRACES = ROOT / "datasets" / "tau-bench-otlp" / "openinference" / "traces.jsonl.gz"
COMMAND = [sys.executable, "-m", "tracegrade", "score", str(TRACES), "--no-save"]
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _env(columns: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env.pop("FORCE_COLOR", None)
    if columns is not None:
        env["COLUMNS"] = columns
    return env


def _widest(text: str) -> int:
    return max(len(line.rstrip()) for line in ANSI.sub("", text).splitlines())


def _piped(columns: str | None) -> str:
    done = subprocess.run(COMMAND, capture_output=True, text=True, env=_env(columns), timeout=60)
    assert "failed cases" in done.stdout, done.stderr
    return done.stdout


def _in_a_terminal(width: int, columns: str | None = None) -> str:
    """The command's output in a pseudo-terminal ``width`` columns wide."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, width, 0, 0))
    process = subprocess.Popen(
        COMMAND, stdout=follower, stderr=follower, stdin=subprocess.DEVNULL, env=_env(columns)
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # EIO: the terminal's other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    process.wait(timeout=60)
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace").replace("\r\n", "\n")


def test_piped_output_is_pipe_width_not_80():
    widest = _widest(_piped(None))
    assert 80 < widest <= terminal.PIPE_WIDTH


def test_columns_sets_the_width_of_piped_output():
    assert _widest(_piped("80")) <= 80
    assert 80 < _widest(_piped("400")) <= 400


def test_in_a_terminal_the_report_fits_the_terminal():
    output = _in_a_terminal(100)
    assert "failed cases" in output
    assert 80 < _widest(output) <= 100


def test_columns_wins_in_a_terminal():
    assert _widest(_in_a_terminal(120, columns="90")) <= 90


@pytest.mark.parametrize(("value", "expected"), [("132", True), ("", False), ("wide", False)])
def test_only_a_number_in_columns_counts(monkeypatch, value, expected):
    monkeypatch.setenv("COLUMNS", value)
    assert terminal.columns_set() is expected
