"""Fixtures of the scoring tests: the shipped configuration and hand-computable prices (the
trace and case builders are in tests/support/traces.py)."""

from __future__ import annotations

import pytest

from tests.support.traces import TEST_PRICES
from tracegrade.config import Config, Pricing, defaults


@pytest.fixture(scope="session")
def config() -> Config:
    """The shipped defaults (weights 0.4/0.4/0.2, threshold 0.7, performed counting)."""
    return defaults()


@pytest.fixture
def pricing() -> Pricing:
    return Pricing(dict(TEST_PRICES), read_on="2025-01-01")
