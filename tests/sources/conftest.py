"""Fixtures of the backend tests: the real Phoenix and MLflow servers (started once per
session: :mod:`tests.sources.servers`) and the traces a real instrumented agent sent them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sources.servers import Server, backends_python, start_servers
from tests.support.harness_venvs import SCENARIO, cassette_path

WEATHER = "opentelemetry-python-contrib/test_chat_completion_tool_calls_with_content.yaml"


@pytest.fixture(scope="session")
def backend_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Server]]:
    """Phoenix and MLflow, running (module docstring of :mod:`tests.sources.servers`)."""
    python = backends_python()
    servers = start_servers(python, tmp_path_factory.mktemp("backends"))
    try:
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def run_weather_agent(out: Path, endpoint: str, headers: str = "") -> Path:
    """Run a real instrumented agent that sends its spans to ``endpoint`` (OTLP/HTTP, the
    OpenTelemetry SDK's own exporter, its standard variables) and writes the same spans to
    ``out/traces.binpb``: the harness's weather agent, instrumented by OpenInference's OpenAI
    instrumentation (in the backends venv), its model answering from a recorded cassette."""
    command = [
        str(backends_python()),
        str(SCENARIO),
        "--instrumentation",
        "openinference",
        "--cassette",
        str(cassette_path(WEATHER)),
        "--out",
        str(out),
    ]
    env = {
        **os.environ,
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": endpoint,
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": headers,
    }
    subprocess.run(command, check=True, capture_output=True, timeout=300, env=env)
    return out / "traces.binpb"
