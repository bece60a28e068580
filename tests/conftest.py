"""Shared fixtures: every test gets its own trace store (TRACEGRADE_DB in a temp dir)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture(autouse=True)
def _isolated_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    db = tmp_path / "store" / "tracegrade.db"
    monkeypatch.setenv("TRACEGRADE_DB", str(db))
    monkeypatch.chdir(tmp_path)
    return db


@pytest.fixture(params=["sqlite", "postgresql"])
def store_location(request: pytest.FixtureRequest, tmp_path: Path):
    """A store location on each backend: a SQLite file, and a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield str(tmp_path / "backend.db")
        return
    from tests.support.postgres import fresh_database

    with fresh_database() as url:
        yield url


@pytest.fixture
def data() -> Path:
    return DATA


def pytest_report_header() -> list[str]:
    return [
        f"tracegrade test data: {DATA}",
        f"TRACEGRADE_REQUIRE_HARNESS={os.environ.get('TRACEGRADE_REQUIRE_HARNESS', '')}",
        "TRACEGRADE_TEST_POSTGRES_URL="
        + ("set" if os.environ.get("TRACEGRADE_TEST_POSTGRES_URL") else "unset"),
    ]
