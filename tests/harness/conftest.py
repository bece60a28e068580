"""Fixture for tests that need real OTLP from real instrumentation libraries.

``run_instrumented(instrumentation, cassette, mode=None) -> pathlib.Path`` runs
``tests/harness/scenario.py`` with ``<repo>/.venvs/harness-<instrumentation>/bin/python``
(venvs made by ``python3 tests/harness/make_venvs.py``) and returns its output
directory: ``traces.binpb``, ``logs.binpb`` (only if log records were emitted),
``requests.json``, ``summary.json``. Results are cached per session.
``cassette`` is a path relative to ``tests/data/cassettes`` or absolute.

A missing or stale venv skips the test with the command that creates it, or
fails it when ``TRACEGRADE_REQUIRE_HARNESS=1``. A combination scenario.py
refuses (agent frameworks need a cassette holding one complete agent loop)
raises ``tests.harness.support.UnsupportedCombination``.
``TRACEGRADE_HARNESS_VENVS`` overrides the venv root.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.harness import support
from tests.harness.support import (
    INSTRUMENTATIONS,
    SCENARIO,
    UnsupportedCombination,
    cassette_path,
    venv_root,
)

SCENARIO_TIMEOUT = 300


def _require_venv(instrumentation: str) -> Path:
    if instrumentation not in INSTRUMENTATIONS:
        raise ValueError(f"unknown instrumentation {instrumentation!r}; known: {INSTRUMENTATIONS}")
    root = venv_root()
    ready, reason = support.make_venvs.venv_status(instrumentation, root)
    if not ready:
        cmd = f"python3 tests/harness/make_venvs.py {instrumentation}"
        if os.environ.get("TRACEGRADE_HARNESS_VENVS"):
            cmd += f" --root {root}"
        msg = f"harness venv not ready: {reason}; create it with: {cmd}"
        if os.environ.get("TRACEGRADE_REQUIRE_HARNESS") == "1":
            pytest.fail(msg + " (TRACEGRADE_REQUIRE_HARNESS=1)")
        pytest.skip(msg)
    return support.make_venvs.venv_python(instrumentation, root)


@pytest.fixture(scope="session")
def run_instrumented(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    cache: dict[tuple[str, str, str | None], Path | Exception] = {}

    def run(instrumentation: str, cassette: str | Path, mode: str | None = None) -> Path:
        path = cassette_path(cassette).resolve()
        python = _require_venv(instrumentation)
        key = (instrumentation, str(path), mode)
        if key in cache:
            hit = cache[key]
            if isinstance(hit, Exception):
                raise hit
            return hit
        out = tmp_path_factory.mktemp(f"harness-{instrumentation}-{path.stem[:40]}")
        cmd = [
            str(python),
            str(SCENARIO),
            "--instrumentation",
            instrumentation,
            "--cassette",
            str(path),
            "--out",
            str(out),
        ]
        if mode:
            cmd += ["--mode", mode]
        # A clean environment for the instrumentation: no inherited OTel/Traceloop settings.
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("OTEL_", "TRACELOOP_", "PYTHON"))
        }
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=SCENARIO_TIMEOUT, env=env, cwd=str(out)
        )
        if proc.returncode == 3:
            summary = json.loads((out / "summary.json").read_text())
            exc = UnsupportedCombination(summary.get("error") or proc.stderr.strip())
            cache[key] = exc
            raise exc
        if proc.returncode != 0:
            raise AssertionError(
                f"scenario.py failed (exit {proc.returncode}): {' '.join(cmd)}\n"
                f"--- stdout ---\n{proc.stdout[-4000:]}\n--- stderr ---\n{proc.stderr[-4000:]}"
            )
        cache[key] = out
        return out

    return run
