"""A fresh PostgreSQL database per test, on the real server `.ci/run` starts.

``TRACEGRADE_TEST_POSTGRES_URL`` is an admin URL (a role that may CREATE DATABASE). Each test
gets its own database (created, then dropped). Without the URL the PostgreSQL tests skip,
unless ``TRACEGRADE_REQUIRE_POSTGRES=1`` (set by ``.ci/run``), where they fail.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

import pytest

URL_ENV = "TRACEGRADE_TEST_POSTGRES_URL"
REQUIRE_ENV = "TRACEGRADE_REQUIRE_POSTGRES"


def admin_url() -> str:
    """The admin URL, or skip (fail when PostgreSQL is required)."""
    url = os.environ.get(URL_ENV)
    if not url:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {URL_ENV} is not set")
        pytest.skip(
            f"no PostgreSQL server ({URL_ENV} not set): start one with "
            f"`export {URL_ENV}=$(.ci/postgres start)` (Debian's postgresql package, a throwaway "
            "cluster on a free port; `.ci/postgres stop` ends it)"
        )
    return url


@contextmanager
def fresh_database() -> Iterator[str]:
    """Create an empty database; yields its URL; drops it afterwards."""
    import psycopg

    url = admin_url()
    name = f"tg_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield urlunsplit(urlsplit(url)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
