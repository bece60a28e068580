"""``tracegrade collect`` as a real subprocess, for tests: started through the installed
console script (or ``tracegrade.cli.main`` when the script is missing), ready once it
prints its readiness line, with its stdout and stderr lines collected as they come."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Self

READY = re.compile(
    r"OTLP/gRPC (?P<host>[\w.:\[\]]+):(?P<grpc>\d+), OTLP/HTTP [\w.:\[\]]+:(?P<http>\d+), "
    r"store (?P<store>.+)$"
)
START_TIMEOUT_S = 30.0


def command() -> list[str]:
    """How to run ``tracegrade``: the console script next to this interpreter, if installed."""
    script = Path(sys.executable).with_name("tracegrade")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from tracegrade.cli import main; main()"]


class CollectProcess:
    """A running ``tracegrade collect --grpc-port 0 --http-port 0 --db DB ARGS...``.

    ``start()`` waits for the readiness line and parses the ports from it; ``stdout`` and
    ``stderr`` hold the lines read so far. Use as a context manager: the process is killed
    on exit if still running.
    """

    def __init__(self, db: str | Path, *args: str, env: Mapping[str, str] | None = None):
        self.argv = [
            *command(),
            "collect",
            "--grpc-port",
            "0",
            "--http-port",
            "0",
            "--db",
            str(db),
            *args,
        ]
        self.env = {**os.environ, **(env or {})}
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.process: subprocess.Popen[str] | None = None
        self.host = ""
        self.grpc_port = self.http_port = 0
        self.store = ""

    def start(self) -> Self:
        """Start and wait for the readiness line.

        Raises:
            AssertionError: the process exited or printed nothing ready in time.
        """
        self.process = subprocess.Popen(
            self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=self.env
        )
        for stream, lines in (
            (self.process.stdout, self.stdout),
            (self.process.stderr, self.stderr),
        ):
            threading.Thread(target=_pump, args=(stream, lines), daemon=True).start()
        match = self.wait_for_line(self.stdout, READY, START_TIMEOUT_S)
        self.host, self.store = match["host"], match["store"]
        self.grpc_port, self.http_port = int(match["grpc"]), int(match["http"])
        return self

    def wait_for_line(
        self, lines: list[str], pattern: re.Pattern[str], timeout_s: float = 10.0, count: int = 1
    ) -> re.Match[str]:
        """The ``count``-th line of ``lines`` matching ``pattern``, waiting up to ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            matches = [m for m in map(pattern.search, list(lines)) if m]
            if len(matches) >= count:
                return matches[count - 1]
            assert self.process is not None
            if self.process.poll() is not None and len(matches) < count:
                time.sleep(0.1)  # let the pump threads catch up with the last lines
                matches = [m for m in map(pattern.search, list(lines)) if m]
                assert len(matches) >= count, (
                    f"exited {self.process.returncode}: {self.stdout} {self.stderr}"
                )
                return matches[count - 1]
            assert time.monotonic() < deadline, (
                f"no line matching {pattern.pattern!r}: {self.stdout} {self.stderr}"
            )
            time.sleep(0.01)

    @property
    def http_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    @property
    def grpc_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.grpc_port}"

    def stop(self, signum: int = signal.SIGTERM, timeout_s: float = 15.0) -> int:
        """Send ``signum`` and wait for the exit; returns the exit code."""
        assert self.process is not None
        self.process.send_signal(signum)
        code = self.process.wait(timeout_s)
        time.sleep(0.05)  # the pump threads read the last lines
        return code

    def kill(self) -> None:
        """``kill -9``: no chance to flush or close anything."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)


def _pump(stream, lines: list[str]) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))
