"""A real Arize Phoenix server and a real MLflow tracking server, started once per test session
from the ``harness-backends`` venv (``python3 tests/harness/make_venvs.py backends``), on free
loopback ports, with their data in a temporary directory; stopped at the end of the session.

Both start together (Phoenix takes the longer, up to a minute on a loaded machine). A missing
venv skips the tests that need them with the command that makes it, or fails them when
``TRACEGRADE_REQUIRE_HARNESS=1`` (CI).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.harness_venvs import venv_python
from tests.support.ports import free_port

VENV = "backends"
START_TIMEOUT_S = 240.0


def backends_python() -> Path:
    """The backends venv's Python; skips (or fails, when required) without it."""
    return venv_python(VENV)


@dataclass
class Server:
    """One started backend: its base URL, process and log file."""

    name: str
    url: str
    process: subprocess.Popen[bytes]
    log: Path

    def wait(self, health: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited: {self.log.read_text()[-3000:]}")
            try:
                if httpx.get(self.url + health, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"{self.name} did not start: {self.log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()


def _start(name: str, command: list[str], env: dict[str, str], log: Path, url: str) -> Server:
    handle = log.open("wb")
    process = subprocess.Popen(
        command,
        env={**os.environ, **env},
        stdout=handle,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    return Server(name, url, process, log)


def start_servers(python: Path, root: Path) -> dict[str, Server]:
    """Start Phoenix and MLflow; wait until both answer."""
    bin_dir = python.parent
    phoenix_port, grpc_port, mlflow_port = free_port(), free_port(), free_port()
    (root / "phoenix").mkdir()
    servers = {
        "phoenix": _start(
            "Phoenix",
            [str(bin_dir / "phoenix"), "serve"],
            {
                "PHOENIX_HOST": "127.0.0.1",
                "PHOENIX_PORT": str(phoenix_port),
                "PHOENIX_GRPC_PORT": str(grpc_port),
                "PHOENIX_WORKING_DIR": str(root / "phoenix"),
                "PHOENIX_TELEMETRY_ENABLED": "false",
            },
            root / "phoenix.log",
            f"http://127.0.0.1:{phoenix_port}",
        ),
        "mlflow": _start(
            "MLflow",
            [
                str(bin_dir / "mlflow"),
                "server",
                "--host",
                "127.0.0.1",
                "--port",
                str(mlflow_port),
                "--workers",
                "1",
                "--backend-store-uri",
                f"sqlite:///{root / 'mlflow.db'}",
                "--default-artifact-root",
                str(root / "mlflow-artifacts"),
            ],
            {"MLFLOW_TRACKING_URI": ""},
            root / "mlflow.log",
            f"http://127.0.0.1:{mlflow_port}",
        ),
    }
    deadline = time.monotonic() + START_TIMEOUT_S
    try:
        servers["mlflow"].wait("/health", deadline)
        servers["phoenix"].wait("/healthz", deadline)
    except BaseException:
        for server in servers.values():
            server.stop()
        raise
    return servers
