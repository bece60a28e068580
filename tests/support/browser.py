"""A real headless browser for the web tests: Debian's chromium driven by Playwright for
Python (Playwright's own browser download is not used), and ``tracegrade ui`` started as a
subprocess on a free port.

Without chromium or Playwright the browser tests skip, saying how to get them, unless
``TRACEGRADE_REQUIRE_BROWSER=1`` (set by ``.ci/run``), where they fail.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("TRACEGRADE_CHROMIUM", "/usr/bin/chromium")
REQUIRE_ENV = "TRACEGRADE_REQUIRE_BROWSER"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "out" / "screenshots"


def require_browser() -> None:
    """Skip (or fail under ``TRACEGRADE_REQUIRE_BROWSER=1``) without chromium or Playwright."""
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"chromium at {CHROMIUM} (apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("Playwright for Python (pip install -e '.[test]')")
    if not missing:
        return
    message = "browser tests need " + " and ".join(missing)
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{REQUIRE_ENV}=1 but {message}")
    pytest.skip(message)


@contextmanager
def ui_server(args: Sequence[str]) -> Iterator[str]:
    """``tracegrade ui ARGS --port 0`` in a subprocess; yields its base URL (no trailing /)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tracegrade", "ui", *args, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if "serving http://" not in line:
            process.kill()
            raise AssertionError(f"tracegrade ui did not start: {line}{process.stderr.read()}")
        yield line.split("serving ", 1)[1].strip().rstrip("/")
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def screenshot(page, name: str) -> Path:  # type: ignore[no-untyped-def]
    """Save a full-page screenshot under out/screenshots/ (look at them after a run)."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def copy_dataset(source: Path, target_dir: Path) -> Path:
    """A copy of a dataset for a server to edit."""
    target_dir.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(source, target_dir / source.name))
