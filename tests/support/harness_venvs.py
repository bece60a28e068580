"""The instrumentation harness (tests/harness/, run on its own in CI) as other test directories
use it: a harness venv's Python (skipped, or failed when ``TRACEGRADE_REQUIRE_HARNESS=1``, when
the venv is missing), the harness's scenario script and its recorded cassettes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.harness import make_venvs
from tests.harness.support import SCENARIO, cassette_path, venv_root

__all__ = ["SCENARIO", "cassette_path", "venv_python"]


def venv_python(name: str) -> Path:
    """The Python of harness venv ``name``; skips (or fails, when required) without it."""
    ready, reason = make_venvs.venv_status(name, venv_root())
    if not ready:
        message = (
            f"{name} venv not ready: {reason}; create it with: "
            f"python3 tests/harness/make_venvs.py {name}"
        )
        if os.environ.get("TRACEGRADE_REQUIRE_HARNESS") == "1":
            pytest.fail(message + " (TRACEGRADE_REQUIRE_HARNESS=1)")
        pytest.skip(message)
    return make_venvs.venv_python(name, venv_root())
