"""Start or restart a service, for ``--revive-cmd`` in the revival tests.

``python tests/runner/restart_service.py PIDFILE -- COMMAND...`` stops the process whose pid
is in PIDFILE (SIGTERM, so it flushes its spans, then waits until it has exited), starts
COMMAND in a session of its own with its output in ``PIDFILE.log``, waits until that output
has a line starting with ``listening``, writes the new pid to PIDFILE and exits 0. Exits 1
(with the log) when the service ends before it listens or takes over 60 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def _gone(pid: int) -> bool:
    """True when the process has exited (a zombie nobody reaped has too)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def stop(pidfile: Path) -> None:
    """SIGTERM the process in ``pidfile`` and wait (up to 30 s) until it has exited."""
    if not pidfile.exists():
        return
    pid = int(pidfile.read_text())
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + 30
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)


def start(pidfile: Path, command: list[str]) -> int:
    """Start ``command`` detached and wait until it listens; 0 on success, else 1."""
    log = pidfile.with_name(pidfile.name + ".log")
    with log.open("w") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any(line.startswith("listening") for line in log.read_text().splitlines()):
            pidfile.write_text(str(process.pid))
            return 0
        if process.poll() is not None:
            break
        time.sleep(0.02)
    print(f"the service did not start:\n{log.read_text()}", file=sys.stderr)
    process.kill()
    return 1


def main(argv: list[str]) -> int:
    pidfile, separator, *command = argv
    if separator != "--" or not command:
        print("usage: restart_service.py PIDFILE -- COMMAND...", file=sys.stderr)
        return 2
    stop(Path(pidfile))
    return start(Path(pidfile), command)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
